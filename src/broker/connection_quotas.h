#pragma once

// Kafka's max.connections, max.connections.per.ip and max.connections.per.ip.overrides:
// how many Kafka connections the broker holds at once, in all and from one address. A
// new connection beyond either is closed at once (Kafka closes one beyond the per-address
// limit too; beyond max.connections it leaves it in the accept backlog instead). The
// limits change at run time (dynamic broker configs) and bind the next connection;
// connections already open stay.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace sluice::broker {

struct connection_limit_settings {
    int64_t max = INT32_MAX;
    int64_t per_ip = INT32_MAX;
    std::map<std::string, int64_t> per_ip_overrides;  // by IP address
};

// "IP:N,IP:N" (an IPv6 address in brackets or bare: the count follows the last colon).
// errc::invalid_config says what is wrong.
result<std::map<std::string, int64_t>> parse_ip_overrides(std::string_view text);

// The address of a peer name "HOST:PORT" or "[v6]:PORT".
std::string peer_address(std::string_view peer);

class connection_quotas {
  public:
    void set(connection_limit_settings s) { _limits = std::move(s); }
    // Counts a new connection from `ip`, or says why it is refused (not counted).
    std::optional<std::string> admit(const std::string& ip);
    void release(const std::string& ip);
    int64_t open() const { return _open; }

  private:
    connection_limit_settings _limits;
    int64_t _open = 0;
    std::map<std::string, int64_t> _by_ip;
};

}  // namespace sluice::broker

#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

#include "net/log_throttle.h"

namespace sluice::net {

// What an accept loop does when accept() fails for want of descriptors or memory
// (EMFILE, ENFILE, ENOBUFS, ENOMEM): the connection stays pending and the listening
// socket readable, so retrying at once spins a core. It pauses accepting instead (the
// pending clients wait in the backlog until a descriptor frees) and logs once per
// interval, with the number of failures in between. One per listener.
class accept_backoff {
  public:
    // How long accepting pauses after such a failure.
    static constexpr std::chrono::milliseconds pause{100};
    static constexpr std::chrono::seconds log_interval{10};

    // `what` names the listener in log lines: "kafka 127.0.0.1:9092".
    explicit accept_backoff(std::string what) : _what(std::move(what)) {}

    static bool is_resource_error(int err);
    // After accept() failed with such an error.
    void failed(int err);
    // After accept() succeeded: a line (throttled too) once accepting works again.
    void succeeded();

  private:
    std::string _what;
    log_throttle _log{log_interval};
    uint64_t _failures = 0;  // since the last success
    uint64_t _unlogged = 0;  // failures since the last line about one
};

}  // namespace sluice::net

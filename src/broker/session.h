#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <span>
#include <string>

#include "common/types.h"
#include "net/connection.h"
#include "net/in_flight_bound.h"
#include "protocol/wire.h"
#include "security/authorizer.h"
#include "security/sasl.h"

namespace sluice::broker {

class broker;
struct listener_config;

// One client connection at the Kafka level: decodes request headers, dispatches to
// handlers through the API table, and sends responses in request order even when
// handlers finish out of order (acks=-1 produce, long-polling fetch). On a SASL listener
// it lets nothing but ApiVersions and the SASL exchange through until the client has
// authenticated.
class session : public std::enable_shared_from_this<session> {
public:
  session(broker& b, std::shared_ptr<net::connection> conn, size_t listener);

  void on_frame(std::span<uint8_t> frame);
  // An encoded response: bytes, with file slices to send at given positions.
  struct response {
      bytes head;
      std::vector<protocol::splice> splices;
      int16_t error = 0;  // the answer's top-level error code, for metrics
    };
    // Completes a reply slot; an empty response means "no response" (acks=0).
    void complete(uint64_t slot, response r);
    void close(const std::string& reason);

    bool closed() const { return _conn->closed(); }
    bool idle() const { return _slots.empty(); }
    const std::string& peer() const { return _conn->peer(); }
    const std::string& client_id() const { return _client_id; }
    size_t listener() const { return _listener; }
    const listener_config& listener_cfg() const;
    const security::principal& principal() const { return _principal; }

    // The SASL exchange (SaslHandshake, SaslAuthenticate; docs/security.md).
    enum class sasl_phase {
        none,        // not a SASL listener, or no exchange started
        tokens,      // after SaslHandshake v1: SaslAuthenticate requests carry tokens
        raw_tokens,  // after SaslHandshake v0: the next frames are bare tokens
        failed,      // closing after a failed login
    };
    sasl_phase phase() const { return _phase; }
    // Starts an exchange for `mechanism` (already checked to be enabled); v0 handshakes
    // are followed by bare tokens, v1 by SaslAuthenticate.
    void begin_sasl(const std::string& mechanism, int16_t handshake_version);
    struct sasl_outcome {
        security::sasl_server::step_result::outcome result =
            security::sasl_server::step_result::outcome::failure;
        std::string response;
        std::string error;        // for the client, on failure
        int64_t lifetime_ms = 0;  // on success: the session's lifetime, 0 unlimited
    };
    // One client token of the exchange started by begin_sasl().
    sasl_outcome sasl_step(bytes_view token);
    // After a failed login: read nothing more, close after the configured delay (the
    // answer goes out first).
    void fail_authentication();

  private:
    struct reply_slot {
        bool done = false;
        response frame;
        int16_t api = -1;  // for metrics: the request's API and arrival
        std::chrono::steady_clock::time_point started;
        size_t request_bytes = 0;
    };
    void send(response& r);
    // A slot for a request of `bytes` bytes; stops reading while the connection has too
    // many requests, or bytes of them, in flight (config::max_in_flight_per_connection),
    // or while the broker-wide bound says so (config::max_in_flight_bytes).
    uint64_t reserve(size_t bytes);
    // Pauses or resumes reading by both limits; it stays paused after a failed login.
    void update_reading();
    void send_unsupported_version(int16_t key, int16_t version, int32_t correlation_id,
                                  uint64_t slot);
    // Whether the API may run now: on a SASL listener only ApiVersions and the exchange
    // before login, or after the session expired.
    bool admitted(int16_t key);
    void on_raw_token(bytes_view frame);

    broker& _broker;
    std::shared_ptr<net::connection> _conn;
    size_t _listener;
    std::deque<reply_slot> _slots;
    uint64_t _head = 0;  // slot number of _slots.front()
    size_t _slot_bytes = 0;  // Invariant: the sum of _slots' request_bytes
    // At the connection's own limit: reading stops until both are below half.
    bool _over_own_limit = false;
    // Its share of the broker-wide bound. Invariant: holds _slot_bytes.
    net::in_flight_bound::account _in_flight;
    std::string _client_id;

    security::principal _principal;
    bool _principal_known = false;  // the TLS client certificate was looked at
    bool _authenticated = false;    // by SASL
    int64_t _expires_ms = 0;        // steady ms; 0: never
    sasl_phase _phase = sasl_phase::none;
    std::string _mechanism;
    std::unique_ptr<security::sasl_server> _sasl;
};

}  // namespace sluice::broker

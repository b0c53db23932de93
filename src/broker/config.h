#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "group/share/coordinator.h"
#include "group/types.h"
#include "net/listener.h"
#include "net/tls.h"
#include "security/authorizer.h"

namespace sluice::broker {

// Kafka's names for what a listener speaks (security.protocol on the client side).
enum class security_protocol { plaintext, ssl, sasl_plaintext, sasl_ssl };
std::string_view protocol_name(security_protocol p);

// An address announced in Metadata; every one reaches this same broker.
struct advertised_broker {
    int32_t node_id = 0;
    net::host_port address;
};

struct listener_config {
    security_protocol protocol = security_protocol::plaintext;
    net::host_port address{"127.0.0.1", 9092};
    // Addresses announced in Metadata to clients of this listener; each becomes its own
    // broker id. Empty: the bound address.
    std::vector<net::host_port> advertise;

    bool tls() const {
        return protocol == security_protocol::ssl || protocol == security_protocol::sasl_ssl;
    }
    bool sasl() const {
        return protocol == security_protocol::sasl_plaintext ||
               protocol == security_protocol::sasl_ssl;
    }
    // "SASL_SSL://127.0.0.1:9093"; a PLAINTEXT listener is its bare address.
    std::string to_string() const;
};
// "HOST:PORT" (PLAINTEXT) or "PROTOCOL://HOST:PORT".
result<listener_config> parse_listener(const std::string& text);

struct broker_config {
    std::filesystem::path data_dir = "data";
    std::vector<listener_config> listeners{listener_config{}};
    // TLS of the SASL_SSL listeners (and HTTPS, PostgreSQL): no client certificate is
    // asked for, as Kafka's ssl.client.auth does not apply to SASL_SSL. Null without a
    // certificate.
    std::shared_ptr<net::tls_context> tls;
    // TLS of the SSL listeners: asks for client certificates per --tls-client-auth (the
    // same context as `tls` when it is `none`).
    std::shared_ptr<net::tls_context> ssl_listener_tls;
    // TLS of HTTPS (--http https://...): asks for client certificates per
    // --http-tls-client-auth (the same context as `tls` when it is `none`).
    std::shared_ptr<net::tls_context> http_tls;
    net::tls_settings tls_settings;
    // Enabled SASL mechanisms, in the order announced.
    std::vector<std::string> sasl_mechanisms{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"};
    // Kafka's connections.max.reauth.ms: a SASL session's lifetime; 0: unlimited.
    int64_t sasl_session_lifetime_ms = 0;
    // Kafka's connection.failed.authentication.delay.ms: a failed login's connection
    // closes this long after the answer.
    int64_t failed_authentication_delay_ms = 1000;
    security::authz_mode authorization = security::authz_mode::permissive;
    // Whether some listener authenticates its clients (SASL, or SSL requiring client
    // certificates); the SQL endpoints then require a login too.
    bool authenticate = false;
    bool auto_create_topics = false;
    int32_t default_partitions = 1;
    // Broker-level overrides of topic config defaults (key -> value).
    std::map<std::string, std::string> topic_defaults;
    size_t max_request_bytes = 100 * 1024 * 1024;  // Kafka's socket.request.max.bytes
    // Kafka's queued.max.request.bytes: what the requests being read may hold together
    // (net::byte_budget; docs/operations.md).
    size_t queued_max_request_bytes = size_t{256} << 20;
    // A request holding part of that budget that receives no bytes for this long closes
    // its connection (net::connection::set_budget_stall_timeout); 0: never.
    int64_t request_stall_timeout_ms = 30'000;
    // Kafka's connections.max.idle.ms: a Kafka connection with no byte read or written
    // for this long is closed (net::connection::set_idle_timeout); 0: never.
    int64_t connections_max_idle_ms = 600'000;
    // Kafka's max.connections, max.connections.per.ip and max.connections.per.ip.overrides
    // (static values; connection_quotas.h): Kafka connections held at once.
    int32_t max_connections = INT32_MAX;
    int32_t max_connections_per_ip = INT32_MAX;
    std::string max_connections_per_ip_overrides;
    size_t max_open_files = 1024;
    // Requests one connection may have in flight (read and not yet answered), and the
    // bytes of those requests, before the broker stops reading from it; it reads again
    // once both are below half. librdkafka pipelines up to 1,000,000 requests by default,
    // so these bound memory. The count is high because librdkafka sends one request per
    // partition: a producer of many partitions whose requests each wait for a shared-mode
    // produce window (tens of ms) has hundreds in flight, and a lower count caps what one
    // connection carries at that count per window (docs/operations.md).
    size_t max_in_flight_per_connection = 4096;
    size_t max_in_flight_bytes_per_connection = size_t{256} << 20;
    // The bytes of requests in flight on all connections together (net::in_flight_bound):
    // past half of it, connections holding more than their share stop being read; at it,
    // all but those holding nothing. Four connections' worth of the per-connection bytes.
    size_t max_in_flight_bytes = size_t{1} << 30;
    // Kafka's max.incremental.fetch.session.cache.slots: fetch sessions held at once.
    size_t fetch_session_cache_slots = 1000;
    // Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS: how long a session is safe from
    // eviction by a larger one after its creation, and how long unused before any new
    // session may take its place.
    int64_t fetch_session_min_eviction_ms = 120'000;
    group::config groups;
    group::share::config share_groups;  // share groups (KIP-932)
    // offsets.retention.check.interval.ms: how often expired offsets are swept.
    int64_t offsets_retention_check_interval_ms = 600000;
    // log.retention.check.interval.ms: how often segments are deleted by retention.
    int64_t log_retention_check_interval_ms = 300000;
    // log.cleaner.backoff.ms: pause between compaction passes (Kafka's default).
    int64_t log_cleaner_backoff_ms = 15000;
    // transaction.max.timeout.ms: the longest transaction.timeout.ms InitProducerId accepts.
    int32_t transaction_max_timeout_ms = 900000;
    // transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka's default).
    int64_t transaction_abort_check_interval_ms = 10000;
    // transactional.id.expiration.ms (Kafka's default, 7 days): ids idle longer are
    // forgotten, checked at transaction_abort_check_interval_ms.
    int64_t transactional_id_expiration_ms = 604800000;
    // The transaction.version feature finalized in ApiVersions: 2 (Kafka 4.0's default,
    // KIP-890 part 2) or 1 (the original protocol; clients then never send EndTxn v5).
    int16_t transaction_version = 2;
};

}  // namespace sluice::broker

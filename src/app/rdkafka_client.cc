#include "app/rdkafka_client.h"

#include <fmt/format.h>

#include <mutex>
#include <optional>

namespace sluice::app {
namespace {

// A bounded wait for metadata: an unreachable broker fails the command.
constexpr int metadata_timeout_ms = 10000;
// One metadata attempt; between attempts the client's errors are read.
constexpr int metadata_attempt_ms = 250;

// Why the broker cannot be used, as librdkafka's error callback said: the first transport,
// TLS or SASL failure. A command has one client, so one record serves.
struct connection_failure {
    std::mutex lock;
    std::string reason;
    bool all_brokers_down = false;
};
connection_failure failure;

void on_error(rd_kafka_t*, int err, const char* reason, void*) {
    std::lock_guard g(failure.lock);
    switch (static_cast<rd_kafka_resp_err_t>(err)) {
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
        failure.all_brokers_down = true;
        break;
    case RD_KAFKA_RESP_ERR__AUTHENTICATION:
    case RD_KAFKA_RESP_ERR__SSL:
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__RESOLVE:
        if (failure.reason.empty()) failure.reason = reason;
        if (err == RD_KAFKA_RESP_ERR__AUTHENTICATION) failure.all_brokers_down = true;
        break;
    default:
        break;
    }
}

// The failure that ends waiting for the broker, if there is one yet.
std::optional<std::string> fatal_failure() {
    std::lock_guard g(failure.lock);
    if (!failure.all_brokers_down) return std::nullopt;
    return failure.reason.empty() ? std::string("cannot reach the broker") : failure.reason;
}

// librdkafka's log lines would repeat on stderr what on_error reports once.
void drop_log(const rd_kafka_t*, int, const char*, const char*) {}

std::vector<std::pair<std::string, std::string>> security_properties(const client_config& c) {
    using p = client_config::protocol;
    const char* proto = c.security == p::ssl              ? "SSL"
                        : c.security == p::sasl_plaintext ? "SASL_PLAINTEXT"
                        : c.security == p::sasl_ssl       ? "SASL_SSL"
                                                          : "PLAINTEXT";
    std::vector<std::pair<std::string, std::string>> out{{"security.protocol", proto}};
    if (c.sasl()) {
        out.emplace_back("sasl.mechanisms", c.sasl_mechanism);
        out.emplace_back("sasl.username", c.sasl_username);
        out.emplace_back("sasl.password", c.sasl_password);
    }
    if (!c.ssl_ca.empty()) out.emplace_back("ssl.ca.location", c.ssl_ca);
    if (!c.ssl_cert.empty()) out.emplace_back("ssl.certificate.location", c.ssl_cert);
    if (!c.ssl_key.empty()) out.emplace_back("ssl.key.location", c.ssl_key);
    return out;
}

}  // namespace

result<rd_kafka_handle> make_rd_kafka(
    rd_kafka_type_t type, const broker_flags& flags,
    const std::vector<std::pair<std::string, std::string>>& extra,
    const std::function<void(rd_kafka_conf_t*)>& prepare) {
    auto cfg = load_client_config(flags.client);
    if (!cfg) return cfg.err();
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    auto props = security_properties(*cfg);
    props.emplace_back("bootstrap.servers", flags.bootstrap);
    props.emplace_back("client.id", "sluice-cli");
    props.insert(props.end(), extra.begin(), extra.end());
    char err[512];
    for (const auto& [key, value] : props) {
        if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) !=
            RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(conf);
            return {errc::invalid_argument, fmt::format("{}: {}", key, err)};
        }
    }
    rd_kafka_conf_set_error_cb(conf, on_error);
    rd_kafka_conf_set_log_cb(conf, drop_log);
    if (prepare) prepare(conf);
    rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);  // owns conf on success
    if (!rk) {
        rd_kafka_conf_destroy(conf);
        return {errc::invalid_argument, err};
    }
    return rd_kafka_handle(rk);
}

result<int32_t> partition_count(rd_kafka_t* rk, const std::string& topic) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__TIMED_OUT;
    std::optional<std::string> fatal;
    for (int waited = 0; waited < metadata_timeout_ms && !fatal; waited += metadata_attempt_ms) {
        e = rd_kafka_metadata(rk, 0, t, &md, metadata_attempt_ms);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
        rd_kafka_poll(rk, 0);  // serves on_error
        fatal = fatal_failure();
    }
    rd_kafka_topic_destroy(t);
    if (fatal) return {errc::io_error, *fatal};
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return {errc::io_error, fmt::format("metadata from the broker: {}", rd_kafka_err2str(e))};
    result<int32_t> out{errc::not_found, fmt::format("topic '{}' does not exist", topic)};
    for (int i = 0; i < md->topic_cnt; ++i) {
        const auto& mt = md->topics[i];
        if (topic != mt.topic) continue;
        if (mt.err == RD_KAFKA_RESP_ERR_NO_ERROR && mt.partition_cnt > 0)
            out = mt.partition_cnt;
        else if (mt.err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART)
            out = {errc::io_error, fmt::format("topic '{}': {}", topic, rd_kafka_err2str(mt.err))};
    }
    rd_kafka_metadata_destroy(md);
    return out;
}

}  // namespace sluice::app

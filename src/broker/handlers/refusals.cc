#include <chrono>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"
#include "catalog/topic_name.h"
#include "net/log_throttle.h"

namespace sluice::broker {
namespace {

// A client retries a missing topic's Metadata, or the transaction coordinator, every
// few hundred milliseconds until its timeout: one line a minute says it all.
constexpr std::chrono::minutes repeat_interval{1};
// Topics or clients remembered for that; past it, new ones share one line a minute.
constexpr size_t max_remembered = 1024;

}  // namespace

const transactions_refusal& transactions_refused() {
    // CLUSTER_AUTHORIZATION_FAILED is the one code that both librdkafka and the Java
    // client treat as fatal at once on FindCoordinator for a transaction coordinator,
    // reporting the message with it: librdkafka retries every other code (but
    // TRANSACTIONAL_ID_AUTHORIZATION_FAILED) until its timeout, and the Java client
    // reports TRANSACTIONAL_ID_AUTHORIZATION_FAILED without the message (measured with
    // librdkafka 2.0.2 and kafka-clients 4.3.1). InitProducerId answers the same code (it
    // has no message field); a client gets there only past FindCoordinator.
    static const transactions_refusal r{
        protocol::error_code::cluster_authorization_failed,
        "transactions are not supported by this broker yet (Sluice): a producer without "
        "transactional.id works, idempotent or not (docs/compatibility.md#not-supported-yet)"};
    return r;
}

void log_transactions_refused(const request_context& ctx, std::string_view api,
                              const std::string& transactional_id) {
    static net::keyed_log_throttle throttle(repeat_interval, max_remembered);
    // By client id and host, not port: a client reconnects from new ports.
    if (!throttle.allow(ctx.sess->client_id() + client_host(ctx))) return;
    log_info("producer",
             "{}: {} for transactional id '{}' refused with {}: this broker has no "
             "transactions yet (logged once a minute per client)",
             ctx.client(), api, transactional_id,
             protocol::error_name(transactions_refused().code));
}

void log_unknown_topic(const request_context& ctx, std::string_view api, const std::string& topic) {
    // A name no topic can have is not quoted into the log (it could hold anything).
    if (ctx.b.config().auto_create_topics || !catalog::validate_topic_name(topic)) return;
    static net::keyed_log_throttle throttle(repeat_interval, max_remembered);
    if (!throttle.allow(topic)) return;
    log_info("topics",
             "{}: {} for topic '{}', which does not exist (UNKNOWN_TOPIC_OR_PARTITION; "
             "auto-creation is off): create it with `sluice topic create {}`, or start the "
             "broker with --auto-create-topics (logged once a minute per topic)",
             ctx.client(), api, topic, topic);
}

}  // namespace sluice::broker

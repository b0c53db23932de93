#include <chrono>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"
#include "catalog/topic_name.h"
#include "net/log_throttle.h"

namespace sluice::broker {
namespace {

// A client retries a missing topic's Metadata every few hundred milliseconds until its
// timeout: one line a minute says it all.
constexpr std::chrono::minutes repeat_interval{1};
// Topics or clients remembered for that; past it, new ones share one line a minute.
constexpr size_t max_remembered = 1024;

}  // namespace

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

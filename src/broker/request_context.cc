#include "broker/request_context.h"

#include "broker/access.h"
#include "broker/api_table.h"
#include "broker/broker.h"
#include "broker/session.h"
#include "common/endian.h"
#include "common/logging.h"

namespace sluice::broker {

std::string request_context::client() const {
    const auto& id = sess->client_id();
    return id.empty() ? sess->peer() : id + "@" + sess->peer();
}

const security::principal& request_context::principal() const {
    return sess->principal();
}

const std::vector<advertised_broker>& request_context::brokers() const {
    return b.brokers(sess->listener());
}

bool request_context::allowed_quiet(security::resource_kind kind, const std::string& name) const {
    auto act = required_action(static_cast<protocol::api_key>(header.api_key), kind);
    // An API without a rule for this kind of resource never asks; refuse, so that a
    // missing row in the table shows up as a denial rather than a hole.
    if (!act) return false;
    return b.access().allowed(principal(), *act, {kind, name});
}

bool request_context::allowed(security::resource_kind kind, const std::string& name) const {
    if (allowed_quiet(kind, name)) return true;
    auto act = required_action(static_cast<protocol::api_key>(header.api_key), kind);
    const api_def* api = find_api(header.api_key);
    log_info("security", "{} ({}): {} denied: {} on {}", principal().to_string(), client(),
             api ? api->name : "request",
             act ? security::action_name(*act) : std::string_view("(no rule)"),
             security::resource_name({kind, name}));
    return false;
}

bool request_context::may_create_topic(const std::string& name) const {
    using security::action;
    using security::resource_kind;
    auto& ac = b.access();
    if (ac.allowed(principal(), action::create, {resource_kind::cluster, {}}) ||
        ac.allowed(principal(), action::create, {resource_kind::topic, name}))
        return true;
    log_info("security",
             "{} ({}): creating topic '{}' denied: KafkaCreate on neither "
             "sluice:cluster nor sluice:topic:{}",
             principal().to_string(), client(), name, name);
    return false;
}

bytes request_context::begin_frame() const {
    bytes frame(4);  // size, patched in finish_frame
    protocol::writer w(frame);
    w.fixed<int32_t>(header.correlation_id);
    if (protocol::response_header_has_tags(header.api_key, header.api_version)) w.uvarint(0);
    return frame;
}

void request_context::finish_frame(bytes frame, std::vector<protocol::splice> splices) const {
    size_t total = frame.size();
    for (const auto& s : splices) total += s.slice.size;
    store_be<int32_t>(frame.data(), static_cast<int32_t>(total - 4));
    sess->complete(slot, {std::move(frame), std::move(splices)});
}

void request_context::respond_none() const { sess->complete(slot, {}); }

}  // namespace sluice::broker

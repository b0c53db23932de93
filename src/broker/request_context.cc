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

namespace {

// Whether the requester may touch the resource, by the action access_rules() gives `api`
// on its kind. An API without a rule for that kind never asks: refused, so that a
// missing row in the table shows up as a denial rather than a hole.
bool check(const request_context& ctx, protocol::api_key api, security::resource_kind kind,
           const std::string& name, bool log) {
    auto act = required_action(api, kind);
    if (act && ctx.b.access().allowed(ctx.principal(), *act, {kind, name})) return true;
    if (log) {
        const api_def* def = find_api(static_cast<int16_t>(api));
        log_info("security", "{} ({}): {} denied: {} on {}", ctx.principal().to_string(),
                 ctx.client(), def ? def->name : "request",
                 act ? security::action_name(*act) : std::string_view("(no rule)"),
                 security::resource_name({kind, name}));
    }
    return false;
}

}  // namespace

bool request_context::allowed_quiet(security::resource_kind kind, const std::string& name) const {
    return check(*this, static_cast<protocol::api_key>(header.api_key), kind, name, false);
}

bool request_context::allowed(security::resource_kind kind, const std::string& name) const {
    return check(*this, static_cast<protocol::api_key>(header.api_key), kind, name, true);
}

bool request_context::may_create_topic(const std::string& name) const {
    // CreateTopics' rules, whichever API creates (Metadata auto-creates too).
    using security::resource_kind;
    return check(*this, protocol::api_key::create_topics, resource_kind::cluster, {}, false) ||
           check(*this, protocol::api_key::create_topics, resource_kind::topic, name, true);
}

bytes request_context::begin_frame() const {
    bytes frame(4);  // size, patched in finish_frame
    protocol::writer w(frame);
    w.fixed<int32_t>(header.correlation_id);
    if (protocol::response_header_has_tags(header.api_key, header.api_version)) w.uvarint(0);
    return frame;
}

void request_context::finish_frame(bytes frame, std::vector<protocol::splice> splices,
                                   int16_t error) const {
    size_t total = frame.size();
    for (const auto& s : splices) total += s.slice.size;
    store_be<int32_t>(frame.data(), static_cast<int32_t>(total - 4));
    sess->complete(slot, {std::move(frame), std::move(splices), error});
}

void request_context::respond_none() const { sess->complete(slot, {}); }

}  // namespace sluice::broker

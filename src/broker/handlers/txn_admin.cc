#include <map>
#include <regex>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/txn_admin.h"

namespace sluice::broker {
namespace {

using protocol::error_code;

// State names Kafka knows that Sluice's coordinator never keeps (they exist only while a
// write is pending in Kafka's): a filter naming them matches nothing, but is not unknown.
bool kafka_only_state(const std::string& s) {
    return s == "Dead" || s == "PrepareEpochFence";
}

}  // namespace

// Each id's state from the transaction coordinator, with Describe on the id; the
// partitions of topics the principal may not describe are left out, as Kafka does.
void handle_describe_transactions(const request_context& ctx, request_body body) {
    protocol::describe_transactions_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::describe_transactions_response resp;
    for (const auto& id : req.transactional_ids) {
        auto& s = resp.transaction_states.emplace_back();
        s.transactional_id = id;
        if (!ctx.allowed(security::resource_kind::transactional_id, id)) {
            s.error_code = code(error_code::transactional_id_authorization_failed);
            continue;
        }
        if (!ctx.b.coordinates_txn(id)) {
            s.error_code = code(error_code::not_coordinator);
            continue;
        }
        ctx.b.txns().refresh(id);  // shared mode: as stored
        const txn::txn_metadata* t = ctx.b.txns().find(id);
        if (!t) {
            s.error_code = code(error_code::transactional_id_not_found);
            continue;
        }
        s.transaction_state = std::string(txn::state_name(t->state));
        s.transaction_timeout_ms = t->timeout_ms;
        s.transaction_start_time_ms = t->start_ms;
        s.producer_id = t->producer_id;
        s.producer_epoch = t->producer_epoch;
        std::map<std::string, std::vector<int32_t>> by_topic;
        for (const auto& tp : t->partitions) by_topic[tp.topic].push_back(tp.partition);
        for (auto& [topic, parts] : by_topic) {
            if (!ctx.allowed_quiet(security::resource_kind::topic, topic)) continue;
            s.topics.push_back({topic, std::move(parts)});
        }
    }
    ctx.respond(resp);
}

// The coordinator's ids that pass the filters (state names, producer ids, v1's
// duration, v2's id pattern, a whole-id match as Java's Pattern.matches) and that the
// principal may describe.
void handle_list_transactions(const request_context& ctx, request_body body) {
    protocol::list_transactions_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::list_transactions_response resp;
    txn::list_filter f;
    f.producer_ids = req.producer_id_filters;
    f.min_duration_ms = req.duration_filter;
    bool impossible = false;  // a filter naming only states no id can be in
    for (const auto& name : req.state_filters) {
        if (auto s = txn::parse_state(name))
            f.states.push_back(*s);
        else if (!kafka_only_state(name))
            resp.unknown_state_filters.push_back(name);
    }
    if (!req.state_filters.empty() && f.states.empty()) impossible = true;
    std::optional<std::regex> pattern;
    if (req.transactional_id_pattern && !req.transactional_id_pattern->empty()) {
        try {
            pattern.emplace(*req.transactional_id_pattern);
        } catch (const std::regex_error&) {
            resp.error_code = code(error_code::invalid_regular_expression);
            return ctx.respond(resp);
        }
    }
    if (!impossible) {
        ctx.b.txns().refresh_all();  // shared mode: the ids placed here, as stored
        for (const auto& t : ctx.b.txns().list(f)) {
            if (pattern && !std::regex_match(t.transactional_id, *pattern)) continue;
            if (!ctx.allowed_quiet(security::resource_kind::transactional_id, t.transactional_id))
                continue;
            resp.transaction_states.push_back(
                {t.transactional_id, t.producer_id, std::string(txn::state_name(t.state))});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

#include "broker/handlers/handlers.h"
#include "broker/handlers/share_common.h"

namespace sluice::broker {

using protocol::share_acknowledge_request;
using protocol::share_acknowledge_response;

void handle_share_acknowledge(const request_context& ctx, request_body body) {
    share_acknowledge_request req;
    if (!decode_request(ctx, body, req)) return;
    share_acknowledge_response resp;
    const std::string group = req.group_id.value_or("");
    resp.acquisition_lock_timeout_ms = ctx.b.share_groups().settings(group).record_lock_duration_ms;
    const std::string member = req.member_id.value_or("");
    if (!ctx.allowed(security::resource_kind::group, group)) {
        resp.error_code = code(protocol::error_code::group_authorization_failed);
        ctx.respond(resp);
        return;
    }
    // ShareAcknowledge uses the session ShareFetch opened; it adds no partitions.
    auto s = ctx.b.share_groups().use_session(group, member, req.share_session_epoch, {}, {});
    if (s.error != protocol::error_code::none || req.share_session_epoch == 0) {
        resp.error_code = code(s.error != protocol::error_code::none
                                   ? s.error
                                   : protocol::error_code::invalid_share_session_epoch);
        ctx.respond(resp);
        return;
    }
    for (const auto& [key, e] : apply_acks(ctx.b, group, member, req.topics)) {
        if (resp.responses.empty() || resp.responses.back().topic_id != key.first)
            resp.responses.push_back({key.first, {}});
        auto& p = resp.responses.back().partitions.emplace_back();
        p.partition_index = key.second;
        p.error_code = code(e);
        p.current_leader = {ctx.b.leader_for(key.second), 0};
    }
    if (req.share_session_epoch == -1) ctx.b.share_groups().close_session(group, member);
    ctx.respond(resp);
}

}  // namespace sluice::broker

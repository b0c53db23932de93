#include <memory>

#include "broker/handlers/handlers.h"
#include "broker/handlers/share_common.h"

namespace sluice::broker {

using protocol::share_acknowledge_request;
using protocol::share_acknowledge_response;

namespace {

// The acknowledgements to apply and their outcome, for share_work_queue.
struct ack_work {
    group::share::partition_work work;
    std::string member;
    std::vector<share_ack> acks;
    std::vector<group::share::tp> release;  // the closed session's (epoch -1)
    std::map<share_key, protocol::error_code> outcome;
};

}  // namespace

void handle_share_acknowledge(const request_context& ctx, request_body body) {
    share_acknowledge_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    share_acknowledge_response resp;
    const std::string group = req.group_id.value_or("");
    resp.acquisition_lock_timeout_ms = b.share_groups().settings(group).record_lock_duration_ms;
    const std::string member = req.member_id.value_or("");
    if (!ctx.allowed(security::resource_kind::group, group)) {
        resp.error_code = code(protocol::error_code::group_authorization_failed);
        ctx.respond(resp);
        return;
    }
    // ShareAcknowledge uses the session ShareFetch opened; it adds no partitions.
    auto s = b.share_groups().use_session(group, member, req.share_session_epoch, {}, {});
    if (s.error != protocol::error_code::none || req.share_session_epoch == 0) {
        resp.error_code = code(s.error != protocol::error_code::none
                                   ? s.error
                                   : protocol::error_code::invalid_share_session_epoch);
        ctx.respond(resp);
        return;
    }
    auto w = std::make_shared<ack_work>(
        ack_work{b.share_groups().work(group), member, resolve_acks(b, req.topics), {}, {}});
    if (req.share_session_epoch == -1) w->release = b.share_groups().end_session(group, member);
    b.share_work().run(
        group, member,
        [w] {
            w->outcome = apply_acks(w->work, w->member, w->acks);
            w->work.release(w->member, w->release);
        },
        [ctx, w, resp = std::move(resp)]() mutable {
            for (const auto& [key, e] : w->outcome) {
                if (resp.responses.empty() || resp.responses.back().topic_id != key.first)
                    resp.responses.push_back({key.first, {}});
                auto& p = resp.responses.back().partitions.emplace_back();
                p.partition_index = key.second;
                p.error_code = code(e);
                p.current_leader = {ctx.b.leader_for(key.second), 0};
            }
            ctx.respond(resp);
        });
}

}  // namespace sluice::broker

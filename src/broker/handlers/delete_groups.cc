#include "protocol/messages/delete_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

using protocol::error_code;

void handle_delete_groups(const request_context& ctx, request_body body) {
    protocol::delete_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp = std::make_shared<protocol::delete_groups_response>();
    std::vector<size_t> deleting;  // indexes into resp->results
    for (const auto& id : req.groups_names) {
        auto& consumer = b.consumer_groups();
        error_code e = id.empty() ? (ctx.allowed(security::resource_kind::group, id)
                                         ? error_code::invalid_group_id
                                         : error_code::group_authorization_failed)
                                  : group_refusal(ctx, id);
        // A share group's state is its share-partitions (Admin.deleteShareGroups).
        if (e == error_code::none && b.share_groups().is_share_group(id)) {
            resp->results.push_back({id, code(b.share_groups().delete_group(id))});
            continue;
        }
        if (e == error_code::none)
            e = consumer.has_members(id)         ? error_code::non_empty_group
                : consumer.is_consumer_group(id) ? error_code::none
                                                 : b.groups().check_delete_group(id);
        resp->results.push_back({id, code(e)});
        if (e == error_code::none) deleting.push_back(resp->results.size() - 1);
    }
    if (deleting.empty()) return ctx.respond(*resp);
    // One write per group, so that each learns its own outcome (in shared mode another
    // broker may have taken one of them over); the offset writer still commits those
    // queued together in one transaction.
    auto left = std::make_shared<size_t>(deleting.size());
    for (size_t i : deleting) {
        catalog::stored_offset row;
        row.group_id = resp->results[i].group_id;
        std::vector<catalog::offset_write> writes;
        writes.push_back({catalog::offset_write::kind::erase_group, std::move(row)});
        b.store_offsets(std::move(writes), [ctx, resp, left, i](const result<void>& r) {
            auto& res = resp->results[i];
            if (r) {
                ctx.b.groups().delete_group(res.group_id);
                ctx.b.consumer_groups().erase_group(res.group_id);
                log_info("group", "{}: deleted group '{}'", ctx.client(), res.group_id);
            } else {
                res.error_code = code(offset_write_error(r.err()));
            }
            if (--*left == 0) ctx.respond(*resp);
        });
    }
}

}  // namespace sluice::broker

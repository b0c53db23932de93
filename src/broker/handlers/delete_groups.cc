#include "protocol/messages/delete_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/share_common.h"

namespace sluice::broker {

using protocol::error_code;

void handle_delete_groups(const request_context& ctx, request_body body) {
    protocol::delete_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto resp = std::make_shared<protocol::delete_groups_response>();
    // Answered once the share groups' state is erased and the others' rows are written.
    auto all = std::make_shared<share_calls>([ctx, resp] { ctx.respond(*resp); });
    std::vector<size_t> deleting;  // the results of the classic and consumer groups to write
    for (const auto& id : req.groups_names) {
        auto& consumer = b.consumer_groups();
        error_code e = id.empty() ? (ctx.allowed(security::resource_kind::group, id)
                                         ? error_code::invalid_group_id
                                         : error_code::group_authorization_failed)
                                  : group_refusal(ctx, id);
        const size_t i = resp->results.size();
        resp->results.push_back({id, code(e)});
        // A share group's state is its share-partitions (Admin.deleteShareGroups).
        if (e == error_code::none && b.share_groups().is_share_group(id)) {
            all->add();
            b.share_groups().delete_group(id, [resp, i, all](error_code outcome) {
                resp->results[i].error_code = code(outcome);
                all->finish();
            });
            continue;
        }
        if (e == error_code::none)
            e = consumer.has_members(id)         ? error_code::non_empty_group
                : consumer.is_consumer_group(id) ? error_code::none
                                                 : b.groups().check_delete_group(id);
        resp->results[i].error_code = code(e);
        if (e == error_code::none) deleting.push_back(i);
    }
    // One write per group, so that each learns its own outcome (in shared mode another
    // broker may have taken one of them over); the offset writer still commits those
    // queued together in one transaction.
    for (size_t i : deleting) {
        catalog::stored_offset row;
        row.group_id = resp->results[i].group_id;
        std::vector<catalog::offset_write> writes;
        writes.push_back({catalog::offset_write::kind::erase_group, std::move(row)});
        all->add();
        b.store_offsets(std::move(writes), [ctx, resp, all, i](const result<void>& r) {
            auto& res = resp->results[i];
            if (r) {
                ctx.b.groups().delete_group(res.group_id);
                ctx.b.consumer_groups().erase_group(res.group_id);
                log_info("group", "{}: deleted group '{}'", ctx.client(), res.group_id);
            } else {
                res.error_code = code(offset_write_error(r.err()));
            }
            all->finish();
        });
    }
    all->finish();
}

}  // namespace sluice::broker

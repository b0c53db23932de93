#include "protocol/messages/offset_delete.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

using protocol::error_code;

void handle_offset_delete(const request_context& ctx, request_body body) {
    protocol::offset_delete_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    std::vector<topic_partition> tps;
    for (const auto& t : req.topics)
        for (const auto& p : t.partitions) tps.push_back({t.name, p.partition_index});
    std::vector<error_code> per;
    auto resp = std::make_shared<protocol::offset_delete_response>();
    error_code e = group_refusal(ctx, req.group_id);
    if (e == error_code::none) e = b.groups().check_offset_delete(req.group_id, tps, per);
    resp->error_code = code(e);
    if (e != error_code::none) return ctx.respond(*resp);

    std::vector<catalog::offset_write> writes;
    std::vector<topic_partition> erased;
    size_t i = 0;
    for (const auto& t : req.topics) {
        auto& ot = resp->topics.emplace_back();
        ot.name = t.name;
        const topic_state* ts = b.topics().find(t.name);
        const bool denied = !ctx.allowed(security::resource_kind::topic, t.name);
        for (const auto& p : t.partitions) {
            error_code pe = denied ? error_code::topic_authorization_failed : per[i];
            ++i;
            if (pe == error_code::none &&
                (!ts || p.partition_index < 0 || p.partition_index >= ts->info.partitions))
                pe = error_code::unknown_topic_or_partition;
            ot.partitions.push_back({p.partition_index, code(pe)});
            if (pe != error_code::none) continue;
            catalog::stored_offset row;
            row.group_id = req.group_id;
            row.topic = t.name;
            row.partition = p.partition_index;
            writes.push_back({catalog::offset_write::kind::erase, std::move(row)});
            erased.push_back({t.name, p.partition_index});
        }
    }
    if (writes.empty()) return ctx.respond(*resp);
    b.store_offsets(std::move(writes), [ctx, resp, group_id = req.group_id,
                                        erased = std::move(erased)](const result<void>& r) {
        if (r) {
            ctx.b.groups().erase_offsets(group_id, erased);
        } else {
            resp->error_code = code(offset_write_error(r.err()));
            resp->topics.clear();
        }
        ctx.respond(*resp);
    });
}

}  // namespace sluice::broker

#include "protocol/messages/list_groups.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "common/ascii.h"

#include <algorithm>

namespace sluice::broker {

void handle_list_groups(const request_context& ctx, request_body body) {
    protocol::list_groups_request req;
    if (!decode_request(ctx, body, req)) return;
    // Kafka matches state and type names case-insensitively; an unknown name matches
    // nothing. Classic groups have classic states, consumer groups (KIP-848) theirs.
    auto wanted = [](const std::vector<std::string>& filter, std::string_view v) {
        return filter.empty() || std::any_of(filter.begin(), filter.end(),
                                             [&](const std::string& f) { return iequals(f, v); });
    };
    protocol::list_groups_response resp;
    // Describe on the cluster lists every group; otherwise those the principal may
    // describe.
    const bool all = ctx.allowed_quiet(security::resource_kind::cluster);
    auto visible = [&](const std::string& id) {
        return all || ctx.allowed_quiet(security::resource_kind::group, id);
    };
    auto& consumer = ctx.b.consumer_groups();
    if (wanted(req.types_filter, "consumer")) {
        for (const auto& g : consumer.list()) {
            if (!wanted(req.states_filter, g.state) || !visible(g.group_id)) continue;
            resp.groups.push_back({g.group_id, "consumer", g.state, "consumer"});
        }
    }
    if (wanted(req.types_filter, "classic")) {
        for (const auto& g : ctx.b.groups().list()) {
            // The offsets of a consumer group are kept with the classic groups' offsets.
            if (consumer.is_consumer_group(g.group_id)) continue;
            std::string state(group::state_name(g.state));
            if (!wanted(req.states_filter, state) || !visible(g.group_id)) continue;
            resp.groups.push_back({g.group_id, g.protocol_type, std::move(state), "classic"});
        }
    }
    if (wanted(req.types_filter, "share")) {
        auto& share = ctx.b.share_groups();
        for (const auto& id : share.list()) {
            auto d = share.describe(id);
            if (!d || !wanted(req.states_filter, d->state) || !visible(id)) continue;
            resp.groups.push_back({id, "share", d->state, "share"});
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

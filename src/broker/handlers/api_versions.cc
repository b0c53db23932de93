#include "broker/api_table.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/api_versions.h"

namespace sluice::broker {

void handle_api_versions(const request_context& ctx, request_body body) {
    protocol::api_versions_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::api_versions_response resp;
    for (const auto& a : supported_apis())
        resp.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
    // group.version 1: the consumer rebalance protocol (KIP-848) is on, which clients
    // such as franz-go look for before they use ConsumerGroupHeartbeat. Finalized once
    // and for all in this single-broker cluster, so the epoch never moves.
    resp.supported_features.push_back({"group.version", 0, 1});
    resp.finalized_features_epoch = 1;
    resp.finalized_features.push_back({"group.version", 1, 1});
    ctx.respond(resp);
}

}  // namespace sluice::broker

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/describe_cluster.h"

namespace sluice::broker {

void handle_describe_cluster(const request_context& ctx, request_body body) {
    protocol::describe_cluster_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::describe_cluster_response resp;
    resp.endpoint_type = req.endpoint_type;
    resp.cluster_id = ctx.b.cluster_id();
    // As Kafka: any client may ask (Connect workers and AdminClient.describeCluster() do,
    // for the cluster id); only the authorized operations depend on KafkaDescribe.
    if (req.endpoint_type != 1) {
        // Controllers are not a separate role here; only broker endpoints exist.
        resp.error_code = code(protocol::error_code::invalid_request);
        resp.error_message = "only endpoint type 1 (brokers) is served";
    } else {
        resp.controller_id = ctx.brokers().front().node_id;
        if (req.include_cluster_authorized_operations)
            resp.cluster_authorized_operations =
                authorized_operations(ctx, {security::resource_kind::cluster, {}});
        for (const auto& b : ctx.brokers())
            resp.brokers.push_back({b.node_id, b.address.host, b.address.port, std::nullopt});
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

#include "protocol/messages/api_versions.h"
#include "broker/api_table.h"
#include "broker/broker.h"
#include "broker/handlers/handlers.h"

namespace sluice::broker {

void handle_api_versions(const request_context& ctx, request_body body) {
    protocol::api_versions_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::api_versions_response resp;
    const bool shared = ctx.b.shared();
    for (const auto& a : supported_apis())
        if (!shared || served_in_shared_mode(a.key))
            resp.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
    // KIP-584 features. transaction.version 2 (KIP-890 part 2) is what a Kafka 4 client
    // needs to use EndTxn v5 and Produce v12; --transaction-version 1 turns it down.
    // group.version 1: the consumer rebalance protocol (KIP-848) is on, which clients such
    // as franz-go look for before they use ConsumerGroupHeartbeat. Finalized once and for
    // all in this single-broker cluster, so the epoch never moves. As Kafka, v0-3 leave
    // out supported features whose minimum is 0 (KAFKA-17011). share.version 1: share
    // groups (KIP-932) are on; KafkaShareConsumer refuses a broker without it.
    const int16_t tv = ctx.b.config().transaction_version;
    if (ctx.version() >= 4) {
        resp.supported_features.push_back({"group.version", 0, 1});
        resp.supported_features.push_back({"share.version", 0, 1});
        resp.supported_features.push_back({"transaction.version", 0, 2});
    }
    resp.finalized_features_epoch = 1;
    resp.finalized_features.push_back({"group.version", 1, 1});
    resp.finalized_features.push_back({"share.version", 1, 1});
    resp.finalized_features.push_back({"transaction.version", tv, tv});
    ctx.respond(resp);
}

}  // namespace sluice::broker

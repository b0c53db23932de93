#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/metadata.h"

namespace sluice::broker {
namespace {

using protocol::metadata_response;

// Authorized operations are answered only when asked for (v8+); INT32_MIN otherwise.
metadata_response::topic describe(const request_context& ctx, const topic_state& t,
                                  bool with_operations) {
    const broker& b = ctx.b;
    metadata_response::topic out;
    if (with_operations)
        out.topic_authorized_operations =
            authorized_operations(ctx, {security::resource_kind::topic, t.info.name});
    out.name = t.info.name;
    out.topic_id = t.info.id;
    out.is_internal = false;
    out.partitions.reserve(static_cast<size_t>(t.info.partitions));
    for (int32_t p = 0; p < t.info.partitions; ++p) {
        metadata_response::partition mp;
        mp.partition_index = p;
        mp.leader_id = b.leader_for(t, p);
        mp.leader_epoch = 0;
        mp.replica_nodes = {mp.leader_id};
        mp.isr_nodes = {mp.leader_id};
        out.partitions.push_back(std::move(mp));
    }
    return out;
}

// An error entry carries authorized operations too when they were asked for: a client
// that decodes the field whatever the error (kafka-python's admin client) must not meet
// INT32_MIN there. They are the principal's on the name asked for, known or not (Kafka
// answers them for a topic it does not have), and none when only an id was given.
metadata_response::topic topic_error(const request_context& ctx, bool with_operations,
                                     std::optional<std::string> name, protocol::uuid id,
                                     protocol::error_code e) {
    metadata_response::topic out;
    if (with_operations)
        out.topic_authorized_operations =
            name ? authorized_operations(ctx, {security::resource_kind::topic, *name}) : 0;
    out.name = std::move(name);
    out.topic_id = id;
    out.error_code = code(e);
    return out;
}

}  // namespace

void handle_metadata(const request_context& ctx, request_body body) {
    protocol::metadata_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    metadata_response resp;
    for (const auto& br : ctx.brokers())
        resp.brokers.push_back({br.node_id, br.address.host, br.address.port, std::nullopt});
    resp.cluster_id = b.cluster_id();
    resp.controller_id = ctx.brokers().front().node_id;
    using security::resource_kind;
    const bool with_ops = req.include_topic_authorized_operations;
    // Asked for in v8-v10 only (the field exists there); v11+ moved it to DescribeCluster.
    if (req.include_cluster_authorized_operations)
        resp.cluster_authorized_operations = authorized_operations(ctx, {resource_kind::cluster, {}});

    // v0: an empty list means every topic; v1+: null does.
    bool all = !req.topics || (ctx.version() == 0 && req.topics->empty());
    if (all) {
        // Only the topics the principal may describe, as Kafka does.
        for (const auto* t : b.topics().all())
            if (ctx.allowed_quiet(resource_kind::topic, t->info.name))
                resp.topics.push_back(describe(ctx, *t, with_ops));
        ctx.respond(resp);
        return;
    }
    // Auto-creation needs both the broker option and the client's consent (v4+).
    bool may_create = b.config().auto_create_topics && req.allow_auto_topic_creation;
    for (const auto& rt : *req.topics) {
        const topic_state* t = nullptr;
        // A non-zero id decides, as in Kafka: the Java client asks by id with the name
        // left "" (not null), which must not be looked up as a name.
        if (rt.name && rt.topic_id == protocol::uuid{}) {
            // Denied whether or not it exists, so that existence does not leak.
            if (!ctx.allowed(resource_kind::topic, *rt.name)) {
                resp.topics.push_back(topic_error(
                    ctx, with_ops, rt.name, {}, protocol::error_code::topic_authorization_failed));
                continue;
            }
            t = b.topics().find(*rt.name);
        } else {
            t = b.topics().find(catalog::uuid(rt.topic_id));
            if (!t) {
                resp.topics.push_back(topic_error(ctx, with_ops, std::nullopt, rt.topic_id,
                                                  protocol::error_code::unknown_topic_id));
                continue;
            }
            if (!ctx.allowed(resource_kind::topic, t->info.name)) {
                resp.topics.push_back(
                    topic_error(ctx, with_ops, std::nullopt, rt.topic_id,
                                protocol::error_code::topic_authorization_failed));
                continue;
            }
        }
        if (!t && may_create && !ctx.may_create_topic(*rt.name)) {
            resp.topics.push_back(topic_error(ctx, with_ops, rt.name, {},
                                              protocol::error_code::topic_authorization_failed));
            continue;
        }
        if (!t && may_create) {
            auto created = b.topics().create(*rt.name, b.config().default_partitions, {}, false);
            if (created) {
                t = b.topics().find(*rt.name);
            } else if (created.code() == errc::invalid_argument) {
                log_warn("metadata", "{}: cannot auto-create '{}': {}", ctx.client(), *rt.name,
                         created.err().message);
                resp.topics.push_back(topic_error(ctx, with_ops, rt.name, {},
                                                  protocol::error_code::invalid_topic_exception));
                continue;
            }
        }
        if (!t) {
            log_unknown_topic(ctx, "Metadata", *rt.name);
            resp.topics.push_back(topic_error(ctx, with_ops, rt.name, {},
                                              protocol::error_code::unknown_topic_or_partition));
            continue;
        }
        resp.topics.push_back(describe(ctx, *t, with_ops));
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

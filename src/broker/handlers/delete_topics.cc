#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/delete_topics.h"

namespace sluice::broker {

void handle_delete_topics(const request_context& ctx, request_body body) {
    protocol::delete_topics_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    // v0-v5 name topics; v6 names them or gives their ids.
    std::vector<protocol::delete_topics_request::topic_state> wanted = req.topics;
    for (const auto& n : req.topic_names) wanted.push_back({n, {}});

    protocol::delete_topics_response resp;
    resp.responses.reserve(wanted.size());
    for (const auto& w : wanted) {
        protocol::delete_topics_response::result out;
        out.name = w.name;
        out.topic_id = w.topic_id;
        const topic_state* t = w.name ? b.topics().find(*w.name) : b.topics().find(w.topic_id);
        // Denied whether or not a named topic exists, so that existence does not leak.
        if ((t || w.name) &&
            !ctx.allowed(security::resource_kind::topic, t ? t->info.name : *w.name)) {
            out.error_code = code(protocol::error_code::topic_authorization_failed);
            resp.responses.push_back(std::move(out));
            continue;
        }
        if (!t) {
            out.error_code = code(w.name ? protocol::error_code::unknown_topic_or_partition
                                         : protocol::error_code::unknown_topic_id);
            // v5+ carry a message, as Kafka's answers do.
            out.error_message = w.name ? "topic '" + *w.name + "' does not exist"
                                       : std::string("no topic has this id");
            resp.responses.push_back(std::move(out));
            continue;
        }
        std::string name = t->info.name;
        int32_t partitions = t->info.partitions;
        out.name = name;
        out.topic_id = t->info.id;
        if (auto r = b.topics().remove(name); !r && r.code() == errc::in_use) {
            // Kafka's answer for a request the broker's rules refuse; the message names
            // the expansions in the way.
            out.error_code = code(protocol::error_code::policy_violation);
            out.error_message = r.err().message;
            log_warn("admin", "{}: delete topic '{}' refused: {}", ctx.client(), name,
                     r.err().message);
        } else if (!r) {
            out.error_code = code(
                storage_error_or(r.code(), protocol::error_code::unknown_server_error));
            out.error_message = r.err().message;
            log_error("admin", "{}: delete topic '{}': {}", ctx.client(), name, r.err().message);
        } else {
            // The catalog dropped the topic's committed offsets in the same transaction.
            b.groups().remove_topic(name);
            // Consumers long-polling the topic wake up and see it gone.
            std::vector<topic_partition> tps;
            tps.reserve(static_cast<size_t>(partitions));
            for (int32_t p = 0; p < partitions; ++p) tps.push_back({name, p});
            b.notify_data(tps);
        }
        resp.responses.push_back(std::move(out));
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

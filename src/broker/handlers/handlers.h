#pragma once

#include "broker/request_context.h"
#include "common/logging.h"
#include "protocol/error_code.h"

namespace sluice::broker {

// One function per Kafka API, each in handlers/<api>.cc.
void handle_produce(const request_context& ctx, bytes_view body);
void handle_fetch(const request_context& ctx, bytes_view body);
void handle_list_offsets(const request_context& ctx, bytes_view body);
void handle_metadata(const request_context& ctx, bytes_view body);
void handle_describe_configs(const request_context& ctx, bytes_view body);
void handle_api_versions(const request_context& ctx, bytes_view body);
void handle_create_topics(const request_context& ctx, bytes_view body);
void handle_delete_topics(const request_context& ctx, bytes_view body);
void handle_describe_cluster(const request_context& ctx, bytes_view body);

// Decodes the request body; a malformed body closes the connection with a log line
// and returns false.
template <typename R>
bool decode_request(const request_context& ctx, bytes_view body, R& out);
void reject_malformed(const request_context& ctx);

template <typename R>
bool decode_request(const request_context& ctx, bytes_view body, R& out) {
    if (protocol::decode_message(body, ctx.version(), ctx.flexible(), out)) return true;
    reject_malformed(ctx);
    return false;
}

inline int16_t code(protocol::error_code e) { return static_cast<int16_t>(e); }

}  // namespace sluice::broker

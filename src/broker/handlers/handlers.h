#pragma once

#include "broker/request_context.h"
#include "common/logging.h"
#include "protocol/error_code.h"

namespace sluice::broker {

// One function per Kafka API, each in handlers/<api>.cc.
void handle_produce(const request_context& ctx, request_body body);
void handle_fetch(const request_context& ctx, request_body body);
void handle_list_offsets(const request_context& ctx, request_body body);
void handle_metadata(const request_context& ctx, request_body body);
void handle_describe_configs(const request_context& ctx, request_body body);
void handle_api_versions(const request_context& ctx, request_body body);
void handle_create_topics(const request_context& ctx, request_body body);
void handle_delete_topics(const request_context& ctx, request_body body);
void handle_describe_cluster(const request_context& ctx, request_body body);
void handle_find_coordinator(const request_context& ctx, request_body body);
void handle_join_group(const request_context& ctx, request_body body);
void handle_sync_group(const request_context& ctx, request_body body);
void handle_heartbeat(const request_context& ctx, request_body body);
void handle_leave_group(const request_context& ctx, request_body body);
void handle_offset_commit(const request_context& ctx, request_body body);
void handle_offset_fetch(const request_context& ctx, request_body body);
void handle_list_groups(const request_context& ctx, request_body body);
void handle_describe_groups(const request_context& ctx, request_body body);
void handle_delete_groups(const request_context& ctx, request_body body);
void handle_offset_delete(const request_context& ctx, request_body body);
void handle_alter_configs(const request_context& ctx, request_body body);
void handle_incremental_alter_configs(const request_context& ctx, request_body body);
void handle_create_partitions(const request_context& ctx, request_body body);
void handle_delete_records(const request_context& ctx, request_body body);
void handle_sasl_handshake(const request_context& ctx, request_body body);
void handle_sasl_authenticate(const request_context& ctx, request_body body);
void handle_describe_user_scram_credentials(const request_context& ctx, request_body body);
void handle_alter_user_scram_credentials(const request_context& ctx, request_body body);

// Kafka's form of a member's address in DescribeGroups: "/" and the peer's IP.
std::string client_host(const request_context& ctx);

// DescribeGroups' authorized operations: Kafka's ACL operation bits for a group, READ
// (3), DELETE (6) and DESCRIBE (8), each set when the principal may do it.
int32_t group_operations(const request_context& ctx, const std::string& group);

// Decodes the request body; a malformed body closes the connection with a log line
// and returns false.
template <typename R>
bool decode_request(const request_context& ctx, request_body body, R& out);
void reject_malformed(const request_context& ctx);

template <typename R>
bool decode_request(const request_context& ctx, request_body body, R& out) {
    if (protocol::decode_message(body, ctx.version(), ctx.flexible(), out)) return true;
    reject_malformed(ctx);
    return false;
}

inline int16_t code(protocol::error_code e) { return static_cast<int16_t>(e); }

}  // namespace sluice::broker

#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "broker/request_context.h"
#include "common/logging.h"
#include "protocol/error_code.h"
#include "security/policy.h"
#include "txn/coordinator.h"

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
void handle_init_producer_id(const request_context& ctx, request_body body);
void handle_describe_producers(const request_context& ctx, request_body body);
void handle_sasl_handshake(const request_context& ctx, request_body body);
void handle_sasl_authenticate(const request_context& ctx, request_body body);
void handle_describe_user_scram_credentials(const request_context& ctx, request_body body);
void handle_alter_user_scram_credentials(const request_context& ctx, request_body body);
void handle_add_partitions_to_txn(const request_context& ctx, request_body body);
void handle_add_offsets_to_txn(const request_context& ctx, request_body body);
void handle_end_txn(const request_context& ctx, request_body body);
void handle_txn_offset_commit(const request_context& ctx, request_body body);
void handle_describe_transactions(const request_context& ctx, request_body body);
void handle_list_transactions(const request_context& ctx, request_body body);
void handle_write_txn_markers(const request_context& ctx, request_body body);
void handle_describe_acls(const request_context& ctx, request_body body);
void handle_create_acls(const request_context& ctx, request_body body);
void handle_delete_acls(const request_context& ctx, request_body body);
void handle_consumer_group_heartbeat(const request_context& ctx, request_body body);
void handle_consumer_group_describe(const request_context& ctx, request_body body);
void handle_share_group_heartbeat(const request_context& ctx, request_body body);
void handle_share_group_describe(const request_context& ctx, request_body body);
void handle_share_fetch(const request_context& ctx, request_body body);
void handle_share_acknowledge(const request_context& ctx, request_body body);
void handle_describe_share_group_offsets(const request_context& ctx, request_body body);
void handle_alter_share_group_offsets(const request_context& ctx, request_body body);
void handle_delete_share_group_offsets(const request_context& ctx, request_body body);

// A write the broker could not make (storage failed or full: io_error) is answered
// KAFKA_STORAGE_ERROR, retriable as in Kafka, not UNKNOWN_SERVER_ERROR; other failures
// get `otherwise`.
inline protocol::error_code storage_error_or(errc e, protocol::error_code otherwise) {
    return e == errc::io_error ? protocol::error_code::kafka_storage_error : otherwise;
}

// A group's committed offsets that could not be stored: NOT_COORDINATOR when another
// broker took the group over (errc::fenced, shared mode: the client finds the new
// coordinator), else KAFKA_STORAGE_ERROR (retriable).
inline protocol::error_code offset_write_error(const error& e) {
    return e.code == errc::fenced ? protocol::error_code::not_coordinator
                                  : protocol::error_code::kafka_storage_error;
}

// Why a request for the group is refused before the group is looked at: NONE, or
// GROUP_AUTHORIZATION_FAILED (logged), or in shared mode NOT_COORDINATOR,
// COORDINATOR_NOT_AVAILABLE or COORDINATOR_LOAD_IN_PROGRESS (broker::
// group_coordinator_error; the client looks its coordinator up again).
protocol::error_code group_refusal(const request_context& ctx, const std::string& group_id);

// Kafka's form of a member's address in DescribeGroups: "/" and the peer's IP.
std::string client_host(const request_context& ctx);

// The authorized_operations field of Metadata, DescribeCluster and DescribeGroups:
// Kafka's AclOperation bit for each operation Kafka defines on a resource of that kind
// (a group: READ, DELETE, DESCRIBE), set when the principal may perform it.
int32_t authorized_operations(const request_context& ctx, const security::resource& r);

// One broker holds one copy of each partition whatever the replication factor, so any
// factor from 1 to max_replication_factor is accepted (clients and Kafka Connect ask for
// 3 by default) and -1 asks for the default. The bound only catches typos and absurd
// values: Kafka clusters seldom keep more than 7 copies.
inline constexpr int32_t max_replication_factor = 16;
// Why CreateTopics' factor is refused (INVALID_REPLICATION_FACTOR); nullopt when it is not.
std::optional<std::string> replication_factor_error(int32_t factor);
// Why one partition's replica list is refused (INVALID_REPLICA_ASSIGNMENT): empty, longer
// than the bound, an id given twice, or an id no broker announces (ids are 0..brokers-1).
std::optional<std::string> replica_list_error(std::span<const int32_t> ids, size_t brokers);

// The wire code of a transaction coordinator outcome (txn_common.cc);
// producer_fenced_known: the API version knows PRODUCER_FENCED (KIP-588);
// abortable_known: it knows TRANSACTION_ABORTABLE (KIP-890).
protocol::error_code txn_error_code(txn::txn_error e, bool producer_fenced_known,
                                    bool abortable_known = false);
// Logs a refused transaction request (CONCURRENT_TRANSACTIONS at debug: a retry).
void log_txn_refusal(const request_context& ctx, std::string_view api, const std::string& id,
                     txn::txn_error e);
// With auto-creation off, logs at info (once a minute per topic) that a client asked
// for a topic that does not exist, and how to create it.
void log_unknown_topic(const request_context& ctx, std::string_view api, const std::string& topic);

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

inline int16_t code(protocol::error_code e) {
    return static_cast<int16_t>(e);
}

}  // namespace sluice::broker

#pragma once

#include <cstdint>
#include <string_view>

namespace sluice::protocol {

// Kafka's error codes, used only at the protocol edge (STYLE.md). The values are the
// wire numbers clients switch on.
enum class error_code : int16_t {
    unknown_server_error = -1,  // unexpected broker failure
    none = 0,
    offset_out_of_range = 1,  // fetch offset outside [log start, high watermark]
    corrupt_message = 2,      // batch CRC or framing is wrong
    unknown_topic_or_partition = 3,
    invalid_fetch_size = 4,
    leader_not_available = 5,
    not_leader_or_follower = 6,
    request_timed_out = 7,           // acks=-1 produce not durable within timeout_ms
    message_too_large = 10,          // batch above max.message.bytes
    offset_metadata_too_large = 12,  // commit metadata above offset.metadata.max.bytes
    coordinator_load_in_progress = 14,  // a group that moved here is being read
    coordinator_not_available = 15,
    not_coordinator = 16,
    invalid_topic_exception = 17,  // topic name breaks Kafka's naming rules
    record_list_too_large = 18,
    invalid_required_acks = 21,        // acks not in {-1, 0, 1}
    illegal_generation = 22,           // group request from an older generation
    inconsistent_group_protocol = 23,  // no protocol in common, or another protocol type
    invalid_group_id = 24,
    unknown_member_id = 25,
    invalid_session_timeout = 26,  // outside group.{min,max}.session.timeout.ms
    rebalance_in_progress = 27,
    topic_authorization_failed = 29,
    group_authorization_failed = 30,
    cluster_authorization_failed = 31,
    invalid_timestamp = 32,
    unsupported_sasl_mechanism = 33,  // SaslHandshake for a mechanism not enabled
    illegal_sasl_state = 34,          // a SASL request out of order
    unsupported_version = 35,         // api version outside the supported table
    topic_already_exists = 36,
    invalid_partitions = 37,  // partition count outside 1..20,000
    invalid_replication_factor = 38,
    invalid_replica_assignment = 39,
    invalid_config = 40,
    invalid_request = 42,  // request well-formed but meaningless
    policy_violation = 44,
    unsupported_for_message_format = 43,
    out_of_order_sequence_number = 45,  // a gap in an idempotent producer's sequence
    duplicate_sequence_number = 46,     // never sent: a retry gets its first offsets
    invalid_producer_epoch = 47,        // a batch from an older epoch than the producer's
    unknown_producer_id = 59,           // the partition no longer knows the producer
    non_empty_group = 68,  // delete of a group that still has members
    group_id_not_found = 69,
    fetch_session_id_not_found = 70,   // an incremental fetch of a session not (or no longer) held
    invalid_fetch_session_epoch = 71,  // an incremental fetch out of the session's sequence
    not_enough_replicas = 19,          // retriable: a transactional produce waits for its coordinator
    invalid_txn_state = 48,            // not allowed in the transaction's state
    invalid_producer_id_mapping = 49,  // unknown transactional id or producer id
    invalid_transaction_timeout = 50,  // above --transaction-max-timeout-ms
    concurrent_transactions = 51,      // the previous transaction is still completing
    transaction_coordinator_fenced = 52,  // a marker from an older coordinator epoch
    transactional_id_authorization_failed = 53,
    operation_not_attempted = 55,      // another partition of the request failed
    kafka_storage_error = 56,
    sasl_authentication_failed =
        58,  // wrong password or unknown user      // the log could not be written or synced
    unsupported_compression_type = 76,
    unstable_offset_commit = 88,  // require_stable: an offset pending in a transaction
    member_id_required = 79,  // JoinGroup v4+: rejoin with the member id given
    group_max_size_reached = 81,
    fenced_instance_id = 82,         // a newer member took over this group.instance.id
    group_subscribed_to_topic = 86,  // OffsetDelete of a topic members consume
    invalid_record = 87,             // record-level violation (e.g. key/value size)
    resource_not_found = 91,         // DescribeUserScramCredentials of an unknown user
    duplicate_resource = 92,         // one user twice in one AlterUserScramCredentials
    unacceptable_credential = 93,    // iterations out of range, empty salt or password
    producer_fenced = 90,            // a newer instance of the transactional id took over
    unknown_topic_id = 100,
    inconsistent_topic_id = 103,
    transactional_id_not_found = 105,    // DescribeTransactions of an id the coordinator lacks
    fetch_session_topic_id_error = 106,  // a session's fetches mix topic names and ids
    fenced_member_epoch = 110,           // KIP-848: the member must rejoin with epoch 0
    unreleased_instance_id = 111,        // KIP-848: the instance id is still in use
    unsupported_assignor = 112,          // KIP-848: not in group.consumer.assignors
    stale_member_epoch = 113,            // KIP-848: a commit or fetch with an older epoch
    transaction_abortable = 120,         // the transaction cannot go on: abort it (KIP-890)
    invalid_record_state = 121,          // KIP-932: acknowledging a record this member does not hold
    share_session_not_found = 122,       // KIP-932: no share session for the member
    invalid_share_session_epoch = 123,   // KIP-932: not the share session's next epoch
    invalid_regular_expression = 128,    // KIP-848: a subscribed_topic_regex that does not parse
};

std::string_view error_name(error_code e);

}  // namespace sluice::protocol

#include "broker/api_table.h"

#include "broker/handlers/handlers.h"

namespace sluice::broker {
namespace {

using protocol::api_key;

// Versions: Kafka's clients pick the highest version both sides know; the lower bounds
// reach back to what librdkafka 2.0, kafka-python 2.0 and kafkajs 2.2 still send.
constexpr api_def table[] = {
    {api_key::produce, "Produce", 0, 12, handle_produce},
    {api_key::fetch, "Fetch", 0, 13, handle_fetch},
    {api_key::list_offsets, "ListOffsets", 0, 8, handle_list_offsets},
    {api_key::metadata, "Metadata", 0, 12, handle_metadata},
    {api_key::offset_commit, "OffsetCommit", 0, 9, handle_offset_commit},
    {api_key::offset_fetch, "OffsetFetch", 0, 9, handle_offset_fetch},
    {api_key::find_coordinator, "FindCoordinator", 0, 4, handle_find_coordinator},
    {api_key::join_group, "JoinGroup", 0, 9, handle_join_group},
    {api_key::heartbeat, "Heartbeat", 0, 4, handle_heartbeat},
    {api_key::leave_group, "LeaveGroup", 0, 5, handle_leave_group},
    {api_key::sync_group, "SyncGroup", 0, 5, handle_sync_group},
    {api_key::describe_groups, "DescribeGroups", 0, 5, handle_describe_groups},
    {api_key::list_groups, "ListGroups", 0, 5, handle_list_groups},
    {api_key::describe_configs, "DescribeConfigs", 0, 4, handle_describe_configs},
    {api_key::api_versions, "ApiVersions", 0, 4, handle_api_versions},
    {api_key::create_topics, "CreateTopics", 0, 7, handle_create_topics},
    {api_key::delete_topics, "DeleteTopics", 0, 6, handle_delete_topics},
    {api_key::delete_records, "DeleteRecords", 0, 2, handle_delete_records},
    {api_key::init_producer_id, "InitProducerId", 0, 5, handle_init_producer_id},
    {api_key::add_partitions_to_txn, "AddPartitionsToTxn", 0, 5, handle_add_partitions_to_txn},
    {api_key::add_offsets_to_txn, "AddOffsetsToTxn", 0, 4, handle_add_offsets_to_txn},
    {api_key::end_txn, "EndTxn", 0, 5, handle_end_txn},
    {api_key::write_txn_markers, "WriteTxnMarkers", 1, 2, handle_write_txn_markers},
    {api_key::txn_offset_commit, "TxnOffsetCommit", 0, 5, handle_txn_offset_commit},
    {api_key::describe_acls, "DescribeAcls", 0, 3, handle_describe_acls},
    {api_key::create_acls, "CreateAcls", 0, 3, handle_create_acls},
    {api_key::delete_acls, "DeleteAcls", 0, 3, handle_delete_acls},
    {api_key::alter_configs, "AlterConfigs", 0, 2, handle_alter_configs},
    {api_key::create_partitions, "CreatePartitions", 0, 3, handle_create_partitions},
    {api_key::delete_groups, "DeleteGroups", 0, 2, handle_delete_groups},
    {api_key::incremental_alter_configs, "IncrementalAlterConfigs", 0, 1,
     handle_incremental_alter_configs},
    {api_key::offset_delete, "OffsetDelete", 0, 0, handle_offset_delete},
    {api_key::describe_cluster, "DescribeCluster", 0, 1, handle_describe_cluster},
    {api_key::describe_producers, "DescribeProducers", 0, 0, handle_describe_producers},
    {api_key::describe_transactions, "DescribeTransactions", 0, 0, handle_describe_transactions},
    {api_key::list_transactions, "ListTransactions", 0, 2, handle_list_transactions},
    {api_key::sasl_handshake, "SaslHandshake", 0, 1, handle_sasl_handshake},
    {api_key::sasl_authenticate, "SaslAuthenticate", 0, 2, handle_sasl_authenticate},
    {api_key::describe_user_scram_credentials, "DescribeUserScramCredentials", 0, 0,
     handle_describe_user_scram_credentials},
    {api_key::alter_user_scram_credentials, "AlterUserScramCredentials", 0, 0,
     handle_alter_user_scram_credentials},
    {api_key::consumer_group_heartbeat, "ConsumerGroupHeartbeat", 0, 1,
     handle_consumer_group_heartbeat},
    {api_key::consumer_group_describe, "ConsumerGroupDescribe", 0, 1,
     handle_consumer_group_describe},
    // Share groups (KIP-932) at the versions Kafka 4.2+'s KafkaShareConsumer sends.
    {api_key::share_group_heartbeat, "ShareGroupHeartbeat", 1, 1, handle_share_group_heartbeat},
    {api_key::share_group_describe, "ShareGroupDescribe", 1, 1, handle_share_group_describe},
    {api_key::share_fetch, "ShareFetch", 1, 2, handle_share_fetch},
    {api_key::share_acknowledge, "ShareAcknowledge", 1, 2, handle_share_acknowledge},
    {api_key::describe_share_group_offsets, "DescribeShareGroupOffsets", 0, 1,
     handle_describe_share_group_offsets},
    {api_key::alter_share_group_offsets, "AlterShareGroupOffsets", 0, 0,
     handle_alter_share_group_offsets},
    {api_key::delete_share_group_offsets, "DeleteShareGroupOffsets", 0, 0,
     handle_delete_share_group_offsets},
};

}  // namespace

std::span<const api_def> supported_apis() {
    return table;
}

bool served_in_shared_mode(api_key k) {
    switch (k) {
        // WriteTxnMarkers (Kafka's inter-broker API: shared mode's coordinators append
        // markers to the shared log themselves): docs/shared-mode.md.
        case api_key::write_txn_markers:
            return false;
        default:
            return true;
    }
}

const api_def* find_api(int16_t key) {
    for (const auto& d : table)
        if (static_cast<int16_t>(d.key) == key) return &d;
    return nullptr;
}

}  // namespace sluice::broker

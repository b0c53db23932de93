#include "protocol/api_key.h"

#include <utility>

namespace sluice::protocol {
namespace {

// From Kafka's message schemas ("flexibleVersions"). OffsetDelete and SaslHandshake
// have none.
constexpr std::pair<api_key, int16_t> first_flexible[] = {
    {api_key::produce, 9},
    {api_key::fetch, 12},
    {api_key::list_offsets, 6},
    {api_key::metadata, 9},
    {api_key::offset_commit, 8},
    {api_key::offset_fetch, 6},
    {api_key::find_coordinator, 3},
    {api_key::join_group, 6},
    {api_key::heartbeat, 4},
    {api_key::leave_group, 4},
    {api_key::sync_group, 4},
    {api_key::describe_groups, 5},
    {api_key::list_groups, 3},
    {api_key::describe_configs, 4},
    {api_key::api_versions, 3},
    {api_key::create_topics, 5},
    {api_key::delete_topics, 4},
    {api_key::delete_groups, 2},
    {api_key::describe_cluster, 0},
    {api_key::delete_records, 2},
    {api_key::init_producer_id, 2},
    {api_key::add_partitions_to_txn, 3},
    {api_key::add_offsets_to_txn, 3},
    {api_key::end_txn, 3},
    {api_key::write_txn_markers, 1},
    {api_key::txn_offset_commit, 3},
    {api_key::describe_acls, 2},
    {api_key::create_acls, 2},
    {api_key::delete_acls, 2},
    {api_key::describe_producers, 0},
    {api_key::describe_transactions, 0},
    {api_key::list_transactions, 0},
    {api_key::alter_configs, 2},
    {api_key::create_partitions, 2},
    {api_key::incremental_alter_configs, 1},
    {api_key::sasl_authenticate, 2},
    {api_key::describe_user_scram_credentials, 0},
    {api_key::alter_user_scram_credentials, 0},
    {api_key::consumer_group_heartbeat, 0},
    {api_key::consumer_group_describe, 0},
    {api_key::share_group_heartbeat, 0},
    {api_key::share_group_describe, 0},
    {api_key::share_fetch, 0},
    {api_key::share_acknowledge, 0},
    {api_key::describe_share_group_offsets, 0},
    {api_key::alter_share_group_offsets, 0},
    {api_key::delete_share_group_offsets, 0},
};

}  // namespace

std::optional<int16_t> first_flexible_version(int16_t key) {
    for (const auto& [k, v] : first_flexible)
        if (static_cast<int16_t>(k) == key) return v;
    return std::nullopt;
}

}  // namespace sluice::protocol

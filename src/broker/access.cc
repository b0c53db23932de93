#include "broker/access.h"

#include <map>

#include "common/logging.h"
#include "security/policy.h"

namespace sluice::broker {
namespace {

using protocol::api_key;
using security::action;
using security::resource_kind;

// Kafka's own ACL mapping (KIP-11 and its successors), in Sluice's action names.
// ApiVersions, SaslHandshake and SaslAuthenticate need nothing. CreateTopics (and
// auto-creation through Metadata) is allowed by Create on the cluster or on the topic.
// ListGroups with Describe on the cluster lists every group, otherwise those the
// principal may describe. DescribeConfigs and AlterConfigs of the broker resource need
// the action on the cluster.
constexpr access_rule rules[] = {
    {api_key::produce, resource_kind::topic, action::write},
    {api_key::produce, resource_kind::transactional_id, action::write},  // transactional batches
    {api_key::fetch, resource_kind::topic, action::read},
    {api_key::list_offsets, resource_kind::topic, action::describe},
    {api_key::metadata, resource_kind::topic, action::describe},
    {api_key::offset_commit, resource_kind::group, action::read},
    {api_key::offset_commit, resource_kind::topic, action::read},
    {api_key::offset_fetch, resource_kind::group, action::describe},
    {api_key::offset_fetch, resource_kind::topic, action::describe},
    {api_key::find_coordinator, resource_kind::group, action::describe},
    {api_key::find_coordinator, resource_kind::transactional_id, action::describe},
    {api_key::join_group, resource_kind::group, action::read},
    {api_key::heartbeat, resource_kind::group, action::read},
    {api_key::leave_group, resource_kind::group, action::read},
    {api_key::sync_group, resource_kind::group, action::read},
    {api_key::describe_groups, resource_kind::group, action::describe},
    {api_key::list_groups, resource_kind::cluster, action::describe},
    {api_key::list_groups, resource_kind::group, action::describe},
    {api_key::consumer_group_heartbeat, resource_kind::group, action::read},
    {api_key::consumer_group_describe, resource_kind::group, action::describe},
    {api_key::share_group_heartbeat, resource_kind::group, action::read},
    {api_key::share_group_describe, resource_kind::group, action::describe},
    {api_key::share_fetch, resource_kind::group, action::read},
    {api_key::share_fetch, resource_kind::topic, action::read},
    {api_key::share_acknowledge, resource_kind::group, action::read},
    // The share group offset APIs as Kafka: like OffsetFetch, OffsetCommit, OffsetDelete.
    {api_key::describe_share_group_offsets, resource_kind::group, action::describe},
    {api_key::describe_share_group_offsets, resource_kind::topic, action::describe},
    {api_key::alter_share_group_offsets, resource_kind::group, action::read},
    {api_key::alter_share_group_offsets, resource_kind::topic, action::read},
    {api_key::delete_share_group_offsets, resource_kind::group, action::delete_},
    {api_key::delete_share_group_offsets, resource_kind::topic, action::read},
    {api_key::describe_configs, resource_kind::topic, action::describe_configs},
    {api_key::describe_configs, resource_kind::cluster, action::describe_configs},
    {api_key::describe_configs, resource_kind::group, action::describe_configs},  // group configs
    {api_key::create_topics, resource_kind::cluster, action::create},
    {api_key::create_topics, resource_kind::topic, action::create},
    {api_key::delete_topics, resource_kind::topic, action::delete_},
    {api_key::delete_records, resource_kind::topic, action::delete_},
    {api_key::alter_configs, resource_kind::topic, action::alter_configs},
    {api_key::alter_configs, resource_kind::cluster, action::alter_configs},
    {api_key::alter_configs, resource_kind::group, action::alter_configs},
    {api_key::create_partitions, resource_kind::topic, action::alter},
    {api_key::delete_groups, resource_kind::group, action::delete_},
    {api_key::incremental_alter_configs, resource_kind::topic, action::alter_configs},
    {api_key::incremental_alter_configs, resource_kind::cluster, action::alter_configs},
    {api_key::incremental_alter_configs, resource_kind::group, action::alter_configs},
    {api_key::offset_delete, resource_kind::group, action::delete_},
    {api_key::offset_delete, resource_kind::topic, action::read},
    {api_key::describe_user_scram_credentials, resource_kind::cluster, action::describe},
    {api_key::alter_user_scram_credentials, resource_kind::cluster, action::alter},
    // As Kafka (KIP-679): IdempotentWrite on the cluster, or Write on any topic.
    {api_key::init_producer_id, resource_kind::cluster, action::idempotent_write},
    {api_key::init_producer_id, resource_kind::topic, action::write},
    // With a transactional id: Write on it, and nothing else.
    {api_key::init_producer_id, resource_kind::transactional_id, action::write},
    {api_key::describe_producers, resource_kind::topic, action::read},
    // Transactions, as Kafka: Write on the transactional id first (AddPartitionsToTxn v4+,
    // a broker's request, needs ClusterAction instead).
    {api_key::add_partitions_to_txn, resource_kind::transactional_id, action::write},
    {api_key::add_partitions_to_txn, resource_kind::topic, action::write},
    {api_key::add_partitions_to_txn, resource_kind::cluster, action::cluster_action},
    {api_key::add_offsets_to_txn, resource_kind::transactional_id, action::write},
    {api_key::add_offsets_to_txn, resource_kind::group, action::read},
    {api_key::end_txn, resource_kind::transactional_id, action::write},
    {api_key::txn_offset_commit, resource_kind::transactional_id, action::write},
    {api_key::txn_offset_commit, resource_kind::group, action::read},
    {api_key::txn_offset_commit, resource_kind::topic, action::read},
    // As Kafka: Describe on the transactional id (ListTransactions lists the ids the
    // principal may describe; DescribeTransactions leaves out the topics it may not),
    // and WriteTxnMarkers, a coordinator's request, needs ClusterAction.
    {api_key::describe_transactions, resource_kind::transactional_id, action::describe},
    {api_key::describe_transactions, resource_kind::topic, action::describe},
    {api_key::list_transactions, resource_kind::transactional_id, action::describe},
    {api_key::write_txn_markers, resource_kind::cluster, action::cluster_action},
    // As Kafka: ACLs are read with Describe and changed with Alter on the cluster.
    {api_key::describe_acls, resource_kind::cluster, action::describe},
    {api_key::create_acls, resource_kind::cluster, action::alter},
    {api_key::delete_acls, resource_kind::cluster, action::alter},
};

}  // namespace

std::span<const access_rule> access_rules() {
    return rules;
}

std::optional<action> required_action(api_key api, resource_kind kind) {
    for (const auto& r : rules)
        if (r.api == api && r.kind == kind) return r.act;
    return std::nullopt;
}

access_control::access_control(catalog::security_store& store, security::authz_mode mode,
                               bool authenticate)
    : _cat(store), _authenticate(authenticate), _authz(mode) {}

std::vector<security::scram_credential> access_control::credentials(const std::string& user) const {
    std::vector<security::scram_credential> out;
    for (auto& c : _cat.credentials(user)) {
        security::scram_credential s;
        s.mechanism = static_cast<security::scram_mechanism>(c.mechanism);
        s.salt = std::move(c.salt);
        s.iterations = c.iterations;
        s.stored_key = std::move(c.stored_key);
        s.server_key = std::move(c.server_key);
        out.push_back(std::move(s));
    }
    return out;
}

bool access_control::allowed(const security::principal& p, action a,
                             const security::resource& r) const {
    refresh_if_changed();
    return _authz.allowed(p, a, r);
}

uint64_t access_control::generation() const {
    return _cat.security_generation();
}

void access_control::refresh_if_changed() const {
    uint64_t gen = _cat.security_generation();
    if (_seen.load(std::memory_order_acquire) == gen) return;
    std::lock_guard lock(_mu);
    gen = _cat.security_generation();
    if (_seen.load(std::memory_order_relaxed) == gen) return;
    std::map<std::string, std::vector<security::policy>> by_user;
    size_t attached = 0;
    for (auto& rec : _cat.list_policies()) {
        auto parsed = security::parse_policy(rec.name, rec.document);
        security::policy pol;
        if (parsed) {
            pol = std::move(*parsed);
        } else {
            // Documents are validated before they are stored; only a hand-edited catalog
            // gets here. What it meant is unknown, and it may have held a Deny, so its
            // users are refused everything until it is put again or detached.
            log_error("security",
                      "policy '{}' in the catalog is invalid; its users ({}) are denied every "
                      "action until it is replaced or detached: {}",
                      rec.name, rec.users.size(), parsed.err().message);
            pol.name = rec.name;
            pol.statements.push_back({security::effect::deny, {"*"}, {"*"}});
        }
        for (const auto& u : rec.users) {
            by_user[u].push_back(pol);
            ++attached;
        }
    }
    _authz.replace(std::move(by_user));
    _seen.store(gen, std::memory_order_release);
    log_debug("security", "policies reloaded: {} attachments", attached);
}

}  // namespace sluice::broker

#pragma once

// The durable metadata a broker is handed: topics, producer ids, dynamic broker configs,
// users and policies, expansions' definitions, committed offsets, group state and
// transaction state, each behind its interface (catalog/metadata_store.h,
// catalog/security_store.h, catalog/expansion_store.h, catalog/offset_store.h,
// group/state_store.h, txn/state_store.h). local_metadata_stores() is single-node mode's set, all
// in the catalog file; shared mode builds its set from src/shared's implementations
// (docs/shared-mode.md#the-metadata-stores).

#include <filesystem>
#include <functional>
#include <memory>

#include "catalog/catalog.h"
#include "catalog/offset_store.h"
#include "common/result.h"
#include "group/share/coordinator.h"
#include "group/state_store.h"
#include "shared/group_fence.h"
#include "shared/pg_database.h"
#include "txn/state_store.h"

namespace sluice::broker {

struct metadata_stores {
    // Outlive the broker.
    catalog::topic_store* topics = nullptr;
    catalog::producer_id_allocator* producer_ids = nullptr;
    catalog::broker_config_store* broker_configs = nullptr;
    // Read by the authenticator and the authorizer (access_control), written by the ACL,
    // SCRAM and HTTP security APIs.
    catalog::security_store* security = nullptr;
    // For the expansion service (expansion::service_options::expansions).
    catalog::expansion_store* expansions = nullptr;
    catalog::group_config_store* group_configs = nullptr;
    // Each called once, at load(): the stores get their own connections, used from the
    // broker's writer threads.
    std::function<result<std::unique_ptr<catalog::offset_store>>()> open_offsets;
    std::function<result<std::unique_ptr<group::state_store>>()> open_groups;
    std::function<result<std::unique_ptr<txn::state_store>>()> open_transactions;
    // Shared mode: the coordinator epochs of the groups this broker holds, checked by the
    // offset and group stores' writes (and the transaction store's for TxnOffsetCommit)
    // and taken by the cluster poll before it reads the groups that move here
    // (shared/group_fence.h). nullptr in single-node mode.
    std::shared_ptr<shared::group_fence> group_fence;
    // Share-partition state of share groups; used from the broker's loop thread.
    std::function<result<std::unique_ptr<group::share::partition_store>>()> open_share;
};

// Everything in the catalog `cat` opened from `file`.
metadata_stores local_metadata_stores(catalog::catalog& cat, const std::filesystem::path& file);

// Shared mode's set: the given stores (the shared catalog's, pg_topic_store,
// pg_producer_ids, pg_broker_config_store, pg_security_store) and, each on a connection of
// its own to the database `db`, pg_offset_store, pg_group_store (with the group fence
// of broker `broker_id`), pg_txn_store (with it too, for TxnOffsetCommit) and pg_share_store.
metadata_stores shared_metadata_stores(catalog::topic_store& topics,
                                       catalog::producer_id_allocator& producer_ids,
                                       catalog::broker_config_store& broker_configs,
                                       catalog::security_store& security,
                                       const shared::pg_config& db, int32_t broker_id);

}  // namespace sluice::broker

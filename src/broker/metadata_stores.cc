#include "broker/metadata_stores.h"

#include "catalog/group_store.h"
#include "catalog/share_store.h"
#include "catalog/txn_store.h"
#include "shared/pg_group_store.h"
#include "shared/pg_offset_store.h"
#include "shared/pg_share_store.h"
#include "shared/pg_txn_store.h"

namespace sluice::broker {

namespace {
// Opens Store on the catalog file, as the interface Base.
template <typename Base, typename Store>
std::function<result<std::unique_ptr<Base>>()> local_opener(const std::filesystem::path& file) {
    return [file]() -> result<std::unique_ptr<Base>> {
        auto r = Store::open(file);
        if (!r) return r.err();
        return std::unique_ptr<Base>(std::move(*r));
    };
}
}  // namespace

metadata_stores local_metadata_stores(catalog::catalog& cat, const std::filesystem::path& file) {
    metadata_stores s;
    s.topics = &cat;
    s.producer_ids = &cat;
    s.broker_configs = &cat;
    s.security = &cat;
    s.expansions = &cat;
    s.group_configs = &cat;
    s.open_offsets = local_opener<catalog::offset_store, catalog::local_offset_store>(file);
    s.open_groups = local_opener<group::state_store, catalog::group_store>(file);
    s.open_transactions = local_opener<txn::state_store, catalog::txn_store>(file);
    s.open_share = local_opener<group::share::partition_store, catalog::share_store>(file);
    return s;
}

namespace {
// Opens Store on the database (with `args` after it), as the interface Base.
template <typename Base, typename Store, typename... Args>
std::function<result<std::unique_ptr<Base>>()> opener(const shared::pg_config& db, Args... args) {
    return [db, args...]() -> result<std::unique_ptr<Base>> {
        auto r = Store::open(db, args...);
        if (!r) return r.err();
        return std::unique_ptr<Base>(std::move(*r));
    };
}
}  // namespace

metadata_stores shared_metadata_stores(catalog::topic_store& topics,
                                       catalog::producer_id_allocator& producer_ids,
                                       catalog::broker_config_store& broker_configs,
                                       catalog::security_store& security,
                                       const shared::pg_config& db, int32_t broker_id) {
    metadata_stores s;
    s.security = &security;
    s.topics = &topics;
    s.producer_ids = &producer_ids;
    s.broker_configs = &broker_configs;
    s.group_fence = std::make_shared<shared::group_fence>(broker_id, db);
    s.open_offsets = opener<catalog::offset_store, shared::pg_offset_store>(db, s.group_fence);
    s.open_groups = opener<group::state_store, shared::pg_group_store>(db, s.group_fence);
    s.open_transactions = opener<txn::state_store, shared::pg_txn_store>(db, s.group_fence);
    s.open_share = opener<group::share::partition_store, shared::pg_share_store>(db);
    return s;
}

}  // namespace sluice::broker

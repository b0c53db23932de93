#include "broker/metadata_stores.h"

#include "catalog/group_store.h"
#include "catalog/txn_store.h"

namespace sluice::broker {

metadata_stores local_metadata_stores(catalog::catalog& cat, const std::filesystem::path& file) {
    metadata_stores s;
    s.topics = &cat;
    s.producer_ids = &cat;
    s.broker_configs = &cat;
    s.security = &cat;
    s.expansions = &cat;
    s.group_configs = &cat;
    s.open_offsets = [file]() -> result<std::unique_ptr<catalog::offset_store>> {
        auto r = catalog::local_offset_store::open(file);
        if (!r) return r.err();
        return std::unique_ptr<catalog::offset_store>(std::move(*r));
    };
    s.open_groups = [file]() -> result<std::unique_ptr<group::state_store>> {
        auto r = catalog::group_store::open(file);
        if (!r) return r.err();
        return std::unique_ptr<group::state_store>(std::move(*r));
    };
    s.open_transactions = [file]() -> result<std::unique_ptr<txn::state_store>> {
        auto r = catalog::txn_store::open(file);
        if (!r) return r.err();
        return std::unique_ptr<txn::state_store>(std::move(*r));
    };
    return s;
}

}  // namespace sluice::broker

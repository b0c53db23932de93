// Transaction state in the catalog file: what is put loads back field for field
// (partitions, groups, pending offsets with and without metadata), a put replaces the
// whole record, an erase forgets it, and all of it survives reopening.

#include "catalog/txn_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "catalog/catalog.h"
#include "store_fixture.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

using txn_store_test = store_fixture<txn_store>;

txn::txn_metadata sample() {
    txn::txn_metadata t;
    t.transactional_id = "app-1";
    t.producer_id = 7;
    t.producer_epoch = 3;
    t.last_producer_id = 7;
    t.last_producer_epoch = 2;
    t.next_producer_id = 9;
    t.timeout_ms = 60000;
    t.state = txn::txn_state::prepare_commit;
    t.tv2 = true;
    t.partitions = {{"a", 0}, {"a", 2}, {"b", 1}};
    t.groups = {"g1", "g2"};
    t.offsets = {{"g1", {"in", 0}, 42, 5, "meta", 1000},
                 {"g2", {"in", 1}, 43, -1, std::nullopt, 1001}};
    t.start_ms = 900;
    t.update_ms = 1002;
    return t;
}

TEST_F(txn_store_test, put_loads_back_field_for_field_after_reopening) {
    ASSERT_TRUE(_store->put(sample()).ok());
    reopen();
    auto rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0], sample());
}

TEST_F(txn_store_test, put_replaces_the_record_and_erase_forgets_it) {
    ASSERT_TRUE(_store->put(sample()).ok());
    auto t = sample();
    t.state = txn::txn_state::complete_commit;
    t.partitions.clear();
    t.groups.clear();
    t.offsets.clear();
    t.start_ms = -1;
    ASSERT_TRUE(_store->put(t).ok());
    auto other = sample();
    other.transactional_id = "app-2";
    other.state = txn::txn_state::ongoing;
    ASSERT_TRUE(_store->put(other).ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 2u);
    EXPECT_EQ(rows[0], t);
    EXPECT_EQ(rows[1], other);
    ASSERT_TRUE(_store->erase("app-1", t.version).ok());
    rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].transactional_id, "app-2");
}

}  // namespace
}  // namespace sluice::catalog

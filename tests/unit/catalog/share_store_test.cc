// Share-partition state (share_partitions, schema version 10): rows saved, reloaded
// after a reopen, and erased by the share group offset APIs.

#include "catalog/share_store.h"

#include <gtest/gtest.h>

#include "store_fixture.h"

namespace sluice::catalog {
namespace {

using group::share::share_partition;
using share_store_test = store_fixture<share_store>;

TEST_F(share_store_test, saved_rows_come_back_and_erased_ones_do_not) {
    ASSERT_TRUE(_store->save("g", {"t", 0}, share_partition(3, 3, {})).ok());
    ASSERT_TRUE(_store->save("g", {"t", 1}, share_partition(7, 7, {})).ok());
    ASSERT_TRUE(_store->save("h", {"t", 0}, share_partition(1, 1, {})).ok());
    ASSERT_TRUE(_store->save("g", {"t", 0}, share_partition(4, 4, {})).ok());  // replaced
    reopen();
    auto loaded = _store->load("");
    ASSERT_TRUE(loaded.ok());
    auto rows = *loaded;
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].group, "g");
    EXPECT_EQ(rows[0].state.start(), 4);
    ASSERT_TRUE(_store->erase("g", {{"t", 0}, {"t", 1}}).ok());
    reopen();
    loaded = _store->load("h");
    ASSERT_TRUE(loaded.ok());
    rows = *loaded;
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].group, "h");
    EXPECT_EQ(rows[0].state.start(), 1);
}

}  // namespace
}  // namespace sluice::catalog

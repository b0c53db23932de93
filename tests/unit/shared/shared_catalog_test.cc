// What only the shared catalog does, against PostgreSQL (SLUICE_TEST_PG_URL, as
// store_backends.h): several brokers over one database (each is told of the others'
// topic changes and sees them after a refresh; producer-id blocks never overlap).

#include <gtest/gtest.h>

#include <atomic>
#include <iostream>
#include <set>
#include <thread>

#include "store_backends.h"

namespace sluice::shared::testing {
namespace {

using namespace std::chrono_literals;

using shared_catalog = pg_catalog_test;

TEST_F(shared_catalog, brokers_see_each_others_topics_after_a_refresh) {
    auto a = pg_topic_store::open(_cfg);
    auto b = pg_topic_store::open(_cfg);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ((*a)->cluster_id(), (*b)->cluster_id());  // one cluster id, kept in the database
    EXPECT_EQ((*a)->cluster_id().size(), 22u);
    auto listener = pg_listener::connect(_cfg, {topics_channel});
    ASSERT_TRUE(listener.ok()) << listener.err().message;
    catalog::topic_info t;
    t.name = "shared";
    t.id = catalog::random_uuid();
    t.partitions = 2;
    ASSERT_TRUE((*a)->create_topic(t).ok());
    EXPECT_FALSE((*b)->find_topic("shared").has_value());
    // The change is announced, so that the other brokers refresh at once.
    auto woke = (*listener)->wait(5s);
    ASSERT_TRUE(woke.ok()) << woke.err().message;
    ASSERT_EQ(woke->notifications.size(), 1u);
    EXPECT_EQ(woke->notifications[0].payload, "shared");
    const uint64_t gen = (*b)->generation();
    auto changed = (*b)->refresh();
    ASSERT_TRUE(changed.ok()) << changed.err().message;
    EXPECT_TRUE(*changed);
    EXPECT_NE((*b)->generation(), gen);
    ASSERT_TRUE((*b)->find_topic(t.id).has_value());
    EXPECT_EQ((*b)->find_topic(t.id)->partitions, 2);
    EXPECT_FALSE(*(*b)->refresh());
    // The partitions' rows exist for the produce path (batch_index.h) to lock.
    auto db = connect();
    auto rows = db->exec(
        "SELECT partition_id, high_watermark FROM sluice_partitions "
        "WHERE topic_id = $1 ORDER BY partition_id",
        {topic_id_hex(t.id)});
    ASSERT_TRUE(rows.ok());
    ASSERT_EQ(rows->size(), 2u);
    EXPECT_EQ(rows->int64(1, 0), 1);
    // Another broker's delete: the create of the same name on the first one is refused
    // until then.
    EXPECT_EQ((*a)->create_topic(t).code(), errc::already_exists);
    ASSERT_TRUE((*b)->delete_topic("shared").ok());
    ASSERT_TRUE(*(*a)->refresh());
    EXPECT_TRUE((*a)->list_topics().empty());
}

TEST_F(shared_catalog, producer_id_blocks_of_two_brokers_never_overlap) {
    auto a = pg_producer_ids::open(_cfg, 5);
    auto b = pg_producer_ids::open(_cfg, 5);
    ASSERT_TRUE(a.ok() && b.ok());
    std::set<int64_t> seen;
    for (int i = 0; i < 12; ++i) {
        for (auto* ids : {a->get(), b->get()}) {
            auto id = ids->allocate_producer_id();
            ASSERT_TRUE(id.ok()) << id.err().message;
            EXPECT_TRUE(seen.insert(*id).second) << *id << " given twice";
        }
    }
    auto db = connect();
    auto next = db->exec("SELECT next_producer_id FROM sluice_producer_ids");
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->int64(0, 0), 30);  // 24 ids: 3 blocks of 5 each
}

txn::txn_metadata txn_record(const std::string& id, int16_t epoch) {
    txn::txn_metadata t;
    t.transactional_id = id;
    t.producer_id = 7000;
    t.producer_epoch = epoch;
    t.timeout_ms = 60000;
    t.state = txn::txn_state::ongoing;
    t.partitions = {{"x", 0}};
    return t;
}

// A write made from what one broker read fails once another broker changed the record
// (docs/shared-mode.md#transactions): the zombie's write made at epoch 0 does not undo
// its successor's epoch 1.
TEST_F(shared_catalog, transaction_records_are_written_only_over_the_version_read) {
    auto a = pg_txn_store::open(_cfg);
    auto b = pg_txn_store::open(_cfg);
    ASSERT_TRUE(a.ok() && b.ok());
    auto put = [](pg_txn_store& s, const txn::txn_metadata& t) {
        auto r = s.put(t);
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() && *r;
    };
    ASSERT_TRUE(put(**a, txn_record("z", 0)));
    EXPECT_FALSE(put(**b, txn_record("z", 0)));  // both created it: the second is refused
    auto seen_a = (*a)->load_one("z");
    auto seen_b = (*b)->load_one("z");
    ASSERT_TRUE(seen_a.ok() && seen_b.ok() && *seen_a && *seen_b);
    EXPECT_EQ((*seen_a)->version, 1);
    auto successor = **seen_a;  // InitProducerId fences: epoch 1, nothing open
    successor.producer_epoch = 1;
    successor.state = txn::txn_state::empty;
    successor.partitions.clear();
    ASSERT_TRUE(put(**a, successor));
    auto zombie = **seen_b;  // the zombie's add of a partition, from the record it read
    zombie.add_partition({"x", 1});
    EXPECT_FALSE(put(**b, zombie));
    EXPECT_FALSE((*b)->erase("z", 1).value());
    auto now = (*b)->load_one("z");
    ASSERT_TRUE(now.ok() && *now);
    EXPECT_EQ((*now)->version, 2);
    EXPECT_EQ((*now)->producer_epoch, 1);
    EXPECT_EQ((*now)->state, txn::txn_state::empty);
    EXPECT_TRUE((*now)->partitions.empty());
    EXPECT_TRUE((*b)->erase("z", 2).value());
    EXPECT_FALSE((*a)->load_one("z").value().has_value());
}

// Two brokers adding partitions to one transaction at once (a TV2 producer's Produce
// requests to two brokers), each reading again after a refused write: none is lost.
TEST_F(shared_catalog, concurrent_changes_to_one_transaction_lose_nothing) {
    ASSERT_TRUE(pg_txn_store::open(_cfg).value()->put(txn_record("t", 0)).value());
    constexpr int per_broker = 40;
    std::atomic<int> refused{0};
    auto broker = [&](int32_t first) {
        auto s = pg_txn_store::open(_cfg);
        ASSERT_TRUE(s.ok());
        for (int32_t p = first; p < first + per_broker; ++p) {
            for (;;) {
                auto t = (*s)->load_one("t");
                ASSERT_TRUE(t.ok() && *t);
                (*t)->add_partition({"x", p});
                auto r = (*s)->put(**t);
                ASSERT_TRUE(r.ok()) << r.err().message;
                if (*r) break;
                ++refused;
            }
        }
    };
    std::thread one(broker, 1000);
    std::thread two(broker, 2000);
    one.join();
    two.join();
    auto t = pg_txn_store::open(_cfg).value()->load_one("t");
    ASSERT_TRUE(t.ok() && *t);
    EXPECT_EQ((*t)->partitions.size(), 1u + 2 * per_broker);
    EXPECT_EQ((*t)->version, 1 + 2 * per_broker);
    std::cout << "concurrent transaction record writes: " << 2 * per_broker << " stored, "
              << refused.load() << " refused and made again\n";
}

}  // namespace
}  // namespace sluice::shared::testing

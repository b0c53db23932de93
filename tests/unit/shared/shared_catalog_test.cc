// What only the shared catalog does, against PostgreSQL (SLUICE_TEST_PG_URL, as
// store_backends.h): several brokers over one database (each is told of the others'
// topic changes and sees them after a refresh; producer-id blocks never overlap).

#include <gtest/gtest.h>

#include <set>

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

}  // namespace
}  // namespace sluice::shared::testing

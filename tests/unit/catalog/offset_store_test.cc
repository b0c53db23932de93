// Committed offsets in the catalog file: what is applied is what loads back, commits
// for missing topics are dropped, and deleting a topic takes its offsets.

#include "catalog/offset_store.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "catalog/catalog.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

class offset_store_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "offset_store_test.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        auto c = catalog::open(_dir / "catalog.db");
        ASSERT_TRUE(c.ok()) << c.err().message;
        _cat = std::move(*c);
        for (const char* name : {"orders", "payments"}) {
            topic_info t;
            t.name = name;
            t.partitions = 4;
            t.id = random_uuid();
            ASSERT_TRUE(_cat->create_topic(t).ok());
        }
        auto s = local_offset_store::open(_dir / "catalog.db");
        ASSERT_TRUE(s.ok()) << s.err().message;
        _store = std::move(*s);
    }
    void TearDown() override {
        _store.reset();
        _cat.reset();
        fs::remove_all(_dir);
    }

    static offset_write commit(std::string group, std::string topic, int32_t p, int64_t offset,
                               std::optional<std::string> metadata = std::nullopt,
                               int64_t commit_ms = 1000) {
        return {
            offset_write::kind::commit,
            {std::move(group), std::move(topic), p, offset, 7, std::move(metadata), commit_ms, -1}};
    }
    std::vector<stored_offset> load() {
        auto rows = _store->load();
        EXPECT_TRUE(rows.ok()) << rows.err().message;
        auto out = rows.ok() ? *rows : std::vector<stored_offset>{};
        std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
            return std::tie(a.group_id, a.topic, a.partition) <
                   std::tie(b.group_id, b.topic, b.partition);
        });
        return out;
    }

    fs::path _dir;
    std::unique_ptr<catalog> _cat;
    std::unique_ptr<local_offset_store> _store;
};

TEST_F(offset_store_test, applied_commits_load_back_with_every_field) {
    std::vector<offset_write> w = {commit("g1", "orders", 0, 42, std::string("meta")),
                                   commit("g1", "orders", 1, 7, std::string("")),
                                   commit("g2", "payments", 3, 1000000000000)};
    w[2].row.expire_ms = 5555;
    ASSERT_TRUE(_store->apply(w).ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].group_id, "g1");
    EXPECT_EQ(rows[0].topic, "orders");
    EXPECT_EQ(rows[0].partition, 0);
    EXPECT_EQ(rows[0].offset, 42);
    EXPECT_EQ(rows[0].leader_epoch, 7);
    EXPECT_EQ(rows[0].metadata, std::optional<std::string>("meta"));
    EXPECT_EQ(rows[0].commit_ms, 1000);
    EXPECT_EQ(rows[0].expire_ms, -1);
    EXPECT_EQ(rows[1].metadata, std::optional<std::string>(""));  // empty is not null
    EXPECT_EQ(rows[2].metadata, std::nullopt);
    EXPECT_EQ(rows[2].offset, 1000000000000);
    EXPECT_EQ(rows[2].expire_ms, 5555);
}

TEST_F(offset_store_test, a_later_commit_replaces_the_row) {
    ASSERT_TRUE(_store->apply(std::vector{commit("g", "orders", 2, 10)}).ok());
    ASSERT_TRUE(_store->apply(std::vector{commit("g", "orders", 2, 20, std::nullopt, 2000)}).ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].offset, 20);
    EXPECT_EQ(rows[0].commit_ms, 2000);
}

TEST_F(offset_store_test, commit_for_a_missing_topic_is_dropped) {
    ASSERT_TRUE(
        _store->apply(std::vector{commit("g", "gone", 0, 1), commit("g", "orders", 0, 2)}).ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].topic, "orders");
}

TEST_F(offset_store_test, erase_kinds) {
    ASSERT_TRUE(_store
                    ->apply(std::vector{commit("a", "orders", 0, 1), commit("a", "orders", 1, 1),
                                        commit("a", "payments", 0, 1, std::nullopt, 500),
                                        commit("b", "orders", 0, 1)})
                    .ok());
    offset_write erase{offset_write::kind::erase, {"a", "orders", 1}};
    // Recommitted since the sweep looked (commit_ms 500 != 400): kept.
    offset_write stale{offset_write::kind::erase_if_unchanged, {"a", "payments", 0}};
    stale.row.commit_ms = 400;
    ASSERT_TRUE(_store->apply(std::vector{erase, stale}).ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0].partition, 0);
    EXPECT_EQ(rows[1].topic, "payments");

    offset_write unchanged{offset_write::kind::erase_if_unchanged, {"a", "payments", 0}};
    unchanged.row.commit_ms = 500;
    offset_write group{offset_write::kind::erase_group, {"b"}};
    ASSERT_TRUE(_store->apply(std::vector{unchanged, group}).ok());
    rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].group_id, "a");
    EXPECT_EQ(rows[0].topic, "orders");
}

TEST_F(offset_store_test, deleting_a_topic_deletes_its_offsets) {
    ASSERT_TRUE(_store
                    ->apply(std::vector{commit("g", "orders", 0, 1), commit("g", "payments", 0, 1),
                                        commit("h", "orders", 3, 9)})
                    .ok());
    ASSERT_TRUE(_cat->delete_topic("orders").ok());
    auto rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].topic, "payments");
}

TEST_F(offset_store_test, offsets_survive_reopening) {
    ASSERT_TRUE(_store->apply(std::vector{commit("g", "orders", 1, 77, std::string("m"))}).ok());
    _store.reset();
    _cat.reset();
    auto c = catalog::open(_dir / "catalog.db");
    ASSERT_TRUE(c.ok());
    auto s = local_offset_store::open(_dir / "catalog.db");
    ASSERT_TRUE(s.ok());
    _store = std::move(*s);
    auto rows = load();
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].offset, 77);
    EXPECT_EQ(rows[0].metadata, std::optional<std::string>("m"));
}

}  // namespace
}  // namespace sluice::catalog

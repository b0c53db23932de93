// ListTransactions' filters and the expiration of idle transactional ids.

#include "txn/txn_test_util.h"

namespace sluice::txn::test {
namespace {

using admin_test = fixture;

std::vector<std::string> ids(const std::vector<txn_metadata>& ts) {
    std::vector<std::string> out;
    for (const auto& t : ts) out.push_back(t.transactional_id);
    return out;
}

TEST_F(admin_test, list_filters_by_state_producer_id_and_duration) {
    auto a = init("a");
    auto b = init("b");
    auto c = init("c");
    ASSERT_EQ(add("a", a), txn_error::none);
    now += 5000;
    ASSERT_EQ(add("b", b), txn_error::none);
    ASSERT_TRUE(end("b", b, true).has_value());  // b: CompleteCommit, c: Empty
    now += 1000;

    EXPECT_EQ(ids(coord->list({})), (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(ids(coord->list({{txn_state::ongoing}, {}, -1})), std::vector<std::string>{"a"});
    EXPECT_EQ(ids(coord->list({{txn_state::empty, txn_state::complete_commit}, {}, -1})),
              (std::vector<std::string>{"b", "c"}));
    EXPECT_EQ(ids(coord->list({{}, {c.producer_id, 999}, -1})), std::vector<std::string>{"c"});
    // a has been open 6000 ms; ids with nothing open never pass a duration filter.
    EXPECT_EQ(ids(coord->list({{}, {}, 5999})), std::vector<std::string>{"a"});
    EXPECT_TRUE(coord->list({{}, {}, 6000}).empty());
    EXPECT_EQ(ids(coord->list({{}, {}, 0})), std::vector<std::string>{"a"});
}

TEST_F(admin_test, idle_ids_expire_durably_open_ones_do_not) {
    id_expiration_ms = 10000;
    coord = make();
    auto idle = init("idle");
    auto done = init("done");
    auto open = init("open");
    ASSERT_EQ(add("done", done), txn_error::none);
    ASSERT_TRUE(end("done", done, false).has_value());
    ASSERT_EQ(add("open", open), txn_error::none);

    now += 10000;
    EXPECT_EQ(coord->remove_expired_ids(), 0u);  // not longer than the expiration yet
    now += 1;
    EXPECT_EQ(coord->remove_expired_ids(), 2u);
    EXPECT_EQ(coord->find("idle"), nullptr);
    EXPECT_EQ(coord->find("done"), nullptr);
    EXPECT_FALSE(store.rows.contains("idle"));
    EXPECT_FALSE(store.rows.contains("done"));
    // An open transaction is never forgotten (expire() aborts it at its timeout).
    ASSERT_NE(coord->find("open"), nullptr);
    EXPECT_TRUE(store.rows.contains("open"));

    // The old producer id is gone: its requests are refused, and the id starts afresh
    // with a new producer id.
    EXPECT_EQ(add("idle", idle), txn_error::invalid_producer_id_mapping);
    auto again = init("idle");
    EXPECT_EQ(again.error, txn_error::none);
    EXPECT_NE(again.producer_id, idle.producer_id);
    EXPECT_EQ(again.producer_epoch, 0);

    // After a restart the forgotten ids stay forgotten.
    coord = make();
    ASSERT_TRUE(coord->recover());
    EXPECT_EQ(ids(coord->all()), (std::vector<std::string>{"idle", "open"}));
}

TEST_F(admin_test, an_id_in_use_is_kept) {
    id_expiration_ms = 10000;
    coord = make();
    auto p = init("app");
    for (int i = 0; i < 3; ++i) {
        now += 6000;
        ASSERT_EQ(add("app", p), txn_error::none);
        auto e = end("app", p, true);
        ASSERT_TRUE(e.has_value());
        EXPECT_EQ(coord->remove_expired_ids(), 0u);
    }
    EXPECT_NE(coord->find("app"), nullptr);
}

TEST_F(admin_test, a_failed_erase_keeps_the_id) {
    id_expiration_ms = 1000;
    coord = make();
    init("app");
    now += 2000;
    store.fail_erase = true;
    EXPECT_EQ(coord->remove_expired_ids(), 0u);
    EXPECT_NE(coord->find("app"), nullptr);
    store.fail_erase = false;
    EXPECT_EQ(coord->remove_expired_ids(), 1u);
}

}  // namespace
}  // namespace sluice::txn::test

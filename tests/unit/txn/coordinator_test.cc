// InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and recovery.

#include "txn/txn_test_util.h"

namespace sluice::txn::test {
namespace {

using coord_test = fixture;

TEST_F(coord_test, new_transactional_id_gets_an_id_and_epoch_zero_durably) {
    auto a = init("app");
    EXPECT_EQ(a.error, txn_error::none);
    EXPECT_EQ(a.producer_id, 100);
    EXPECT_EQ(a.producer_epoch, 0);
    ASSERT_TRUE(store.rows.contains("app"));
    EXPECT_EQ(store.rows["app"].state, txn_state::empty);
    EXPECT_EQ(store.rows["app"].timeout_ms, 10000);
}

TEST_F(coord_test, timeout_outside_bounds_is_refused) {
    EXPECT_EQ(init("app", -1, -1, 0).error, txn_error::invalid_transaction_timeout);
    EXPECT_EQ(init("app", -1, -1, 60001).error, txn_error::invalid_transaction_timeout);
    EXPECT_FALSE(store.rows.contains("app"));
    EXPECT_EQ(init("app", -1, -1, 60000).error, txn_error::none);
}

TEST_F(coord_test, second_instance_bumps_epoch_and_fences_the_first) {
    auto first = init("app");
    auto second = init("app");
    EXPECT_EQ(second.producer_id, first.producer_id);
    EXPECT_EQ(second.producer_epoch, 1);
    EXPECT_EQ(add("app", first), txn_error::producer_fenced);
    EXPECT_EQ(add("app", second), txn_error::none);
    EXPECT_EQ(end("app", first, true)->error, txn_error::producer_fenced);
}

TEST_F(coord_test, init_aborts_the_ongoing_transaction_of_the_old_instance) {
    auto first = init("app");
    ASSERT_EQ(add("app", first, {{"t", 0}, {"t", 1}}), txn_error::none);
    // The abort goes first (markers with a bumped epoch); the client retries.
    EXPECT_EQ(init("app").error, txn_error::concurrent_transactions);
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_FALSE(parts.calls[0].commit);
    EXPECT_EQ(parts.calls[0].t.producer_epoch, 1);  // fenced: the markers' epoch
    EXPECT_EQ(parts.calls[0].t.partitions.size(), 2u);
    EXPECT_EQ(coord->find("app")->state, txn_state::complete_abort);
    auto second = init("app");
    EXPECT_EQ(second.error, txn_error::none);
    EXPECT_EQ(second.producer_epoch, 2);
}

TEST_F(coord_test, kip360_retry_of_a_bump_returns_the_same_epoch) {
    auto a = init("app");
    auto b = init("app", a.producer_id, a.producer_epoch);
    EXPECT_EQ(b.producer_epoch, 1);
    // The answer was lost: the same request again gets the same epoch (KAFKA-19367).
    auto c = init("app", a.producer_id, a.producer_epoch);
    EXPECT_EQ(c.error, txn_error::none);
    EXPECT_EQ(c.producer_epoch, 1);
    // An epoch that is neither current nor the last is fenced, as is another id.
    EXPECT_EQ(init("app", a.producer_id, 7).error, txn_error::producer_fenced);
    EXPECT_EQ(init("app", 999, 0).error, txn_error::producer_fenced);
}

TEST_F(coord_test, exhausted_epoch_moves_to_a_new_producer_id) {
    auto a = init("app");
    store.rows["app"].producer_epoch = max_epoch - 1;
    coord = make();
    ASSERT_TRUE(coord->recover());
    auto b = init("app");
    EXPECT_EQ(b.error, txn_error::none);
    EXPECT_NE(b.producer_id, a.producer_id);
    EXPECT_EQ(b.producer_epoch, 0);
}

TEST_F(coord_test, add_partitions_checks_the_producer_and_stores_them) {
    auto a = init("app");
    EXPECT_EQ(coord->add_partitions("nope", a.producer_id, 0, {{"t", 0}}),
              txn_error::invalid_producer_id_mapping);
    EXPECT_EQ(coord->add_partitions("app", a.producer_id + 1, 0, {{"t", 0}}),
              txn_error::invalid_producer_id_mapping);
    EXPECT_EQ(add("app", a, {{"t", 1}, {"t", 0}}), txn_error::none);
    EXPECT_EQ(store.rows["app"].state, txn_state::ongoing);
    EXPECT_EQ(store.rows["app"].start_ms, now);
    std::vector<topic_partition> want{{"t", 0}, {"t", 1}};
    EXPECT_EQ(store.rows["app"].partitions, want);
    // Adding what is there already writes nothing.
    int puts = store.puts;
    EXPECT_EQ(add("app", a, {{"t", 0}}), txn_error::none);
    EXPECT_EQ(store.puts, puts);
}

TEST_F(coord_test, failed_store_write_changes_nothing) {
    auto a = init("app");
    store.fail = true;
    EXPECT_EQ(add("app", a), txn_error::not_available);
    EXPECT_EQ(coord->find("app")->state, txn_state::empty);
    EXPECT_TRUE(coord->find("app")->partitions.empty());
}

TEST_F(coord_test, verify_partitions_is_kip890_part1) {
    auto a = init("app");
    EXPECT_EQ(coord->verify_partitions("app", a.producer_id, 0, {{"t", 0}}),
              txn_error::not_in_transaction);
    ASSERT_EQ(add("app", a), txn_error::none);
    EXPECT_EQ(coord->verify_partitions("app", a.producer_id, 0, {{"t", 0}}), txn_error::none);
    EXPECT_EQ(coord->verify_partitions("app", a.producer_id, 0, {{"t", 1}}),
              txn_error::not_in_transaction);
    EXPECT_EQ(coord->verify_partitions("app", a.producer_id, 1, {{"t", 0}}),
              txn_error::producer_fenced);
}

TEST_F(coord_test, txn_offsets_need_the_group_unless_tv2) {
    auto a = init("app");
    pending_offset o{"", {"in", 0}, 42, -1, "m", now};
    EXPECT_EQ(coord->commit_offsets("app", a.producer_id, 0, "g", {o}, false),
              txn_error::not_in_transaction);
    ASSERT_EQ(coord->add_group("app", a.producer_id, 0, "g"), txn_error::none);
    EXPECT_EQ(coord->commit_offsets("app", a.producer_id, 0, "g", {o}, false), txn_error::none);
    EXPECT_TRUE(coord->has_pending_offset("g", {"in", 0}));
    EXPECT_FALSE(coord->has_pending_offset("g", {"in", 1}));
    EXPECT_FALSE(coord->has_pending_offset("other", {"in", 0}));
    ASSERT_EQ(store.rows["app"].offsets.size(), 1u);
    EXPECT_EQ(store.rows["app"].offsets[0].group_id, "g");
    // TV2 (TxnOffsetCommit v5) adds the group itself.
    EXPECT_EQ(coord->commit_offsets("app", a.producer_id, 0, "g2", {o}, true), txn_error::none);
    EXPECT_TRUE(coord->find("app")->has_group("g2"));
}

TEST_F(coord_test, prepared_transaction_is_completed_at_recovery) {
    auto a = init("app");
    ASSERT_EQ(add("app", a), txn_error::none);
    parts.hold = true;
    auto pending = end("app", a, true);
    EXPECT_FALSE(pending.has_value());  // waits for the markers
    EXPECT_EQ(store.rows["app"].state, txn_state::prepare_commit);
    // The broker dies before the markers are durable: a new coordinator on the same
    // store writes them again and completes the commit.
    parts.held.clear();
    parts.hold = false;
    parts.calls.clear();
    coord = make();
    ASSERT_TRUE(coord->recover());
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_TRUE(parts.calls[0].commit);
    EXPECT_EQ(store.rows["app"].state, txn_state::complete_commit);
    EXPECT_TRUE(store.rows["app"].partitions.empty());
}

TEST_F(coord_test, ongoing_transaction_survives_a_restart) {
    auto a = init("app");
    ASSERT_EQ(add("app", a, {{"t", 3}}), txn_error::none);
    coord = make();
    ASSERT_TRUE(coord->recover());
    EXPECT_TRUE(parts.calls.empty());
    EXPECT_EQ(coord->verify_partitions("app", a.producer_id, 0, {{"t", 3}}), txn_error::none);
    EXPECT_EQ(end("app", a, false)->error, txn_error::none);
}

TEST_F(coord_test, timed_out_transaction_is_aborted_and_its_producer_fenced) {
    auto a = init("app", -1, -1, 5000);
    ASSERT_EQ(add("app", a), txn_error::none);
    now += 4000;
    EXPECT_EQ(coord->expire(), 0u);
    now += 2000;
    EXPECT_EQ(coord->expire(), 1u);
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_FALSE(parts.calls[0].commit);
    EXPECT_EQ(coord->find("app")->state, txn_state::complete_abort);
    EXPECT_EQ(coord->find("app")->producer_epoch, 1);
    EXPECT_EQ(end("app", a, true)->error, txn_error::producer_fenced);
}

}  // namespace
}  // namespace sluice::txn::test

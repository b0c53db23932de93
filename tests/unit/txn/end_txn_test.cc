// EndTxn in both transaction versions, with Kafka's fixed bugs as cases.

#include "txn/txn_test_util.h"

namespace sluice::txn::test {
namespace {

using end_test = fixture;

TEST_F(end_test, tv1_commit_writes_markers_then_completes) {
    auto a = init("app");
    ASSERT_EQ(add("app", a, {{"t", 0}, {"u", 2}}), txn_error::none);
    pending_offset o{"", {"in", 0}, 42, -1, "", now};
    ASSERT_EQ(coord->add_group("app", a.producer_id, 0, "g"), txn_error::none);
    ASSERT_EQ(coord->commit_offsets("app", a.producer_id, 0, "g", {o}, false), txn_error::none);
    parts.hold = true;
    auto r = end("app", a, true);
    EXPECT_FALSE(r);
    EXPECT_EQ(store.rows["app"].state, txn_state::prepare_commit);
    // While the markers are written: a retry waits, the opposite is refused, adds wait.
    EXPECT_EQ(end("app", a, true)->error, txn_error::concurrent_transactions);
    EXPECT_EQ(end("app", a, false)->error, txn_error::invalid_txn_state);
    EXPECT_EQ(add("app", a), txn_error::concurrent_transactions);
    EXPECT_EQ(init("app").error, txn_error::concurrent_transactions);
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_TRUE(parts.calls[0].commit);
    EXPECT_EQ(parts.calls[0].t.producer_epoch, 0);  // TV1: markers at the same epoch
    EXPECT_EQ(parts.calls[0].t.offsets.size(), 1u);
    EXPECT_TRUE(coord->has_pending_offset("g", {"in", 0}));
    parts.complete_held();
    EXPECT_EQ(store.rows["app"].state, txn_state::complete_commit);
    EXPECT_FALSE(coord->has_pending_offset("g", {"in", 0}));
    // A retry of the commit is answered; an abort now is not allowed.
    EXPECT_EQ(end("app", a, true)->error, txn_error::none);
    EXPECT_EQ(end("app", a, false)->error, txn_error::invalid_txn_state);
}

TEST_F(end_test, tv1_end_of_empty_transaction_is_invalid) {
    auto a = init("app");
    EXPECT_EQ(end("app", a, true)->error, txn_error::invalid_txn_state);
}

TEST_F(end_test, failed_markers_stay_prepared_and_expire_retries) {
    auto a = init("app");
    ASSERT_EQ(add("app", a), txn_error::none);
    parts.hold = true;
    std::optional<producer_answer> r;
    coord->end_txn("app", a.producer_id, 0, false, false, [&](producer_answer x) { r = x; });
    parts.complete_held(error{errc::io_error, "disk"});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error, txn_error::not_available);
    EXPECT_EQ(coord->find("app")->state, txn_state::prepare_abort);
    parts.hold = false;
    coord->expire();
    EXPECT_EQ(coord->find("app")->state, txn_state::complete_abort);
    EXPECT_EQ(parts.calls.size(), 2u);
}

TEST_F(end_test, tv2_bumps_the_epoch_at_every_end) {
    auto a = init("app");
    ASSERT_EQ(coord->add_partitions("app", a.producer_id, 0, {{"t", 0}}, true), txn_error::none);
    auto r = end("app", a, true, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error, txn_error::none);
    EXPECT_EQ(r->producer_id, a.producer_id);
    EXPECT_EQ(r->producer_epoch, 1);
    EXPECT_EQ(parts.calls[0].t.producer_epoch, 1);  // markers carry the new epoch
    // A retry of that EndTxn (its answer lost) gets the same answer.
    auto retry = end("app", a, true, true);
    EXPECT_EQ(retry->error, txn_error::none);
    EXPECT_EQ(retry->producer_epoch, 1);
    EXPECT_EQ(end("app", a, false, true)->error, txn_error::invalid_txn_state);
}

TEST_F(end_test, tv2_retry_while_the_markers_are_written_waits_for_them) {
    // The broker was killed while writing the markers; after the restart the client's
    // retry (the old epoch) comes while they are written again: it waits, not fenced.
    auto a = init("app");
    ASSERT_EQ(add("app", a, {{"t", 0}}), txn_error::none);
    parts.hold = true;
    std::optional<producer_answer> first;  // outlives the held completion that answers it
    coord->end_txn("app", a.producer_id, a.producer_epoch, true, true,
                   [&](producer_answer x) { first = x; });
    EXPECT_FALSE(first);
    auto waiting = end("app", a, true, true);
    ASSERT_TRUE(waiting);
    EXPECT_EQ(waiting->error, txn_error::concurrent_transactions);
    parts.complete_held();
    ASSERT_TRUE(first);
    EXPECT_EQ(first->error, txn_error::none);
    auto retry = end("app", a, true, true);
    ASSERT_TRUE(retry);
    EXPECT_EQ(retry->error, txn_error::none);
    EXPECT_EQ(retry->producer_epoch, 1);
}

TEST_F(end_test, tv2_late_end_txn_does_not_end_the_next_transaction) {
    // KAFKA-17754: an EndTxn(abort) retried late must not land on the next transaction.
    auto a = init("app");
    ASSERT_EQ(coord->add_partitions("app", a.producer_id, 0, {{"t", 0}}, true), txn_error::none);
    auto b = *end("app", a, false, true);
    ASSERT_EQ(coord->add_partitions("app", b.producer_id, b.producer_epoch, {{"t", 0}}, true),
              txn_error::none);
    EXPECT_EQ(coord->find("app")->state, txn_state::ongoing);
    EXPECT_EQ(parts.calls.size(), 1u);
}

TEST_F(end_test, tv2_empty_transaction_commits_with_an_epoch_bump) {
    // KAFKA-18401: committing a transaction with nothing in it.
    auto a = init("app");
    auto r = end("app", a, true, true);
    EXPECT_EQ(r->error, txn_error::none);
    EXPECT_EQ(r->producer_epoch, 1);
    EXPECT_TRUE(parts.calls.empty());
    EXPECT_EQ(store.rows["app"].state, txn_state::complete_commit);
}

TEST_F(end_test, tv2_epoch_overflow_moves_to_a_new_producer_id) {
    // KAFKA-18660: the last epoch of an id ends its transaction with the old id's markers.
    auto a = init("app");
    store.rows["app"].producer_epoch = max_epoch - 1;
    coord = make();
    ASSERT_TRUE(coord->recover());
    producer_answer cur{txn_error::none, a.producer_id, static_cast<int16_t>(max_epoch - 1)};
    ASSERT_EQ(coord->add_partitions("app", cur.producer_id, cur.producer_epoch, {{"t", 0}}, true),
              txn_error::none);
    auto r = end("app", cur, true, true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error, txn_error::none);
    EXPECT_NE(r->producer_id, a.producer_id);
    EXPECT_EQ(r->producer_epoch, 0);
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_EQ(parts.calls[0].t.producer_id, a.producer_id);
    EXPECT_EQ(parts.calls[0].t.producer_epoch, max_epoch);
    // The retry is recognised across the rotation.
    auto retry = end("app", cur, true, true);
    EXPECT_EQ(retry->error, txn_error::none);
    EXPECT_EQ(retry->producer_id, r->producer_id);
    // And the new id works.
    EXPECT_EQ(coord->add_partitions("app", r->producer_id, 0, {{"t", 0}}, true), txn_error::none);
}

TEST_F(end_test, tv2_timeout_abort_lets_the_producer_abort_then_continue) {
    auto a = init("app", -1, -1, 1000);
    ASSERT_EQ(coord->add_partitions("app", a.producer_id, 0, {{"t", 0}}, true), txn_error::none);
    now += 2000;
    EXPECT_EQ(coord->expire(), 1u);
    // Its abortTransaction with the old epoch is the retry of what happened.
    auto r = end("app", a, false, true);
    EXPECT_EQ(r->error, txn_error::none);
    EXPECT_EQ(r->producer_epoch, 1);
    // A commit with the old epoch is not.
    EXPECT_EQ(end("app", a, true, true)->error, txn_error::invalid_txn_state);
}

}  // namespace
}  // namespace sluice::txn::test

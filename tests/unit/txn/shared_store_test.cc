// Coordinators of several brokers over one store (shared mode): each reads an id afresh
// before acting on it; only the owner completes a transaction found prepared, expires and
// lists.

#include "txn_test_util.h"

namespace sluice::txn::test {
namespace {

struct shared_fixture : fixture {
    std::string owner = "a";  // which coordinator owns every id
    std::unique_ptr<coordinator> a = make_shared("a");
    std::unique_ptr<coordinator> b = make_shared("b");

    std::unique_ptr<coordinator> make_shared(std::string name) {
        services svc;
        svc.store = &store;
        svc.parts = &parts;
        svc.allocate_producer_id = [this]() -> result<int64_t> { return next_id++; };
        svc.wall_ms = [this] { return now; };
        svc.shared_store = true;
        svc.owns = [this, name](const std::string&) { return owner == name; };
        return std::make_unique<coordinator>(settings{60000, id_expiration_ms}, std::move(svc));
    }
    producer_answer init_at(coordinator& c, const std::string& id) {
        producer_answer out{txn_error::not_available};
        c.init_producer_id(id, 10000, -1, -1, [&](producer_answer x) { out = x; });
        return out;
    }
};

TEST_F(shared_fixture, ChangesThroughAnotherBrokerAreSeenByTheCoordinator) {
    auto p = init_at(*a, "x");
    ASSERT_EQ(p.error, txn_error::none);
    // Produce through broker b adds a partition; TxnOffsetCommit through b an offset.
    EXPECT_EQ(b->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 1}}, true),
              txn_error::none);
    pending_offset o;
    o.tp = {"t", 1};
    o.offset = 7;
    EXPECT_EQ(b->commit_offsets("x", p.producer_id, p.producer_epoch, "g", {o}, true),
              txn_error::none);
    EXPECT_TRUE(b->has_pending_offset("g", {"t", 1}));
    std::optional<producer_answer> done;
    a->end_txn("x", p.producer_id, p.producer_epoch, true, true,
               [&](producer_answer x) { done = x; });
    ASSERT_TRUE(done);
    EXPECT_EQ(done->error, txn_error::none);
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_EQ(parts.calls[0].t.partitions, (std::vector<topic_partition>{{"t", 1}}));
    ASSERT_EQ(parts.calls[0].t.offsets.size(), 1u);
    EXPECT_EQ(parts.calls[0].t.offsets[0].offset, 7);
    EXPECT_EQ(store.rows.at("x").state, txn_state::complete_commit);
    // b, the group's coordinator, still holds the offset as pending: it reads x again.
    EXPECT_FALSE(b->has_pending_offset("g", {"t", 1}));
}

TEST_F(shared_fixture, ANewOwnerCompletesWhatItFindsPreparedAndAbortsTheOpenOne) {
    parts.hold = true;  // a's completion never ends: a died while writing markers
    auto p = init_at(*a, "x");
    ASSERT_EQ(a->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 0}}), txn_error::none);
    a->end_txn("x", p.producer_id, p.producer_epoch, true, false, [](producer_answer) {});
    ASSERT_EQ(store.rows.at("x").state, txn_state::prepare_commit);
    owner = "b";
    parts.hold = false;
    parts.calls.clear();
    b->refresh_all();  // b's expiry tick
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_TRUE(parts.calls[0].commit);
    EXPECT_EQ(store.rows.at("x").state, txn_state::complete_commit);

    // An open transaction: the next instance's InitProducerId at b aborts it, fencing.
    auto q = init_at(*b, "y");
    ASSERT_EQ(b->add_partitions("y", q.producer_id, q.producer_epoch, {{"t", 0}}), txn_error::none);
    EXPECT_EQ(init_at(*b, "y").error, txn_error::concurrent_transactions);
    EXPECT_FALSE(parts.calls.back().commit);
    auto r = init_at(*b, "y");
    EXPECT_EQ(r.error, txn_error::none);
    EXPECT_EQ(r.producer_epoch, q.producer_epoch + 2);
}

TEST_F(shared_fixture, OnlyTheOwnerExpiresAndLists) {
    auto p = init_at(*a, "x");
    ASSERT_EQ(a->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 0}}), txn_error::none);
    b->refresh_all();
    now += 20000;  // past the 10 s timeout
    EXPECT_EQ(b->expire(), 0u);
    EXPECT_TRUE(b->list({}).empty());
    EXPECT_EQ(a->list({}).size(), 1u);
    EXPECT_EQ(a->expire(), 1u);
    EXPECT_EQ(store.rows.at("x").state, txn_state::complete_abort);
}

// A zombie producer (the old epoch) acting through broker b while its successor's
// InitProducerId at the coordinator a lands between b's read and b's write: b's write is
// refused, b reads again and fences the zombie; the successor's state stays.
TEST_F(shared_fixture, AZombieRacingItsSuccessorThroughAnotherBrokerIsFenced) {
    auto zombie = init_at(*a, "x");
    ASSERT_EQ(a->add_partitions("x", zombie.producer_id, zombie.producer_epoch, {{"t", 0}}, true),
              txn_error::none);
    producer_answer successor{txn_error::not_available};
    store.before_put = [&] {
        EXPECT_EQ(init_at(*a, "x").error, txn_error::concurrent_transactions);  // aborts
        successor = init_at(*a, "x");
    };
    EXPECT_EQ(b->add_partitions("x", zombie.producer_id, zombie.producer_epoch, {{"t", 1}}, true),
              txn_error::producer_fenced);
    EXPECT_EQ(store.lost, 1);
    ASSERT_EQ(successor.error, txn_error::none);
    const auto& row = store.rows.at("x");
    EXPECT_EQ(row.producer_epoch, successor.producer_epoch);
    EXPECT_EQ(row.state, txn_state::empty);
    EXPECT_TRUE(row.partitions.empty());
    // The zombie's transaction was aborted, on the partition it had; nothing committed.
    ASSERT_EQ(parts.calls.size(), 1u);
    EXPECT_FALSE(parts.calls[0].commit);
    EXPECT_EQ(parts.calls[0].t.partitions, (std::vector<topic_partition>{{"t", 0}}));
    std::optional<producer_answer> end;
    a->end_txn("x", zombie.producer_id, zombie.producer_epoch, true, true,
               [&](producer_answer x) { end = x; });
    ASSERT_TRUE(end);
    EXPECT_EQ(end->error, txn_error::producer_fenced);
    EXPECT_EQ(parts.calls.size(), 1u);
}

// The zombie's TxnOffsetCommit at the group's coordinator b, racing the successor's fence:
// no pending offset of the zombie's survives.
TEST_F(shared_fixture, AZombiesOffsetsRacingTheFenceAreRefused) {
    auto zombie = init_at(*a, "x");
    ASSERT_EQ(a->add_partitions("x", zombie.producer_id, zombie.producer_epoch, {{"t", 0}}, true),
              txn_error::none);
    store.before_put = [&] { init_at(*a, "x"); };
    pending_offset o;
    o.tp = {"t", 0};
    o.offset = 99;
    EXPECT_EQ(b->commit_offsets("x", zombie.producer_id, zombie.producer_epoch, "g", {o}, true),
              txn_error::producer_fenced);
    EXPECT_TRUE(store.rows.at("x").offsets.empty());
    EXPECT_EQ(store.rows.at("x").producer_epoch, zombie.producer_epoch + 1);
    EXPECT_FALSE(b->has_pending_offset("g", {"t", 0}));
}

// One producer's Produce requests at two brokers add partitions at once (TV2's implicit
// add): the write that loses the race is made again from the record read afresh.
TEST_F(shared_fixture, PartitionsAddedAtTwoBrokersAtOnceAreAllKept) {
    auto p = init_at(*a, "x");
    store.before_put = [&] {
        EXPECT_EQ(a->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 2}}, true),
                  txn_error::none);
    };
    EXPECT_EQ(b->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 1}}, true),
              txn_error::none);
    EXPECT_EQ(store.lost, 1);
    EXPECT_EQ(store.rows.at("x").partitions, (std::vector<topic_partition>{{"t", 1}, {"t", 2}}));
    std::optional<producer_answer> end;
    a->end_txn("x", p.producer_id, p.producer_epoch, true, true,
               [&](producer_answer x) { end = x; });
    ASSERT_TRUE(end);
    EXPECT_EQ(end->error, txn_error::none);
    EXPECT_EQ(parts.calls.back().t.partitions, (std::vector<topic_partition>{{"t", 1}, {"t", 2}}));
}

// An id the owner finds idle is not forgotten when another broker used it meanwhile.
TEST_F(shared_fixture, AnIdUsedElsewhereIsNotForgotten) {
    auto p = init_at(*a, "x");
    now += id_expiration_ms + 1;
    ASSERT_EQ(b->add_partitions("x", p.producer_id, p.producer_epoch, {{"t", 1}}, true),
              txn_error::none);  // a has not read it since
    EXPECT_EQ(a->remove_expired_ids(), 0u);
    EXPECT_TRUE(store.rows.contains("x"));
}

}  // namespace
}  // namespace sluice::txn::test

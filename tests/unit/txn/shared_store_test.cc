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

}  // namespace
}  // namespace sluice::txn::test

// Group coordinator epochs (shared/group_fence.h), against PostgreSQL (SLUICE_TEST_PG_URL,
// as store_backends.h): two brokers' stores on one catalog; once one takes a group, the
// other's writes of it are refused and change nothing, whichever store they go to.

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "shared/group_fence.h"
#include "shared/pg_group_store.h"
#include "shared/pg_offset_store.h"
#include "shared/pg_refresher.h"
#include "shared/pg_topic_store.h"
#include "shared/pg_txn_store.h"
#include "store_backends.h"
#include "txn/types.h"

namespace sluice::shared::testing {
namespace {

using catalog::offset_write;
using catalog::stored_offset;

class group_fence_test : public pg_catalog_test {
  protected:
    struct broker {
        std::shared_ptr<group_fence> fence;
        std::unique_ptr<pg_offset_store> offsets;
        std::unique_ptr<pg_group_store> groups;
        std::unique_ptr<pg_txn_store> txns;
    };
    void SetUp() override {
        pg_catalog_test::SetUp();
        if (IsSkipped() || HasFatalFailure()) return;
        auto topics = pg_topic_store::open(_cfg);
        ASSERT_TRUE(topics.ok()) << topics.err().message;
        catalog::topic_info t;
        t.name = "orders";
        t.id = catalog::random_uuid();
        t.partitions = 1;
        ASSERT_TRUE((*topics)->create_topic(t).ok());
        for (int32_t id : {0, 1}) {
            broker& b = _b[id];
            b.fence = std::make_shared<group_fence>(id, _cfg);
            auto o = pg_offset_store::open(_cfg, b.fence);
            ASSERT_TRUE(o.ok()) << o.err().message;
            b.offsets = std::move(*o);
            auto g = pg_group_store::open(_cfg, b.fence);
            ASSERT_TRUE(g.ok()) << g.err().message;
            b.groups = std::move(*g);
            auto x = pg_txn_store::open(_cfg, b.fence);
            ASSERT_TRUE(x.ok()) << x.err().message;
            b.txns = std::move(*x);
        }
    }
    // Broker `id` commits `offset` for group g; the groups the store refused.
    catalog::fenced_groups commit(int32_t id, const std::string& g, int64_t offset,
                                  bool by_coordinator = true) {
        stored_offset row;
        row.group_id = g;
        row.topic = "orders";
        row.offset = offset;
        row.commit_ms = 1000 + offset;
        std::vector<offset_write> w{{offset_write::kind::commit, row, by_coordinator}};
        auto r = _b[id].offsets->apply(w);
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() ? *r : catalog::fenced_groups{};
    }
    std::map<std::string, int64_t> committed() {
        std::map<std::string, int64_t> out;
        auto rows = _b[0].offsets->load();
        EXPECT_TRUE(rows.ok());
        if (rows.ok())
            for (const auto& r : *rows) out[r.group_id] = r.offset;
        return out;
    }
    std::set<std::string> take(int32_t id, const std::set<std::string>& placed) {
        auto r = _b[id].fence->take([&](const std::string& g) { return placed.count(g) > 0; });
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() ? *r : std::set<std::string>{};
    }
    // The transaction "t" as broker `id` reads it.
    txn::txn_metadata read_txn(int32_t id) {
        auto t = _b[id].txns->load_one("t");
        EXPECT_TRUE(t.ok() && *t);
        return t.ok() && *t ? **t : txn::txn_metadata{};
    }
    int64_t txn_offsets_version() {
        auto db = connect();
        auto v = db->transact<int64_t>(isolation_level::read_committed, [](pg_transaction& tx) {
            return read_change_version(tx, "txn_offsets");
        });
        EXPECT_TRUE(v.ok());
        return v.ok() ? *v : -1;
    }
    std::map<int32_t, broker> _b;
};

txn::txn_metadata ongoing_txn(const std::string& group, int64_t offset) {
    txn::txn_metadata t;
    t.transactional_id = "t";
    t.producer_id = 4000;
    t.producer_epoch = 0;
    t.timeout_ms = 60000;
    t.state = txn::txn_state::ongoing;
    t.add_group(group);
    t.put_offset({group, {"orders", 0}, offset, -1, std::nullopt, 2000 + offset});
    return t;
}

TEST_F(group_fence_test, the_old_coordinators_writes_are_refused_once_another_took_the_group) {
    // A new group: its first write takes it at epoch 1.
    EXPECT_TRUE(commit(0, "g", 10).empty());
    EXPECT_EQ(_b[0].fence->held("g"), 1);
    EXPECT_TRUE(commit(0, "g", 11).empty());
    // Broker 1 takes it (before it reads the group's state).
    EXPECT_EQ(take(1, {"g"}), std::set<std::string>{"g"});
    EXPECT_EQ(_b[1].fence->held("g"), 2);
    // A commit still queued at broker 0 lands after that: refused, nothing changed.
    EXPECT_EQ(commit(0, "g", 5), catalog::fenced_groups{"g"});
    EXPECT_FALSE(_b[0].fence->held("g").has_value());
    EXPECT_EQ(committed()["g"], 11);
    // The new coordinator's commits land.
    EXPECT_TRUE(commit(1, "g", 20).empty());
    EXPECT_EQ(committed()["g"], 20);
    // Group state is fenced the same way, group by group within one transaction.
    group::group_write put;
    put.group.group_id = "g";
    put.group.generation = 7;
    group::group_write other = put;
    other.group.group_id = "h";
    std::vector<group::group_write> ws{put, other};
    auto r = _b[0].groups->apply(ws);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(*r, std::set<std::string>{"g"});
    auto stored = _b[1].groups->load();
    ASSERT_TRUE(stored.ok());
    ASSERT_EQ(stored->size(), 1u);
    EXPECT_EQ((*stored)[0].group_id, "h");  // the new group h was taken by broker 0
    // A transaction coordinator's offsets are not the group coordinator's: not fenced.
    EXPECT_TRUE(commit(0, "g", 30, false).empty());
    EXPECT_EQ(committed()["g"], 30);
    // A group another broker made first is not taken by a write: refused.
    EXPECT_EQ(commit(1, "h", 1), catalog::fenced_groups{"h"});
}

TEST_F(group_fence_test, taking_keeps_what_is_held_and_moves_what_is_not) {
    EXPECT_TRUE(commit(0, "a", 1).empty());
    EXPECT_TRUE(commit(0, "b", 1).empty());
    // Broker 0 holds both already: nothing changes.
    EXPECT_TRUE(take(0, {"a", "b"}).empty());
    EXPECT_EQ(_b[0].fence->held("a"), 1);
    // Only the groups placed on broker 1 move; a group with offsets only is known too.
    EXPECT_EQ(take(1, {"b"}), std::set<std::string>{"b"});
    EXPECT_TRUE(commit(0, "a", 2).empty());
    EXPECT_EQ(commit(0, "b", 2), catalog::fenced_groups{"b"});
    // Taking back: epoch 3, and broker 1 is fenced in turn.
    EXPECT_EQ(take(0, {"a", "b"}), std::set<std::string>{"b"});
    EXPECT_EQ(_b[0].fence->held("b"), 3);
    EXPECT_EQ(commit(1, "b", 9), catalog::fenced_groups{"b"});
    EXPECT_TRUE(commit(0, "b", 4).empty());
    EXPECT_EQ(committed(), (std::map<std::string, int64_t>{{"a", 2}, {"b", 4}}));
}

TEST_F(group_fence_test, a_take_waits_for_a_write_that_checked_the_epoch_to_end) {
    EXPECT_TRUE(commit(0, "g", 1).empty());
    // A write of broker 0 in progress: it checked the epoch and holds the row's share lock.
    auto db = connect();
    ASSERT_NE(db, nullptr);
    std::promise<void> checked;
    std::promise<void> release;
    auto writer = std::async(std::launch::async, [&] {
        return fenced_write(*db, _b[0].fence.get(), {"g"},
                            [&](pg_transaction& tx, const std::set<std::string>& fenced) {
                                EXPECT_TRUE(fenced.empty());
                                checked.set_value();
                                release.get_future().wait();
                                auto r = tx.exec(
                                    "UPDATE sluice_group_offsets SET committed_offset = 2 "
                                    "WHERE group_id = 'g'");
                                return r ? result<void>{} : result<void>(r.err());
                            });
    });
    checked.get_future().wait();
    auto taker = std::async(std::launch::async, [&] { return take(1, {"g"}); });
    // The take blocks on the row until the write ends, so the write is ordered first and
    // the new coordinator's read (after its take) sees it.
    EXPECT_EQ(taker.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);
    release.set_value();
    auto w = writer.get();
    ASSERT_TRUE(w.ok()) << w.err().message;
    EXPECT_EQ(taker.get(), std::set<std::string>{"g"});
    EXPECT_EQ(committed()["g"], 2);
    EXPECT_EQ(commit(0, "g", 3), catalog::fenced_groups{"g"});
}

// TxnOffsetCommit at a group's coordinator adds the offsets to the transaction's record
// (put_by_group): once another broker took the group, the old coordinator's is refused.
TEST_F(group_fence_test, a_txn_offset_commit_at_the_old_coordinator_is_refused) {
    EXPECT_TRUE(commit(0, "g", 10).empty());
    auto stored = _b[0].txns->put_by_group(ongoing_txn("g", 11), "g");
    ASSERT_TRUE(stored.ok()) << stored.err().message;
    EXPECT_TRUE(*stored);
    EXPECT_EQ(take(1, {"g"}), std::set<std::string>{"g"});
    // Broker 0 has not learned of the move yet: its next TxnOffsetCommit is refused.
    auto t = read_txn(0);
    t.put_offset({"g", {"orders", 0}, 12, -1, std::nullopt, 2012});
    auto refused = _b[0].txns->put_by_group(t, "g");
    ASSERT_FALSE(refused.ok());
    EXPECT_EQ(refused.code(), errc::fenced);
    EXPECT_FALSE(_b[0].fence->held("g").has_value());
    auto now = read_txn(1);
    EXPECT_EQ(now.version, 1);
    ASSERT_EQ(now.offsets.size(), 1u);
    EXPECT_EQ(now.offsets[0].offset, 11);
    // The client asks the new coordinator, whose write lands.
    auto stored_there = _b[1].txns->put_by_group(t, "g");
    ASSERT_TRUE(stored_there.ok()) << stored_there.err().message;
    EXPECT_TRUE(*stored_there);
    EXPECT_EQ(read_txn(0).offsets.at(0).offset, 12);
    // A group no broker holds yet is taken by the TxnOffsetCommit's write, as by any.
    auto fresh = read_txn(1);
    fresh.add_group("new");
    EXPECT_TRUE(_b[1].txns->put_by_group(fresh, "new").value());
    EXPECT_EQ(_b[1].fence->held("new"), 1);
}

// The write that completes a commit makes the pending offsets committed; a second
// coordinator completing the same transaction (it read the prepared record too) writes
// nothing, so a commit made in between stays.
TEST_F(group_fence_test, a_transactions_offsets_are_committed_once) {
    EXPECT_TRUE(commit(0, "g", 10).empty());
    ASSERT_TRUE(_b[0].txns->put_by_group(ongoing_txn("g", 40), "g").value());
    auto prepared = read_txn(0);
    prepared.state = txn::txn_state::prepare_commit;
    ASSERT_TRUE(_b[0].txns->put(prepared).value());
    EXPECT_EQ(committed()["g"], 10);  // pending until the commit completes
    const int64_t announced = txn_offsets_version();
    auto complete = [](txn::txn_metadata t) {
        t.state = txn::txn_state::complete_commit;
        t.offsets.clear();
        t.groups.clear();
        return t;
    };
    auto seen_by_0 = read_txn(0);
    auto seen_by_1 = read_txn(1);
    ASSERT_EQ(seen_by_1.offsets.size(), 1u);
    ASSERT_TRUE(_b[0].txns->put(complete(seen_by_0)).value());
    EXPECT_EQ(committed()["g"], 40);
    EXPECT_EQ(txn_offsets_version(), announced + 1);
    EXPECT_TRUE(read_txn(0).offsets.empty());
    EXPECT_TRUE(commit(0, "g", 41).empty());
    EXPECT_FALSE(_b[1].txns->put(complete(seen_by_1)).value());
    EXPECT_EQ(committed()["g"], 41);
    EXPECT_EQ(txn_offsets_version(), announced + 1);
    // An aborted transaction's offsets are never committed.
    auto next = read_txn(0);
    next.state = txn::txn_state::ongoing;
    next.add_group("g");
    next.put_offset({"g", {"orders", 0}, 90, -1, std::nullopt, 2090});
    ASSERT_TRUE(_b[0].txns->put_by_group(next, "g").value());
    auto aborting = read_txn(0);
    aborting.state = txn::txn_state::prepare_abort;
    ASSERT_TRUE(_b[0].txns->put(aborting).value());
    auto aborted = complete(read_txn(0));
    aborted.state = txn::txn_state::complete_abort;
    ASSERT_TRUE(_b[0].txns->put(aborted).value());
    EXPECT_EQ(committed()["g"], 41);
}

}  // namespace
}  // namespace sluice::shared::testing

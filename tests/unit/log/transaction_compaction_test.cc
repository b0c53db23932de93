// Compaction and transactions: aborted records go and never supersede a committed
// value, markers stay until delete.retention.ms after their records went, nothing at or past the
// last stable offset is cleaned, and readers through record_cursor::open_committed see committed
// records only.

#include <gtest/gtest.h>

#include "compaction_test_util.h"
#include "log/record_cursor.h"

namespace sluice::log {
namespace {

using sluice::testing::batch_options;
using sluice::testing::build_batch;
using sluice::testing::test_record;
using test::rec;

using test::kv;

class txn_compaction_test : public test::compaction_test {
  protected:
    void txn_put(int64_t pid, int32_t seq, const std::vector<test_record>& recs) {
        batch_options o;
        o.producer_id = pid;
        o.producer_epoch = 0;
        o.base_sequence = seq;
        o.transactional = true;
        test::append_durable(*mgr, p(), build_batch(recs, o), recs.front().timestamp);
    }
    void end_txn(int64_t pid, bool commit) {
        auto r = p()->write_marker(pid, 0, commit, 0, test::t0);
        ASSERT_TRUE(r.ok());
        ASSERT_EQ(r->verdict, sequence_verdict::append);
        ASSERT_TRUE(test::wait_durable(*mgr, p(), r->last_offset).ok());
    }
    // What a READ_COMMITTED reader (SQL, expansions) sees.
    std::vector<rec> committed() {
        record_cursor c;
        EXPECT_TRUE(c.open_committed(p(), p()->log_start_offset(), p()->last_stable_offset()).ok());
        std::vector<rec> out;
        for (;;) {
            auto more = c.next();
            EXPECT_TRUE(more.ok());
            if (!more.ok() || !*more) break;
            const auto& r = c.record();
            out.push_back({r.offset, test::str(r.key), test::str(r.value)});
        }
        return out;
    }
    // Offsets of the marker batches in the log.
    std::vector<offset_t> markers() {
        std::vector<offset_t> out;
        for (offset_t next = p()->log_start_offset(); next < p()->high_watermark();) {
            auto r = p()->read(next, 1 << 20, true);
            if (!r.ok() || r->data.empty()) break;
            for (const auto& h : test::batches_of(r->data)) {
                if (h.is_control()) out.push_back(h.base_offset);
                next = h.last_offset() + 1;
            }
        }
        return out;
    }
};

TEST_F(txn_compaction_test, aborted_records_go_and_markers_stay) {
    open();
    put({kv("a", "a1", test::t0)});                     // 0
    txn_put(5, 0, {kv("a", "aborted", test::t0 + 1)});  // 1
    end_txn(5, false);                                  // 2
    txn_put(5, 1, {kv("b", "b1", test::t0 + 2)});       // 3
    end_txn(5, true);                                   // 4
    put({kv("c", "c1", test::t0 + 3)});                 // 5: active
    const std::vector<rec> want = {{0, "a", "a1"}, {3, "b", "b1"}, {5, "c", "c1"}};
    EXPECT_EQ(committed(), want);
    auto st = compact(test::t0 + 10);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    EXPECT_EQ(st.records_removed, 1);  // the aborted record; a1 is not superseded by it
    EXPECT_EQ(committed(), want);
    EXPECT_EQ(markers(), (std::vector<offset_t>{2, 4}));
    // Without a snapshot the transaction state comes back from the markers.
    mgr->close();
    mgr.reset();
    fs::remove(part() / "producer-state.snapshot");
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    open();
    auto aborted = p()->aborted_transactions(0, 10);
    ASSERT_TRUE(aborted.ok());
    // Compaction removed the aborted record: the rebuilt entry starts at its marker.
    EXPECT_EQ(*aborted, (std::vector<aborted_txn>{{5, 2, 2}}));
    EXPECT_EQ(p()->last_stable_offset(), 6);
    EXPECT_EQ(committed(), want);
}

// KIP-534: a marker whose transaction has no record left gets its delete horizon (now +
// delete.retention.ms, 1 s here) and goes at the first pass after it; an ABORT marker
// takes its aborted-transaction index entry along, also across a rebuild from the log.
TEST_F(txn_compaction_test, markers_go_delete_retention_after_their_records) {
    open();
    put({kv("a", "a1", test::t0)});                     // 0
    txn_put(5, 0, {kv("a", "aborted", test::t0 + 1)});  // 1
    end_txn(5, false);                                  // 2
    txn_put(5, 1, {kv("b", "b1", test::t0 + 2)});       // 3
    end_txn(5, true);                                   // 4
    put({kv("b", "b2", test::t0 + 3)});                 // 5: supersedes b1
    put({kv("c", "c1", test::t0 + 4)});                 // 6: active
    compact(test::t0 + 10);
    // The aborted transaction lost its record in this pass: its marker stays until the
    // horizon, and so does the aborted entry. b1, the producer's last batch, stays whole
    // (its sequence), and so does the COMMIT marker of its transaction.
    EXPECT_EQ(markers(), (std::vector<offset_t>{2, 4}));
    EXPECT_EQ(*p()->aborted_transactions(0, 10), (std::vector<aborted_txn>{{5, 1, 2}}));
    for (offset_t next = 0; next < 6;) {
        auto r = p()->read(next, 1 << 20, true);
        ASSERT_TRUE(r.ok());
        for (const auto& h : test::batches_of(r->data)) {
            if (h.base_offset == 2) {
                EXPECT_EQ(h.attributes & 0x40, 0x40);
                EXPECT_EQ(h.base_timestamp, test::t0 + 10 + 1000);
            } else if (h.base_offset == 4) {
                EXPECT_EQ(h.attributes & 0x40, 0);
            }
            next = h.last_offset() + 1;
        }
    }
    put({kv("d", "d1", test::t0 + 5)});  // 7
    compact(test::t0 + 500);
    EXPECT_EQ(markers(), (std::vector<offset_t>{2, 4}));
    put({kv("e", "e1", test::t0 + 6)});  // 8
    auto st = compact(test::t0 + 1011);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    EXPECT_EQ(markers(), (std::vector<offset_t>{4}));
    EXPECT_TRUE(p()->aborted_transactions(0, 10)->empty());
    const std::vector<rec> want = {{0, "a", "a1"}, {3, "b", "b1"}, {5, "b", "b2"},
                                   {6, "c", "c1"}, {7, "d", "d1"}, {8, "e", "e1"}};
    EXPECT_EQ(committed(), want);
    // The snapshot that held the entry went with it: a crash rebuilds from the log.
    EXPECT_FALSE(fs::exists(part() / "producer-state.snapshot"));
    mgr->close();
    mgr.reset();
    fs::remove(part() / "producer-state.snapshot");
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    open();
    EXPECT_TRUE(p()->aborted_transactions(0, 10)->empty());
    EXPECT_EQ(p()->last_stable_offset(), 9);
    EXPECT_EQ(committed(), want);
}

TEST_F(txn_compaction_test, nothing_at_or_past_an_open_transaction_is_cleaned) {
    open();
    put({kv("a", "a1", test::t0)});                // 0
    txn_put(7, 0, {kv("x", "x1", test::t0 + 1)});  // 1: open
    put({kv("a", "a2", test::t0 + 2)});            // 2
    put({kv("a", "a3", test::t0 + 3)});            // 3
    put({kv("z", "z1", test::t0 + 4)});            // 4: active
    EXPECT_EQ(p()->last_stable_offset(), 1);
    compact(test::t0 + 10);
    // a1 lies below the open transaction, a2 and a3 past its start: a1 is not
    // superseded by records the cleaner may not look at yet.
    const std::vector<rec> all = {
        {0, "a", "a1"}, {1, "x", "x1"}, {2, "a", "a2"}, {3, "a", "a3"}, {4, "z", "z1"}};
    EXPECT_EQ(read_all(), all);
    EXPECT_EQ(committed(), (std::vector<rec>{{0, "a", "a1"}}));
    end_txn(7, false);                   // 5
    put({kv("q", "q1", test::t0 + 5)});  // 6: active
    auto st = compact(test::t0 + 20);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    const std::vector<rec> want = {{3, "a", "a3"}, {4, "z", "z1"}, {6, "q", "q1"}};
    EXPECT_EQ(committed(), want);
    EXPECT_EQ(markers(), (std::vector<offset_t>{5}));
}

}  // namespace
}  // namespace sluice::log

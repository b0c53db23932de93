// The partition side of transactions: transactional batches, markers, the last stable
// offset, the aborted-transaction index, READ_COMMITTED reads, and their rebuild on load.

#include <gtest/gtest.h>

#include "log/partition_log.h"
#include "log/producer_state.h"
#include "log_test_util.h"
#include "protocol/control_batch.h"

namespace sluice::log {
namespace {

using sluice::testing::batch_options;
using sluice::testing::make_batch;
using test::append_durable;
using test::batches_of;

bytes txn_batch(int64_t pid, int16_t epoch, int32_t seq, int records = 2) {
    batch_options o;
    o.producer_id = pid;
    o.producer_epoch = epoch;
    o.base_sequence = seq;
    o.transactional = true;
    return make_batch(records, 1000, 8, 1, o);
}

class transaction_test : public ::testing::Test {
  protected:
    void open() {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 64});
        auto r = mgr->open();
        ASSERT_TRUE(r.ok()) << r.err().message;
        mgr->add_topic("t", 1, {});
        p = mgr->get("t", 0);
    }
    void restart() {
        mgr->close();
        mgr.reset();
        open();
    }
    append_info marker(int64_t pid, int16_t epoch, bool commit, int32_t coord = 0) {
        auto r = p->write_marker(pid, epoch, commit, coord, 2000);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
        if (!r.ok()) return {};
        EXPECT_EQ(r->verdict, sequence_verdict::append) << r->reason;
        auto d = test::wait_durable(*mgr, p, r->last_offset);
        EXPECT_TRUE(d.ok());
        return *r;
    }
    // What the partition's transaction state looks like, to compare across loads.
    std::string describe() {
        std::string s = fmt::format("lso={} hw={}", p->last_stable_offset(), p->high_watermark());
        auto a = p->aborted_transactions(0, p->high_watermark());
        EXPECT_TRUE(a.ok());
        for (const auto& t : *a)
            s += fmt::format(" aborted({},{},{})", t.producer_id, t.first_offset, t.last_offset);
        return s;
    }

    test::temp_dir dir;
    std::unique_ptr<log_manager> mgr;
    partition_log* p = nullptr;
};

TEST_F(transaction_test, markers_end_transactions_and_move_the_last_stable_offset) {
    open();
    append_durable(*mgr, p, make_batch(3, 1000));  // 0..2, not transactional
    EXPECT_EQ(p->last_stable_offset(), 3);
    append_durable(*mgr, p, txn_batch(7, 0, 0));   // 3..4: producer 7's transaction
    append_durable(*mgr, p, make_batch(1, 1000));  // 5
    append_durable(*mgr, p, txn_batch(8, 0, 0));   // 6..7: producer 8's
    append_durable(*mgr, p, txn_batch(7, 0, 2));   // 8..9
    EXPECT_EQ(p->high_watermark(), 10);
    EXPECT_EQ(p->last_stable_offset(), 3);

    auto c = marker(7, 0, true);  // commit 7 at 10
    EXPECT_EQ(c.base_offset, 10);
    EXPECT_EQ(c.last_offset, 10);
    EXPECT_GE(p->durable_offset(), 11);
    EXPECT_EQ(p->last_stable_offset(), 6);  // 8's is still open
    auto a = marker(8, 0, false);           // abort 8 at 11
    EXPECT_EQ(a.base_offset, 11);
    EXPECT_EQ(p->last_stable_offset(), 12);
    EXPECT_EQ(describe(), "lso=12 hw=12 aborted(8,6,11)");

    // The marker batches as stored: control, transactional, the producer's id and epoch.
    auto r = p->read(10, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = batches_of(r->data);
    ASSERT_EQ(hs.size(), 2u);
    EXPECT_TRUE(hs[0].is_control());
    EXPECT_TRUE(hs[0].is_transactional());
    EXPECT_EQ(hs[0].producer_id, 7);
    auto rec = protocol::decode_control_batch(bytes_view(r->data).subspan(0, hs[0].size_bytes()));
    ASSERT_TRUE(rec.ok());
    EXPECT_TRUE(rec->is_commit());
    EXPECT_EQ(hs[1].producer_id, 8);

    // The index answers by range: transactions with records in [from, to).
    EXPECT_EQ(p->aborted_transactions(0, 6)->size(), 0u);
    EXPECT_EQ(p->aborted_transactions(6, 7)->size(), 1u);
    EXPECT_EQ(p->aborted_transactions(11, 12)->size(), 1u);
    EXPECT_EQ(p->aborted_transactions(12, 20)->size(), 0u);

    // The producer goes on after its commit with the next sequence.
    append_durable(*mgr, p, txn_batch(7, 0, 4));  // 12..13
    EXPECT_EQ(p->last_stable_offset(), 12);
}

TEST_F(transaction_test, read_committed_stops_at_the_last_stable_offset) {
    open();
    append_durable(*mgr, p, make_batch(2, 1000));  // 0..1
    append_durable(*mgr, p, txn_batch(7, 0, 0));   // 2..3
    append_durable(*mgr, p, make_batch(2, 1000));  // 4..5
    auto all = p->read(0, 1 << 20, false);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(batches_of(all->data).size(), 3u);
    EXPECT_EQ(all->last_stable_offset, 2);
    auto rc = p->read(0, 1 << 20, false, true);
    ASSERT_TRUE(rc.ok());
    auto hs = batches_of(rc->data);
    ASSERT_EQ(hs.size(), 1u);
    EXPECT_EQ(hs[0].base_offset, 0);
    EXPECT_EQ(rc->high_watermark, 6);
    EXPECT_EQ(rc->last_stable_offset, 2);
    // At or past the last stable offset: nothing, no error.
    auto at = p->read(2, 1 << 20, true, true);
    ASSERT_TRUE(at.ok());
    EXPECT_TRUE(at->data.empty());
    auto past = p->read(4, 1 << 20, true, true);
    ASSERT_TRUE(past.ok());
    EXPECT_TRUE(past->data.empty());
    marker(7, 0, true);
    auto after = p->read(0, 1 << 20, false, true);
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(batches_of(after->data).size(), 4u);
    EXPECT_EQ(after->last_stable_offset, 7);
}

TEST_F(transaction_test, markers_fence_old_epochs_and_coordinators) {
    open();
    append_durable(*mgr, p, txn_batch(7, 2, 0));
    auto old = p->write_marker(7, 1, false, 0, 2000);
    ASSERT_TRUE(old.ok());
    EXPECT_EQ(old->verdict, sequence_verdict::invalid_epoch);
    EXPECT_EQ(p->high_watermark(), 2);
    marker(7, 2, true, 5);
    auto fenced = p->write_marker(7, 2, true, 4, 2000);
    ASSERT_TRUE(fenced.ok());
    EXPECT_EQ(fenced->verdict, sequence_verdict::coordinator_fenced);
    // A marker with a bumped epoch (transaction version 2) makes it the producer's: its
    // next batch starts at sequence 0 of that epoch, and older epochs are refused.
    marker(7, 3, false, 5);
    auto stale = test::append(*p, txn_batch(7, 2, 2));
    ASSERT_TRUE(stale.ok());
    EXPECT_EQ(stale->verdict, sequence_verdict::invalid_epoch);
    auto next = test::append(*p, txn_batch(7, 3, 0));
    ASSERT_TRUE(next.ok());
    EXPECT_EQ(next->verdict, sequence_verdict::append);
    // A marker for a partition where the transaction wrote nothing: an empty aborted
    // range at the marker, as Kafka indexes it.
    marker(9, 0, false);
    EXPECT_EQ(describe(), "lso=4 hw=7 aborted(7,3,3) aborted(9,6,6)");
}

TEST_F(transaction_test, state_is_the_same_after_a_restart_with_and_without_snapshot) {
    open();
    append_durable(*mgr, p, txn_batch(7, 0, 0));   // 0..1
    append_durable(*mgr, p, txn_batch(8, 0, 0));   // 2..3
    marker(8, 0, false);                           // 4
    append_durable(*mgr, p, txn_batch(9, 0, 0));   // 5..6
    marker(9, 0, true);                            // 7
    append_durable(*mgr, p, txn_batch(10, 0, 0));  // 8..9
    marker(10, 0, false);                          // 10
    const std::string before = describe();
    EXPECT_EQ(before, "lso=0 hw=11 aborted(8,2,4) aborted(10,8,10)");
    restart();  // clean: from the snapshot
    EXPECT_EQ(describe(), before);
    mgr->close();
    mgr.reset();
    fs::remove(dir.path / "logs" / "t-0" / "producer-state.snapshot");
    open();  // from the batches alone
    EXPECT_EQ(describe(), before);
    // The transaction still open across both restarts ends as before.
    marker(7, 0, true);
    EXPECT_EQ(p->last_stable_offset(), 12);
    restart();
    EXPECT_EQ(describe(), "lso=12 hw=12 aborted(8,2,4) aborted(10,8,10)");
}

TEST(ProducerStateTxn, SnapshotVersion2CarriesTransactions) {
    producer_state st;
    protocol::batch_header h;
    h.producer_id = 4;
    h.producer_epoch = 1;
    h.base_sequence = 0;
    h.attributes = 0x10;
    st.apply(h, 10, 0);
    st.apply_marker(5, 0, false, 3, 12, 0);  // known from the marker only
    h.producer_id = 6;
    st.apply(h, 13, 0);
    st.apply_marker(6, 1, false, 3, 14, 0);
    auto d = producer_state::decode(st.encode(15, 0));
    ASSERT_TRUE(d.ok()) << d.err().message;
    EXPECT_EQ(d->first.first_unstable_offset(), 10);
    EXPECT_EQ(d->first.entries().at(5).coordinator_epoch, 3);
    EXPECT_EQ(d->first.aborted(), st.aborted());
    ASSERT_EQ(st.aborted().size(), 2u);
    EXPECT_EQ(st.aborted()[1], (aborted_txn{6, 13, 14}));
    // Ongoing transactions survive expiry and retention; truncation forgets them.
    st.expire(1'000'000, 1);
    st.evict_below(100);
    EXPECT_EQ(st.first_unstable_offset(), 10);
    EXPECT_TRUE(st.aborted().empty());
    st.truncate(10);
    EXPECT_FALSE(st.first_unstable_offset());
}

}  // namespace
}  // namespace sluice::log

// Log compaction (log_manager::enforce_compaction, partition_log::clean): the latest
// record of each key survives with its offset, tombstones go after delete.retention.ms,
// the lag and dirty-ratio settings decide when a partition is cleaned, and a crash at
// any step of the segment swap leaves a log that loads with every live record.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "compaction_test_util.h"
#include "log/cleaner_files.h"
#include "log/log_start.h"
#include "log/record_cursor.h"
#include "support/compressed_batch.h"

namespace sluice::log {
namespace {

using sluice::testing::build_batch;
using sluice::testing::test_record;
using test::append_durable;
using test::compaction_test;
using test::kv;
using test::rec;
using test::t0;

TEST_F(compaction_test, compressed_batches_are_compacted_and_keep_their_codec) {
    open();
    auto put_z = [&](const std::vector<test_record>& recs, protocol::compression c) {
        append_durable(*mgr, p(), testing::compress_batch(build_batch(recs), c),
                       recs.front().timestamp);
    };
    put_z({kv("a", "a1", t0), kv("b", "b1", t0), kv("c", "c1", t0)}, protocol::compression::zstd);
    put_z({kv("a", "a2", t0 + 1), kv("b", "b2", t0 + 1)}, protocol::compression::lz4);
    put_z({kv("c", "c2", t0 + 2)}, protocol::compression::snappy);
    put_z({kv("d", "d1", t0 + 3)}, protocol::compression::gzip);  // active
    auto st = compact(t0 + 10);
    EXPECT_EQ(st.partitions_failed, 0u);
    EXPECT_EQ(st.records_removed, 3);  // a1, b1, c1
    const std::vector<rec> want = {{3, "a", "a2"}, {4, "b", "b2"}, {5, "c", "c2"}, {6, "d", "d1"}};
    EXPECT_EQ(read_all(), want);
    // The batch that lost every record is gone; the others kept their codecs.
    auto r = p()->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = test::batches_of(r->data);
    ASSERT_FALSE(hs.empty());
    EXPECT_EQ(hs[0].base_offset, 3);
    EXPECT_EQ(hs[0].codec(), protocol::compression::lz4);
    reopen(false);
    EXPECT_EQ(read_all(), want);
}

TEST_F(compaction_test, a_compressed_batch_losing_some_records_is_recompressed) {
    open();
    append_durable(*mgr, p(),
                   testing::compress_batch(build_batch({kv("a", "a1", t0), kv("b", "b1", t0)}),
                                           protocol::compression::zstd),
                   t0);
    put({kv("a", "a2", t0 + 1)});
    put({kv("z", "z1", t0 + 2)});  // active
    EXPECT_EQ(compact(t0 + 10).records_removed, 1);
    auto r = p()->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = test::batches_of(r->data);
    ASSERT_FALSE(hs.empty());
    EXPECT_EQ(hs[0].codec(), protocol::compression::zstd);
    EXPECT_EQ(hs[0].record_count, 1);
    EXPECT_EQ(read_all(), (std::vector<rec>{{1, "b", "b1"}, {2, "a", "a2"}, {3, "z", "z1"}}));
    // A count from the batch headers (SQL's count(*)) finds what reading finds: the
    // cleaner wrote the records it kept into the header.
    record_cursor c;
    c.open(p(), 0, p()->last_stable_offset());
    int64_t counted = 0;
    for (;;) {
        auto n = c.next_count();
        ASSERT_TRUE(n.ok()) << n.err().message;
        if (!*n) break;
        counted += **n;
    }
    EXPECT_EQ(counted, 3);
    EXPECT_EQ(c.stats().records_read, 3);
}

TEST_F(compaction_test, keeps_the_latest_record_of_each_key_at_its_offset) {
    open();
    put({kv("a", "a1", t0), kv("b", "b1", t0), kv("c", "c1", t0)});  // 0..2
    put({kv("a", "a2", t0 + 1)});                                    // 3
    put({kv("b", "b2", t0 + 2), kv("d", "d1", t0 + 2)});             // 4..5
    put({kv("a", "a3", t0 + 3)});                                    // 6: active, not cleaned
    const std::vector<rec> before = read_all();
    ASSERT_EQ(before.size(), 7u);
    auto st = compact(t0 + 10);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    EXPECT_EQ(st.partitions_failed, 0u);
    EXPECT_EQ(st.records_removed, 2);  // a1, b1 (a2 is the latest in the cleanable part)
    EXPECT_EQ(st.segments_rewritten, 1u);
    const std::vector<rec> want = {
        {2, "c", "c1"}, {3, "a", "a2"}, {4, "b", "b2"}, {5, "d", "d1"}, {6, "a", "a3"}};
    EXPECT_EQ(read_all(), want);
    EXPECT_EQ(p()->log_start_offset(), 0);
    EXPECT_EQ(p()->log_end_offset(), 7);
    EXPECT_EQ(*read_clean_checkpoint(part()), 6);
    // The rewritten batch keeps its base offset and last offset; only record 2 is left.
    auto r = p()->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = test::batches_of(r->data);
    ASSERT_FALSE(hs.empty());
    EXPECT_EQ(hs[0].base_offset, 0);
    EXPECT_EQ(hs[0].last_offset(), 2);
    EXPECT_EQ(hs[0].record_count, 1);
    // Nothing dirty: a second pass does nothing.
    EXPECT_EQ(compact(t0 + 20).partitions_cleaned, 0u);
    for (bool clean : {true, false}) {
        reopen(clean);
        EXPECT_EQ(read_all(), want) << (clean ? "clean" : "unclean");
        EXPECT_EQ(p()->log_end_offset(), 7);
    }
    // Appends go on after the gaps.
    put({kv("e", "e1", t0 + 30)});
    EXPECT_EQ(read_all().back(), (rec{7, "e", "e1"}));
}

TEST_F(compaction_test, a_segment_losing_every_batch_is_skipped_by_readers) {
    open();
    put({kv("a", "a1", t0)});  // 0
    put({kv("a", "a2", t0)});  // 1
    put({kv("a", "a3", t0)});  // 2
    put({kv("z", "z1", t0)});  // 3: active
    compact(t0 + 10);
    const std::vector<rec> want = {{2, "a", "a3"}, {3, "z", "z1"}};
    EXPECT_EQ(read_all(), want);
    // A consumer positioned inside the gap gets the next record.
    auto r = p()->read(1, 1 << 20, true);
    ASSERT_TRUE(r.ok());
    ASSERT_FALSE(r->data.empty());
    EXPECT_EQ(test::batches_of(r->data).front().base_offset, 2);
    reopen(false);
    EXPECT_EQ(read_all(), want);
}

TEST_F(compaction_test, tombstones_go_after_delete_retention_ms) {
    open();
    put({kv("a", "a1", t0), kv("b", "b1", t0)});  // 0..1
    put({kv("a", std::nullopt, t0 + 100)});       // 2: tombstone
    put({kv("c", "c1", t0 + 200)});               // 3: active
    compact(t0 + 300);
    // The first pass removes what the tombstone deletes, and keeps the tombstone.
    std::vector<rec> want = {{1, "b", "b1"}, {2, "a", "<null>"}, {3, "c", "c1"}};
    EXPECT_EQ(read_all(), want);
    // A later pass, before delete.retention.ms has passed since the tombstone: kept.
    put({kv("d", "d1", t0 + 400)});  // 4: the new active; 3 becomes dirty and cleanable
    compact(t0 + 100 + cfg.delete_retention_ms);
    want.push_back({4, "d", "d1"});
    EXPECT_EQ(read_all(), want);
    // Once it has: gone.
    put({kv("e", "e1", t0 + 500)});
    compact(t0 + 101 + cfg.delete_retention_ms);
    want = {{1, "b", "b1"}, {3, "c", "c1"}, {4, "d", "d1"}, {5, "e", "e1"}};
    EXPECT_EQ(read_all(), want);
}

TEST_F(compaction_test, min_compaction_lag_keeps_recent_records) {
    cfg.min_compaction_lag_ms = 1000;
    open();
    put({kv("a", "a1", t0)});
    put({kv("a", "a2", t0 + 500)});
    put({kv("z", "z1", t0 + 500)});  // active
    // At t0 + 1000 only the first segment is old enough: its a1 has no newer value
    // in the cleanable part, so nothing goes.
    compact(t0 + 1000);
    EXPECT_EQ(read_all().size(), 3u);
    // At t0 + 1500 both are: a1 goes.
    auto st = compact(t0 + 1500);
    EXPECT_EQ(st.records_removed, 1);
    EXPECT_EQ(read_all().front(), (rec{1, "a", "a2"}));
}

TEST_F(compaction_test, dirty_ratio_threshold_and_max_compaction_lag) {
    cfg.min_cleanable_dirty_ratio = 0.6;
    open();
    put({kv("a", "a1", t0)});
    put({kv("a", "a2", t0)});
    put({kv("a", "a3", t0)});
    put({kv("z", "z1", t0)});  // active
    // Everything is dirty (ratio 1): cleaned; the checkpoint moves to offset 3.
    EXPECT_EQ(compact(t0).partitions_cleaned, 1u);
    EXPECT_EQ(read_all().size(), 2u);
    // One new dirty segment (z1, 3) among three cleanable ones: below 0.6.
    put({kv("a", "a4", t0)});
    auto st = compact(t0);
    EXPECT_EQ(st.partitions_cleaned, 0u);
    EXPECT_EQ(read_all().size(), 3u);
    // max.compaction.lag.ms: the oldest dirty record (z1 at t0) is older than 1000 ms.
    cfg.max_compaction_lag_ms = 1000;
    set_config();
    EXPECT_EQ(compact(t0 + 1000).partitions_cleaned, 0u);
    EXPECT_EQ(compact(t0 + 1001).partitions_cleaned, 1u);
    // KIP-354: the active segment (a4, appended before t0 + 1001 - 1000) is due to roll
    // by the same bound, so the pass seals and takes it: a3 goes, a4 is the latest of a.
    const std::vector<rec> want = {{3, "z", "z1"}, {4, "a", "a4"}};
    EXPECT_EQ(read_all(), want);
    EXPECT_EQ(*read_clean_checkpoint(part()), 5);
}

TEST_F(compaction_test, delete_records_and_retention_with_compact_delete) {
    cfg.delete_enabled = true;
    open();
    put({kv("a", "a1", t0), kv("b", "b1", t0)});  // 0..1
    put({kv("a", "a2", t0 + 10)});                // 2
    put({kv("b", "b2", t0 + 20)});                // 3
    put({kv("c", "c1", t0 + 30)});                // 4: active
    ASSERT_TRUE(p()->delete_records(3).ok());
    EXPECT_EQ(p()->log_start_offset(), 3);
    compact(t0 + 100);
    std::vector<rec> want = {{3, "b", "b2"}, {4, "c", "c1"}};
    EXPECT_EQ(read_all(), want);
    // Retention (compact,delete) removes old segments as for a delete topic.
    put({kv("d", "d1", t0 + 5000)});  // 5: active; 4 sealed
    cfg.retention_ms = 1000;
    set_config();
    auto rs = mgr->enforce_retention(t0 + 2000);
    EXPECT_GE(rs.segments_deleted, 1u);
    EXPECT_EQ(p()->log_start_offset(), 5);
    compact(t0 + 6000);
    want = {{5, "d", "d1"}};
    EXPECT_EQ(read_all(), want);
    reopen(false);
    EXPECT_EQ(read_all(), want);
}

// A throttled pass runs without trim_mu, so DeleteRecords (on the event loop) does not
// wait for it; segments it deletes meanwhile are not brought back by the swap.
TEST_F(compaction_test, delete_records_during_a_pass_neither_waits_nor_is_undone) {
    cfg.delete_enabled = true;
    mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 16, 2000});  // 2 kB/s
    mgr->add_topic("t", 1, cfg);
    ASSERT_TRUE(mgr->open().ok());
    for (int i = 0; i < 6; ++i) put({kv("k" + std::to_string(i % 2), "v" + std::to_string(i), t0)});
    put({kv("z", "z1", t0)});  // 6: active
    std::thread cleaner([&] { compact(t0 + 10); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto start = std::chrono::steady_clock::now();
    ASSERT_TRUE(p()->delete_records(5).ok());
    const auto waited = std::chrono::steady_clock::now() - start;
    cleaner.join();
    EXPECT_LT(waited, std::chrono::milliseconds(300));
    const std::vector<rec> want = {{5, "k1", "v5"}, {6, "z", "z1"}};
    EXPECT_EQ(read_all(), want);
    EXPECT_EQ(p()->log_start_offset(), 5);
    EXPECT_FALSE(fs::exists(part() / segment_file_name(0, data_ext)));
    reopen(false);
    EXPECT_EQ(read_all(), want);
    EXPECT_FALSE(fs::exists(part() / segment_file_name(0, data_ext)));
}

// Shutdown (and topic deletion) stop a throttled pass at once; the old segments stay.
TEST_F(compaction_test, stop_compaction_cancels_a_throttled_pass) {
    mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 16, 500});  // 500 B/s
    mgr->add_topic("t", 1, cfg);
    ASSERT_TRUE(mgr->open().ok());
    for (int i = 0; i < 6; ++i) put({kv("k", "v" + std::to_string(i), t0)});
    put({kv("z", "z1", t0)});  // active
    const std::vector<rec> before = read_all();
    log_manager::compaction_stats st;
    std::thread cleaner([&] { st = compact(t0 + 10); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const auto start = std::chrono::steady_clock::now();
    mgr->stop_compaction();
    cleaner.join();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
    EXPECT_EQ(st.partitions_cleaned, 0u);
    EXPECT_EQ(st.partitions_failed, 0u);
    EXPECT_EQ(read_all(), before);
    EXPECT_EQ(compact(t0 + 20).partitions_cleaned, 0u);  // stopped for good
    reopen(false);
    EXPECT_EQ(read_all(), before);
    EXPECT_FALSE(fs::exists(part() / cleaning_dir_name));
}

// The swap (docs/formats/segment.md, "Compaction swap"): 1. cleaned files are written
// under cleaning/ and fsynced; 2. the cleaner-swap marker is created (the commit point);
// 3. the files are renamed over the originals; 4. the marker is removed. A crash is
// simulated by building the directory each step leaves, then loading it.
class compaction_crash_test : public compaction_test, public ::testing::WithParamInterface<int> {};

TEST_P(compaction_crash_test, load_finishes_or_rolls_back_the_swap) {
    open();
    put({kv("a", "a1", t0), kv("b", "b1", t0)});  // 0..1: loses both
    put({kv("a", "a2", t0), kv("c", "c1", t0)});  // 2..3: loses c1
    put({kv("c", "c2", t0), kv("b", "b2", t0)});  // 4..5: unchanged
    put({kv("z", "z1", t0)});                     // 6: active
    const std::vector<rec> before = read_all();
    mgr->close();
    mgr.reset();
    // Save the originals, clean, then take the cleaned files.
    const fs::path saved = dir.path / "saved";
    fs::copy(part(), saved, fs::copy_options::recursive);
    open();
    auto st = compact(t0 + 10);
    ASSERT_EQ(st.segments_rewritten, 2u);  // 0 and 2
    const std::vector<rec> after = read_all();
    mgr->close();
    mgr.reset();
    const fs::path cleaned = dir.path / "cleaned";
    fs::create_directory(cleaned);
    for (offset_t base : {0, 2})
        for (const char* ext : segment_exts)
            fs::copy_file(part() / segment_file_name(base, ext),
                          cleaned / segment_file_name(base, ext));
    // Rebuild the directory as the step left it.
    fs::remove_all(part());
    fs::copy(saved, part(), fs::copy_options::recursive);
    const fs::path cleaning = part() / cleaning_dir_name;
    fs::create_directory(cleaning);
    const int step = GetParam();
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(cleaned)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    // Step 1 torn: only some cleaned files written, one of them cut short.
    size_t n_cleaned = step == 1 ? files.size() / 2 : files.size();
    for (size_t i = 0; i < n_cleaned; ++i) fs::copy_file(files[i], cleaning / files[i].filename());
    if (step == 1) fs::resize_file(cleaning / files[0].filename(), 40);
    if (step >= 2) std::ofstream(part() / clean_swap_marker_name).close();
    if (step == 3) {  // half of the renames done
        for (size_t i = 0; i < files.size() / 2; ++i)
            fs::rename(cleaning / files[i].filename(), part() / files[i].filename());
    }
    if (step == 4) {  // every rename done, marker still there
        for (const auto& f : files) fs::rename(cleaning / f.filename(), part() / f.filename());
    }
    open();
    const auto& want = step >= 2 ? after : before;
    EXPECT_EQ(read_all(), want) << "step " << step;
    EXPECT_FALSE(fs::exists(part() / clean_swap_marker_name));
    EXPECT_FALSE(fs::exists(cleaning));
    // A pass after a rollback does the work again.
    compact(t0 + 20);
    EXPECT_EQ(read_all(), after);
    reopen(false);
    EXPECT_EQ(read_all(), after);
}

INSTANTIATE_TEST_SUITE_P(steps, compaction_crash_test, ::testing::Values(1, 2, 3, 4));

TEST(clean_checkpoint, round_trips_and_rejects_damage) {
    auto b = encode_clean_checkpoint(12345);
    EXPECT_EQ(*decode_clean_checkpoint(b), 12345);
    b[b.size() - 3] ^= 1;
    EXPECT_EQ(decode_clean_checkpoint(b).code(), errc::corrupt);
    std::string v2 = "sluice cleaner-checkpoint v2\n1\n00000000\n";
    EXPECT_EQ(decode_clean_checkpoint(bytes(v2.begin(), v2.end())).code(), errc::unsupported);
}

}  // namespace
}  // namespace sluice::log

namespace sluice::log {
namespace {

TEST(io_throttle, keeps_the_average_under_the_budget) {
    io_throttle unlimited(0);
    unlimited.consume(1 << 30);
    EXPECT_EQ(unlimited.slept().count(), 0);
    io_throttle t(1 << 20);  // 1 MiB/s
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) t.consume(32 << 10);  // 128 KiB: 125 ms at least
    EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(120));
}

}  // namespace
}  // namespace sluice::log

namespace sluice::log {
namespace {

// Kafka keeps each idempotent producer's last batch through compaction, so that its
// sequence is known after the producer state is rebuilt from the log. Here the batch is
// kept whole (all its records).
TEST_F(compaction_test, keeps_each_idempotent_producers_last_batch) {
    open();
    sluice::testing::batch_options opt;
    opt.producer_id = 5;
    opt.producer_epoch = 0;
    opt.base_sequence = 0;
    const std::vector<test_record> first = {kv("a", "a1", t0)};
    append_durable(*mgr, p(), build_batch(first, opt), t0);  // 0: producer 5, sequence 0
    put({kv("a", "a2", t0 + 1)});                            // 1
    put({kv("b", "b1", t0 + 2)});                            // 2: active
    auto st = compact(t0 + 10);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    EXPECT_EQ(st.records_removed, 0);  // a1 is superseded, but producer 5's last batch
    const std::vector<rec> want = {{0, "a", "a1"}, {1, "a", "a2"}, {2, "b", "b1"}};
    EXPECT_EQ(read_all(), want);
    // Without a snapshot the state comes from the batch headers, and knows producer 5.
    mgr->close();
    mgr.reset();
    fs::remove(part() / "producer-state.snapshot");
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    open();
    auto prods = p()->producers(t0 + 20);
    ASSERT_TRUE(prods.ok());
    ASSERT_EQ(prods->size(), 1u);
    EXPECT_EQ((*prods)[0].producer_id, 5);
    EXPECT_EQ((*prods)[0].last()->last_seq, 0);
    EXPECT_EQ((*prods)[0].last()->first_offset, 0);
    // A retry of that batch is answered with its offset and appends nothing.
    auto dup = test::append(*p(), build_batch(first, opt), t0 + 20);
    ASSERT_TRUE(dup.ok()) << dup.err().message;
    EXPECT_EQ(dup->verdict, sequence_verdict::duplicate);
    EXPECT_EQ(dup->base_offset, 0);
    EXPECT_EQ(p()->log_end_offset(), 3);
}

}  // namespace
}  // namespace sluice::log

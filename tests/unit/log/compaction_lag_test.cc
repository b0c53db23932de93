// max.compaction.lag.ms (KIP-354): the active segment of a compacted partition rolls once
// its first record is older than the lag, on append or in a cleaner pass without any,
// and the pass cleans it at once; the small segments this leaves are merged into one
// (Kafka groups them alike), durably across a crash at any step of the swap.

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "compaction_test_util.h"
#include "log/cleaner_files.h"

namespace sluice::log {
namespace {

using test::compaction_test;
using test::kv;
using test::rec;
using test::t0;

class compaction_lag_test : public compaction_test {
  protected:
    void SetUp() override {
        compaction_test::SetUp();
        cfg.segment_bytes = 1 << 20;  // only the lag rolls
        cfg.max_compaction_lag_ms = 1000;
        cfg.min_cleanable_dirty_ratio = 0.5;
    }
    size_t segment_files() {
        auto files = list_segments(part());
        EXPECT_TRUE(files.ok());
        return files.ok() ? files->size() : 0;
    }
};

TEST_F(compaction_lag_test, an_append_rolls_the_active_segment_once_its_first_record_is_older) {
    open();
    put({kv("a", "a1", t0)});
    put({kv("a", "a2", t0 + 999)});
    EXPECT_EQ(segment_files(), 1u);
    put({kv("a", "a3", t0 + 1000)});  // a1 was appended 1000 ms ago: a new segment first
    EXPECT_EQ(segment_files(), 2u);
    put({kv("a", "a4", t0 + 1500)});
    EXPECT_EQ(segment_files(), 2u);
    // Not compacted: the lag counts only for compacted topics.
    cfg.compact = false;
    set_config();
    put({kv("a", "a5", t0 + 5000)});
    EXPECT_EQ(segment_files(), 2u);
}

TEST_F(compaction_lag_test, a_pass_rolls_an_idle_active_segment_and_cleans_it) {
    open();
    put({kv("a", "a1", t0), kv("b", "b1", t0)});
    put({kv("a", "a2", t0 + 1)});
    put({kv("b", std::nullopt, t0 + 2)});  // tombstone: kept (delete.retention.ms)
    EXPECT_EQ(compact(t0 + 999).partitions_cleaned, 0u);
    EXPECT_EQ(read_all().size(), 4u);
    auto st = compact(t0 + 1000);
    EXPECT_EQ(st.partitions_cleaned, 1u);
    EXPECT_EQ(st.records_removed, 2);
    const std::vector<rec> want = {{2, "a", "a2"}, {3, "b", "<null>"}};
    EXPECT_EQ(read_all(), want);
    EXPECT_EQ(p()->log_end_offset(), 4);
    // Once delete.retention.ms has passed, a later pass removes the tombstone.
    put({kv("c", "c1", t0 + 2000)});
    compact(t0 + 3000 + cfg.delete_retention_ms);
    const std::vector<rec> later = {{2, "a", "a2"}, {4, "c", "c1"}};
    EXPECT_EQ(read_all(), later);
    reopen(false);
    EXPECT_EQ(read_all(), later);
}

// A record every 500 ms for 30 s with a 1 s lag: a segment per second before the passes
// merge them. Without merging the log would keep one segment per lag period.
TEST_F(compaction_lag_test, passes_merge_the_small_segments_they_keep) {
    open();
    std::vector<rec> latest(5);
    size_t most = 0;
    for (int i = 0; i < 60; ++i) {
        const timestamp_ms now = t0 + i * 500;
        const std::string k = "k" + std::to_string(i % 5);
        const std::string v = k + "-" + std::to_string(i);
        put({kv(k, v, now)});
        latest[static_cast<size_t>(i % 5)] = {i, k, v};
        if (i % 4 == 3) compact(now);  // a pass every 2 s
        most = std::max(most, segment_files());
    }
    EXPECT_LE(most, 4u);
    compact(t0 + 60 * 500 + 1000);
    std::sort(latest.begin(), latest.end(),
              [](const rec& a, const rec& b) { return a.offset < b.offset; });
    EXPECT_EQ(read_all(), latest);
    EXPECT_LE(segment_files(), 2u);  // the merged one and the new active one
    EXPECT_EQ(p()->log_end_offset(), 60);
    for (bool clean : {true, false}) {
        reopen(clean);
        EXPECT_EQ(read_all(), latest) << (clean ? "clean" : "unclean");
    }
    put({kv("z", "z1", t0 + 90000)});
    EXPECT_EQ(read_all().back(), (rec{60, "z", "z1"}));
}

TEST_F(compaction_lag_test, merging_stops_at_segment_bytes) {
    cfg.max_compaction_lag_ms = 1;  // every append rolls
    open();
    const std::string big(600, 'x');
    for (int i = 0; i < 6; ++i) put({kv("k" + std::to_string(i), big, t0 + i * 10)});
    const int64_t one = list_segments(part())->front().size;
    cfg.segment_bytes = static_cast<int32_t>(2 * one);  // two originals fit, not three
    set_config();
    auto st = compact(t0 + 1000);
    EXPECT_EQ(st.records_removed, 0);
    EXPECT_EQ(read_all().size(), 6u);
    auto files = list_segments(part());
    ASSERT_TRUE(files.ok());
    ASSERT_EQ(files->size(), 4u);  // [0,1], [2,3], [4,5] and the active one
    for (const auto& f : *files) EXPECT_LE(f.size, 2 * one);
}

// The swap with merges (docs/formats/segment.md, "Compaction swap"): a crash after the
// commit, before, between or after the renames and deletions, loads as the rewritten
// log; a crash before the commit as the original one.
class compaction_merge_crash_test : public compaction_lag_test,
                                    public ::testing::WithParamInterface<int> {};

TEST_P(compaction_merge_crash_test, load_finishes_or_rolls_back_the_merge) {
    cfg.max_compaction_lag_ms = 1;  // every append rolls: segments 0 to 4, one record each
    open();
    for (int i = 0; i < 4; ++i) put({kv("a", "a" + std::to_string(i), t0 + i * 10)});
    put({kv("b", "b1", t0 + 100)});  // 4: the active segment, which stays
    cfg.max_compaction_lag_ms = std::numeric_limits<int64_t>::max();
    cfg.min_cleanable_dirty_ratio = 0;
    set_config();
    mgr->close();
    mgr.reset();
    const std::vector<offset_t> originals = {0, 1, 2, 3, 4};
    const fs::path saved = dir.path / "saved";
    fs::copy(part(), saved, fs::copy_options::recursive);
    open();
    const std::vector<rec> before = read_all();
    auto st = compact(t0 + 1000);
    ASSERT_EQ(st.segments_rewritten, 1u);
    const std::vector<rec> after = {{3, "a", "a3"}, {4, "b", "b1"}};
    ASSERT_EQ(read_all(), after);
    mgr->close();
    mgr.reset();
    const fs::path cleaned = dir.path / "cleaned";
    fs::create_directory(cleaned);
    for (const char* ext : segment_exts)
        fs::copy_file(part() / segment_file_name(0, ext), cleaned / segment_file_name(0, ext));
    // The directory as the step left it: originals, cleaning/ with the merged segment and
    // a .merged file for each segment it absorbed (1 to 3), the marker from step 2 on.
    fs::remove_all(part());
    fs::copy(saved, part(), fs::copy_options::recursive);
    const fs::path cleaning = part() / cleaning_dir_name;
    fs::create_directory(cleaning);
    for (const auto& e : fs::directory_iterator(cleaned))
        fs::copy_file(e.path(), cleaning / e.path().filename());
    for (offset_t b : {1, 2, 3})
        std::ofstream(cleaning / segment_file_name(b, merged_ext)).close();
    const int step = GetParam();
    if (step >= 2) std::ofstream(part() / clean_swap_marker_name) << "sluice cleaner-swap v2\n";
    if (step >= 3) {  // renames done, segment 1 deleted
        for (const char* ext : segment_exts)
            fs::rename(cleaning / segment_file_name(0, ext), part() / segment_file_name(0, ext));
        ASSERT_TRUE(remove_segment_files(part(), 1).ok());
        fs::remove(cleaning / segment_file_name(1, merged_ext));
    }
    if (step >= 4) {  // every deletion done, marker still there
        for (offset_t b : {2, 3}) {
            ASSERT_TRUE(remove_segment_files(part(), b).ok());
            fs::remove(cleaning / segment_file_name(b, merged_ext));
        }
    }
    open();
    EXPECT_EQ(read_all(), step >= 2 ? after : before) << "step " << step;
    EXPECT_FALSE(fs::exists(part() / clean_swap_marker_name));
    EXPECT_FALSE(fs::exists(cleaning));
    EXPECT_EQ(segment_files(), step >= 2 ? 2u : originals.size());
    put({kv("c", "c1", t0 + 2000)});
    EXPECT_EQ(read_all().back(), (rec{5, "c", "c1"}));
}

INSTANTIATE_TEST_SUITE_P(steps, compaction_merge_crash_test, ::testing::Values(1, 2, 3, 4));

TEST_F(compaction_lag_test, a_swap_marker_of_an_unknown_format_is_refused) {
    open();
    put({kv("a", "a1", t0)});
    mgr->close();
    mgr.reset();
    fs::create_directory(part() / cleaning_dir_name);
    std::ofstream(part() / clean_swap_marker_name) << "sluice cleaner-swap v9\n";
    repair_summary sum;
    auto r = finish_clean_swap(part(), sum);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::unsupported);
    EXPECT_TRUE(fs::exists(part() / cleaning_dir_name));  // left as it is
    // A version 2 marker cut short by a crash still commits.
    std::ofstream(part() / clean_swap_marker_name) << "sluice clean";
    EXPECT_TRUE(finish_clean_swap(part(), sum).ok());
    EXPECT_FALSE(fs::exists(part() / clean_swap_marker_name));
}

}  // namespace
}  // namespace sluice::log

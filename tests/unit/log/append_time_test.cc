// Broker append times (docs/formats/append-time-index.md): one entry per millisecond of
// appends, clamped so they never decrease, read back as runs over several segments,
// searched by time, kept across restarts and a kill -9, estimated where a file lost
// entries, carried through compaction and deleted with their segment.

#include <gtest/gtest.h>

#include <limits>
#include <ostream>
#include <string>
#include <vector>

#include "common/clock.h"
#include "log/append_time_index.h"
#include "log/log_start.h"
#include "log_test_util.h"

namespace sluice::log {

std::ostream& operator<<(std::ostream& os, const append_time_run& r) {
    return os << "{" << r.first_offset << ", " << r.time << "}";
}
std::ostream& operator<<(std::ostream& os, const append_time_index::entry& e) {
    return os << "[" << e.first << ", " << e.end << ") @" << e.time;
}

namespace {

using sluice::testing::build_batch;
using sluice::testing::make_batch;
using sluice::testing::test_record;
using test::kv;
using test::one_batch_segments;
using test::t0;
using runs = std::vector<append_time_run>;
using entries = std::vector<append_time_index::entry>;

// Three records, all with producer timestamp `ts` (so the batch's max_timestamp is ts).
bytes batch_at(timestamp_ms ts) {
    return make_batch(3, ts, 40, 0);
}

class append_time_test : public test::one_partition_log {
  protected:
    // The partition's files exactly as they are while the broker runs: what a kill -9
    // leaves, since the page cache survives a process crash.
    fs::path snapshot() {
        const fs::path image = dir.path / ("image" + std::to_string(images++));
        fs::copy(part(), image, fs::copy_options::recursive);
        return image;
    }
    // A start after a crash that left `image`, without a clean-shutdown marker. With
    // same_boot false the data directory records another boot of the OS: an OS crash
    // may have lost page-cache writes.
    void restart_from(const fs::path& image, bool same_boot) {
        if (mgr) mgr->close();
        mgr.reset();
        fs::remove_all(part());
        fs::copy(image, part(), fs::copy_options::recursive);
        fs::remove(dir.path / "logs" / ".clean-shutdown");
        if (!same_boot) other_boot();
        open();
        EXPECT_EQ(summary.same_boot, same_boot);
    }
    void kill9() { restart_from(snapshot(), true); }
    void other_boot() {
        const std::string text = "sluice boot-id v1\nanother-boot\n";
        ASSERT_TRUE(
            write_whole_file(dir.path / "logs" / ".boot-id", bytes(text.begin(), text.end())).ok());
    }
    fs::path file(offset_t base, const char* ext = append_time_ext) const {
        return part() / segment_file_name(base, ext);
    }
    // An append at broker time `now` of a batch whose records carry `ts`.
    append_info put(timestamp_ms now, timestamp_ms ts) {
        return test::append_durable(*mgr, p(), batch_at(ts), now);
    }
    append_info put(timestamp_ms now) { return put(now, now); }
    runs times(offset_t from, offset_t limit) {
        auto r = p()->append_times(from, limit);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
        return r.ok() ? *r : runs{};
    }
    offset_t first_at(timestamp_ms ts) {
        auto r = p()->offset_for_append_time(ts);
        EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
        return r.ok() ? *r : -1;
    }
    entries on_file(offset_t base) {
        auto f = read_append_time_file(file(base), base);
        EXPECT_TRUE(f.ok());
        if (!f.ok()) return {};
        EXPECT_EQ(f->problem, "") << file(base);
        entries out;
        for (size_t i = 0; i < f->index.size(); ++i) out.push_back(f->index.at(i));
        return out;
    }

    int images = 0;
};

// --- the index on its own ---

TEST(append_time_index, extends_within_a_millisecond_and_trims) {
    append_time_index idx(100);
    EXPECT_EQ(idx.covered_end(), 100);
    EXPECT_EQ(idx.add(100, 103, 5), 0u);
    EXPECT_EQ(idx.add(103, 110, 5), 0u);  // same time: the entry grows
    EXPECT_EQ(idx.add(110, 111, 7), 1u);
    EXPECT_EQ(idx.add(120, 125, 7), 1u);  // a gap (compaction) is absorbed
    ASSERT_EQ(idx.size(), 2u);
    EXPECT_EQ(idx.at(0), (append_time_index::entry{100, 110, 5}));
    EXPECT_EQ(idx.last(), (append_time_index::entry{110, 125, 7}));
    EXPECT_EQ(idx.last_starting_at_or_below(99), -1);
    EXPECT_EQ(idx.last_starting_at_or_below(109), 0);
    EXPECT_EQ(idx.last_starting_at_or_below(110), 1);
    EXPECT_EQ(idx.first_at_or_after(5), 0u);
    EXPECT_EQ(idx.first_at_or_after(6), 1u);
    EXPECT_EQ(idx.first_at_or_after(8), 2u);

    auto cut = idx;
    EXPECT_EQ(cut.trim(112), 1u);  // the second entry is cut to [110, 112)
    EXPECT_EQ(cut.last(), (append_time_index::entry{110, 112, 7}));
    EXPECT_EQ(cut.trim(105), 0u);
    EXPECT_EQ(cut.size(), 1u);
    EXPECT_EQ(cut.last().end, 105);
    EXPECT_EQ(cut.trim(100), 0u);
    EXPECT_TRUE(cut.empty());
}

TEST(append_time_index, decode_keeps_the_valid_prefix) {
    append_time_index idx(100);
    idx.add(100, 103, 5);
    idx.add(103, 104, 9);
    bytes f = idx.encode(42);
    ASSERT_EQ(f.size(), file_header_size + 2 * append_time_index::entry_size);
    std::string dropped;
    auto back = append_time_index::decode(f, 100, &dropped);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, idx);
    EXPECT_EQ(dropped, "");

    // Zeros where a file grew but its pages never reached the disk.
    bytes zeros = f;
    zeros.resize(zeros.size() + 3 * append_time_index::entry_size, 0);
    back = append_time_index::decode(zeros, 100, &dropped);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, idx);
    EXPECT_NE(dropped, "");

    bytes torn(f.begin(), f.end() - 5);
    back = append_time_index::decode(torn, 100, &dropped);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->size(), 1u);
    EXPECT_NE(dropped, "");

    bytes backwards = f;
    backwards[f.size() - 1] = 0;  // the second entry's time goes below the first's
    back = append_time_index::decode(backwards, 100, &dropped);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(back->size(), 1u);

    EXPECT_EQ(append_time_index::decode(f, 101, &dropped).code(), errc::corrupt);
    bytes other = time_index(100).encode(42);  // another kind of file
    EXPECT_EQ(append_time_index::decode(other, 100, &dropped).code(), errc::corrupt);
}

// --- recording ---

TEST_F(append_time_test, one_entry_per_millisecond_of_appends) {
    open();
    EXPECT_EQ(times(0, 100), runs{});  // never written
    put(t0, 900);                      // 0..2
    put(t0, 950);                      // 3..5: same millisecond
    put(t0 + 1, 990);                  // 6..8
    EXPECT_EQ(times(0, 9), (runs{{0, t0}, {6, t0 + 1}}));
    EXPECT_EQ(on_file(0), (entries{{0, 6, t0}, {6, 9, t0 + 1}}));
    EXPECT_EQ(fs::file_size(file(0)), file_header_size + 2 * append_time_index::entry_size);
    // Producer timestamps are not append times.
    EXPECT_EQ(first_at(900), 0);
    EXPECT_EQ(first_at(t0 + 1), 6);
}

TEST_F(append_time_test, a_clock_stepping_back_is_clamped) {
    cfg.timestamp_type = protocol::timestamp_type::log_append_time;
    open();
    put(2000);
    EXPECT_EQ(put(1500).log_append_time, 1500);  // the batch carries the clock as read
    put(2500);
    put(2400);
    EXPECT_EQ(times(0, 12), (runs{{0, 2000}, {6, 2500}}));
    auto r = p()->read(3, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(test::batches_of(r->data).front().max_timestamp, 1500);
    EXPECT_EQ(first_at(2001), 6);
    // The floor survives a restart: it is the last entry on file.
    for (bool clean : {true, false}) {
        reopen(clean);
        put(100);
    }
    EXPECT_EQ(times(0, 18), (runs{{0, 2000}, {6, 2500}}));
}

TEST_F(append_time_test, runs_over_several_segments_and_a_roll) {
    cfg.segment_bytes = one_batch_segments;
    open();
    put(t0);      // segment 0
    put(t0);      // segment 3: its own entry, same time
    put(t0 + 2);  // segment 6
    put(t0 + 5);  // segment 9 (active)
    ASSERT_EQ(p()->segment_count(), 4u);
    EXPECT_EQ(on_file(3), (entries{{3, 6, t0}}));
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        const runs all = {{0, t0}, {6, t0 + 2}, {9, t0 + 5}};
        EXPECT_EQ(times(0, 12), all);   // equal times merge across the roll
        EXPECT_EQ(times(0, 100), all);  // the limit stops at the high watermark
        EXPECT_EQ(times(4, 12), (runs{{3, t0}, {6, t0 + 2}, {9, t0 + 5}}));
        EXPECT_EQ(times(7, 10), (runs{{6, t0 + 2}, {9, t0 + 5}}));
        EXPECT_EQ(times(7, 9), (runs{{6, t0 + 2}}));
        EXPECT_EQ(times(11, 12), (runs{{9, t0 + 5}}));
        EXPECT_EQ(times(5, 5), runs{});
        EXPECT_EQ(times(12, 20), runs{});
        reopen(round == 0);  // then clean: sealed segments load from their files
    }
}

TEST_F(append_time_test, offset_for_append_time_boundaries) {
    cfg.segment_bytes = one_batch_segments;
    open();
    EXPECT_EQ(first_at(0), 0);  // empty partition: the high watermark
    EXPECT_EQ(first_at(std::numeric_limits<timestamp_ms>::min()), 0);
    for (int i = 0; i < 20; ++i) put(t0 + 10 * i);  // batch i: offsets 3i..3i+2, own segment
    ASSERT_EQ(p()->segment_count(), 20u);
    for (bool reload : {false, true}) {
        SCOPED_TRACE(reload);
        if (reload) reopen(true);          // sealed segments unloaded: bounds come from the files
        EXPECT_EQ(first_at(0), 0);         // before all
        EXPECT_EQ(first_at(t0), 0);        // the first run's time
        EXPECT_EQ(first_at(t0 + 1), 3);    // between runs
        EXPECT_EQ(first_at(t0 + 95), 30);  // binary search lands in the middle
        EXPECT_EQ(first_at(t0 + 100), 30);
        EXPECT_EQ(first_at(t0 + 190), 57);  // the last run
        EXPECT_EQ(first_at(t0 + 191), 60);  // after all: the high watermark
    }
    // DeleteRecords inside a run: the run's time still holds from the new start.
    ASSERT_EQ(*p()->delete_records(31), 31);
    EXPECT_EQ(first_at(0), 31);
    EXPECT_EQ(first_at(t0 + 100), 31);
    EXPECT_EQ(first_at(t0 + 101), 33);
    EXPECT_EQ(times(0, 36), (runs{{30, t0 + 100}, {33, t0 + 110}}));
    ASSERT_EQ(*p()->delete_records(-1), 60);
    EXPECT_EQ(first_at(0), 60);
    EXPECT_EQ(times(0, 100), runs{});
}

TEST_F(append_time_test, records_not_yet_durable_are_reported) {
    open();
    put(t0);
    mgr->set_flush_paused(true);
    ASSERT_TRUE(test::append(*p(), batch_at(t0 + 7), t0 + 7).ok());
    ASSERT_EQ(p()->log_end_offset(), 6);
    ASSERT_EQ(p()->high_watermark(), 6);
    ASSERT_EQ(p()->durable_offset(), 3);
    EXPECT_EQ(times(0, 6), (runs{{0, t0}, {3, t0 + 7}}));
    EXPECT_EQ(first_at(t0 + 1), 3);
    EXPECT_EQ(first_at(t0 + 8), 6);
    mgr->set_flush_paused(false);
}

// --- restarts and crashes ---

TEST_F(append_time_test, kill9_keeps_every_entry) {
    cfg.segment_bytes = 2 * one_batch_segments;  // two or three batches per segment
    open();
    put(t0);
    put(t0);  // extends the entry in place
    put(t0 + 3);
    put(t0 + 3);
    put(t0 + 4);
    put(t0 + 4);
    const runs want = times(0, 18);
    ASSERT_EQ(want, (runs{{0, t0}, {6, t0 + 3}, {12, t0 + 4}}));
    ASSERT_GT(p()->segment_count(), 1u);
    kill9();
    EXPECT_FALSE(summary.clean_shutdown);
    // (The active segment's offset index is rebuilt: it is written only at seal or a
    // clean shutdown. Its append times need nothing.)
    EXPECT_EQ(summary.append_time_estimates, 0);
    EXPECT_EQ(times(0, 18), want);
    put(t0 + 9);
    EXPECT_EQ(times(0, 21).back(), (append_time_run{18, t0 + 9}));
}

TEST_F(append_time_test, appends_in_the_last_millisecond_after_a_crash) {
    open();
    put(1000, 900);   // 0..2
    put(2000, 1900);  // 3..5: a new entry, written with the previous one's final end
    put(2000, 2100);  // 6..8: same millisecond, in memory only
    put(2000, 2200);  // 9..11
    EXPECT_EQ(on_file(0), (entries{{0, 3, 1000}, {3, 6, 2000}}));
    const fs::path image = snapshot();
    // A process crash: the page cache held every entry, and later appends shared the
    // last one's millisecond.
    restart_from(image, true);
    EXPECT_EQ(summary.append_time_estimates, 0);
    EXPECT_EQ(times(0, 12), (runs{{0, 1000}, {3, 2000}}));
    EXPECT_EQ(on_file(0), (entries{{0, 3, 1000}, {3, 12, 2000}}));
    // After a reboot the same file may be what survived an OS crash that lost later
    // entries: the batches past the last entry's end get estimates.
    restart_from(image, false);
    EXPECT_EQ(summary.append_time_estimates, 1);
    EXPECT_EQ(times(0, 12), (runs{{0, 1000}, {3, 2000}, {6, 2100}, {9, 2200}}));
    // The boot is recorded: a crash now is a process crash again.
    mgr->close();
    mgr.reset();
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    open();
    EXPECT_TRUE(summary.same_boot);
}

TEST_F(append_time_test, entries_lost_in_an_os_crash_are_estimated) {
    open();
    put(1000, 900);                // 0..2
    put(2000, 1900);               // 3..5
    put(3000, 500);                // 6..8: producer clock behind
    put(4000, 3900);               // 9..11
    put(5000, 4'000'000'000'000);  // 12..14: producer clock far ahead
    mgr->close();
    mgr.reset();
    // An OS crash: the pages of the last entries never reached the disk; one was half
    // written.
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    other_boot();
    fs::resize_file(file(0), file_header_size + 2 * append_time_index::entry_size + 5);
    const timestamp_ms before = now_ms();
    open();
    const timestamp_ms after = now_ms();
    EXPECT_EQ(summary.append_time_estimates, 1);
    EXPECT_EQ(summary.partitions_repaired, 1u);
    // Kept: 1000, 2000. Estimated, each batch's max timestamp clamped into [the time
    // before it, recovery's now]: 500 -> 2000, 3900, 4e12 -> now.
    auto got = times(0, 15);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0], (append_time_run{0, 1000}));
    EXPECT_EQ(got[1], (append_time_run{3, 2000}));
    EXPECT_EQ(got[2], (append_time_run{9, 3900}));
    EXPECT_EQ(got[3].first_offset, 12);
    EXPECT_GE(got[3].time, before);
    EXPECT_LE(got[3].time, after);
    // The file now holds the estimates (written back, whole entries only).
    EXPECT_EQ(on_file(0).size(), 4u);
    EXPECT_EQ(fs::file_size(file(0)), file_header_size + 4 * append_time_index::entry_size);
    // Appends go on above the estimates.
    put(6000);
    EXPECT_EQ(times(0, 18).back().time, got[3].time);
}

TEST_F(append_time_test, entries_past_a_truncated_data_tail_are_dropped) {
    open();
    put(1000);
    put(2000);
    put(3000);
    mgr->close();
    mgr.reset();
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    const auto size = fs::file_size(file(0, data_ext));
    fs::resize_file(file(0, data_ext), size - 10);  // the last batch is torn
    open();
    EXPECT_EQ(p()->log_end_offset(), 6);
    EXPECT_EQ(summary.append_time_estimates, 0);
    EXPECT_EQ(times(0, 6), (runs{{0, 1000}, {3, 2000}}));
    EXPECT_EQ(on_file(0), (entries{{0, 3, 1000}, {3, 6, 2000}}));
    put(4000);
    EXPECT_EQ(times(0, 9), (runs{{0, 1000}, {3, 2000}, {6, 4000}}));
}

TEST_F(append_time_test, missing_and_damaged_files_of_sealed_segments_are_estimated) {
    cfg.segment_bytes = one_batch_segments;
    open();
    put(1000, 990);   // segment 0
    put(2000, 1500);  // segment 3: file removed (as written by an older version)
    put(3000, 5000);  // segment 6: header damaged
    put(4000, 3990);  // segment 9, active
    mgr->close();
    mgr.reset();
    fs::remove(file(3));
    auto b = read_whole_file(file(6));
    ASSERT_TRUE(b.ok());
    (*b)[3] ^= 1;  // magic
    ASSERT_TRUE(write_whole_file(file(6), *b).ok());
    open();
    // 3: max timestamp 1500 within [1000, now]. 6: 5000 clamped below the next
    // segment's first time, 4000.
    EXPECT_EQ(times(0, 12), (runs{{0, 1000}, {3, 1500}, {6, 4000}}));
    EXPECT_EQ(on_file(3), (entries{{3, 6, 1500}}));
    EXPECT_EQ(on_file(6), (entries{{6, 9, 4000}}));
    EXPECT_EQ(first_at(1001), 3);
    reopen(true);
    EXPECT_EQ(first_at(1501), 6);
    EXPECT_EQ(times(0, 12), (runs{{0, 1000}, {3, 1500}, {6, 4000}}));
}

TEST_F(append_time_test, log_append_time_batches_are_estimated_exactly) {
    cfg.timestamp_type = protocol::timestamp_type::log_append_time;
    cfg.segment_bytes = one_batch_segments;
    open();
    put(1000, 1);
    put(2000, 2);
    put(2000, 3);
    put(3500, 4);
    const runs want = {{0, 1000}, {3, 2000}, {9, 3500}};
    ASSERT_EQ(times(0, 12), want);
    mgr->close();
    mgr.reset();
    for (offset_t base : {0, 3, 6, 9}) fs::remove(file(base));
    fs::remove(dir.path / "logs" / ".clean-shutdown");
    open();
    EXPECT_EQ(times(0, 12), want);
    EXPECT_EQ(summary.append_time_estimates, 1);  // the active segment, at start-up
}

// --- compaction, retention, deletion ---

TEST_F(append_time_test, compaction_keeps_the_times_of_surviving_records) {
    cfg.compact = true;
    cfg.delete_enabled = false;
    cfg.segment_bytes = 1;  // one batch per segment
    cfg.min_cleanable_dirty_ratio = 0;
    open();
    auto put_kv = [&](timestamp_ms now, const std::vector<test_record>& recs) {
        test::append_durable(*mgr, p(), build_batch(recs), now);
    };
    put_kv(1000, {kv("a", "a1", t0), kv("b", "b1", t0), kv("c", "c1", t0)});  // 0..2
    put_kv(2000, {kv("a", "a2", t0)});                                        // 3
    put_kv(3000, {kv("b", "b2", t0), kv("d", "d1", t0)});                     // 4..5
    put_kv(4000, {kv("a", "a3", t0)});                                        // 6 (active)
    const runs all = {{0, 1000}, {3, 2000}, {4, 3000}, {6, 4000}};
    ASSERT_EQ(times(0, 7), all);
    auto st = mgr->enforce_compaction(t0 + 10);
    ASSERT_EQ(st.segments_rewritten, 1u);  // segment 0 keeps only c1 (offset 2)
    EXPECT_EQ(times(0, 7), all);
    EXPECT_EQ(on_file(0), (entries{{0, 3, 1000}}));

    // Segments 3 and 6 lose their only record to a4: their files end up empty.
    put_kv(5000, {kv("a", "a4", t0)});  // 7
    put_kv(6000, {kv("e", "e1", t0)});  // 8: active, so that 7 can be cleaned
    st = mgr->enforce_compaction(t0 + 20);
    ASSERT_EQ(st.segments_rewritten, 2u);
    EXPECT_EQ(on_file(3), entries{});
    EXPECT_EQ(on_file(6), entries{});
    for (int round = 0; round < 3; ++round) {
        SCOPED_TRACE(round);
        EXPECT_EQ(times(0, 9), (runs{{0, 1000}, {4, 3000}, {7, 5000}, {8, 6000}}));
        // Offset 3 holds no record any more: the run covering it starts at 4.
        EXPECT_EQ(times(3, 9), (runs{{3, 3000}, {7, 5000}, {8, 6000}}));
        EXPECT_EQ(first_at(1500), 4);  // past the emptied segment
        EXPECT_EQ(first_at(4500), 7);
        reopen(round == 0);
    }
}

TEST_F(append_time_test, retention_and_delete_records_remove_the_file) {
    cfg.segment_bytes = one_batch_segments;
    cfg.retention_ms = 1000;
    open();
    for (int i = 0; i < 6; ++i) put(t0 + 100 * i);
    // Segments 0 and 3 expire (largest timestamps t0 and t0 + 100).
    auto st = mgr->enforce_retention(t0 + 100 + 1001);
    ASSERT_EQ(st.segments_deleted, 2u);
    EXPECT_FALSE(fs::exists(file(0)));
    EXPECT_FALSE(fs::exists(file(3)));
    EXPECT_TRUE(fs::exists(file(6)));
    ASSERT_EQ(*p()->delete_records(10), 10);  // segments 6 goes; 9 holds the start
    EXPECT_FALSE(fs::exists(file(6)));
    EXPECT_TRUE(fs::exists(file(9)));
    EXPECT_EQ(times(0, 18).front(), (append_time_run{9, t0 + 300}));
    EXPECT_EQ(first_at(0), 10);

    // A deletion cut short after the data file went leaves the other files; load
    // removes them.
    ASSERT_TRUE(write_log_start(part(), 12).ok());
    fs::remove(file(9, data_ext));
    reopen(true);
    EXPECT_EQ(first_at(0), 12);  // loads the partition
    EXPECT_FALSE(fs::exists(file(9)));
    EXPECT_EQ(times(0, 18), (runs{{12, t0 + 400}, {15, t0 + 500}}));
}

TEST_F(append_time_test, append_time_files_share_the_descriptor_bound) {
    constexpr size_t max_open = 4;
    open(max_open);
    mgr->add_topic("many", 20, cfg);
    for (int i = 0; i < 20; ++i)
        test::append_durable(*mgr, mgr->get("many", i), batch_at(t0), t0 + i);
    EXPECT_LE(mgr->files().cached(), max_open);
    for (int i = 0; i < 20; ++i) {
        auto r = mgr->get("many", i)->append_times(0, 3);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(*r, (runs{{0, t0 + i}}));
    }
}

}  // namespace
}  // namespace sluice::log

// Retention (log_manager::enforce_retention), DeleteRecords (partition_log::delete_records)
// and the durable log start offset (docs/formats/log-start-offset.md).

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "log/log_start.h"
#include "log/recovery.h"
#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::build_batch;
using sluice::testing::make_batch;
using test::append_durable;
using test::batches_of;
using test::one_batch_segments;
using test::t0;

bytes small_batch(timestamp_ms ts) {
    return make_batch(3, ts, 40);
}

class retention_test : public test::one_partition_log {
  protected:
    fs::path seg_file(offset_t base, const char* ext) const {
        return part() / segment_file_name(base, ext);
    }
    // Batch i holds offsets 3i..3i+2 with timestamps ts(i)..ts(i)+2.
    void fill(int batches, const std::function<timestamp_ms(int)>& ts) {
        for (int i = 0; i < batches; ++i) append_durable(*mgr, p(), small_batch(ts(i)), ts(i));
    }
    int64_t segment_size() const {
        return static_cast<int64_t>(fs::file_size(seg_file(0, data_ext)));
    }
    log_manager::retention_stats retain(timestamp_ms now) { return mgr->enforce_retention(now); }
};

std::string restart_name(const ::testing::TestParamInfo<bool>& param) {
    return param.param ? "clean" : "unclean";
}

timestamp_ms every_100ms(int i) {
    return t0 + 100LL * i;
}

TEST_F(retention_test, time_retention_deletes_segments_older_than_retention_ms) {
    cfg.segment_bytes = one_batch_segments;
    cfg.retention_ms = 1000;
    open();
    fill(10, every_100ms);
    ASSERT_EQ(p()->segment_count(), 10u);
    const int64_t size = segment_size();
    // Segment i's largest timestamp is t0 + 100i + 2: those below now - 1000 go.
    const timestamp_ms now = t0 + 500 + 2 + 1000;
    auto st = retain(now);
    EXPECT_EQ(st.segments_deleted, 5u);
    EXPECT_EQ(st.bytes_deleted, 5 * size);
    EXPECT_EQ(st.partitions_touched, 1u);
    EXPECT_EQ(st.partitions_loaded, 0u);
    EXPECT_EQ(st.partitions_failed, 0u);
    EXPECT_EQ(p()->segment_count(), 5u);
    EXPECT_EQ(p()->log_start_offset(), 15);
    for (offset_t base = 0; base < 15; base += 3) {
        EXPECT_FALSE(fs::exists(seg_file(base, data_ext))) << base;
        EXPECT_FALSE(fs::exists(seg_file(base, index_ext))) << base;
        EXPECT_FALSE(fs::exists(seg_file(base, time_index_ext))) << base;
    }
    EXPECT_EQ(*read_log_start(part()), 15);
    EXPECT_EQ(p()->read(14, 1 << 20, false).code(), errc::out_of_range);
    auto r = p()->read(15, 1 << 20, false);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(batches_of(r->data).front().base_offset, 15);
    EXPECT_EQ(r->log_start_offset, 15);
    // Nothing more is old enough until segment 15 is more than retention_ms old.
    EXPECT_EQ(retain(now).segments_deleted, 0u);
    EXPECT_EQ(retain(now + 1).segments_deleted, 1u);
}

TEST_F(retention_test, size_retention_keeps_at_least_retention_bytes) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(10, every_100ms);
    const int64_t size = segment_size();
    cfg.retention_bytes = 3 * size + 10;
    mgr->add_topic("t", 1, cfg);
    auto st = retain(t0);
    // 4 segments stay: without the oldest of them the partition would be below the limit.
    EXPECT_EQ(st.segments_deleted, 6u);
    EXPECT_EQ(st.bytes_deleted, 6 * size);
    EXPECT_EQ(p()->segment_count(), 4u);
    EXPECT_EQ(p()->log_start_offset(), 18);
    // Size never removes the active segment, even with a limit of 0.
    cfg.retention_bytes = 0;
    mgr->add_topic("t", 1, cfg);
    EXPECT_EQ(retain(t0).segments_deleted, 3u);
    EXPECT_EQ(p()->segment_count(), 1u);
    EXPECT_EQ(p()->log_start_offset(), 27);
    EXPECT_EQ(p()->log_end_offset(), 30);
}

TEST_F(retention_test, expired_active_segment_is_rolled_and_deleted) {
    cfg.retention_ms = 1000;
    open();
    fill(2, every_100ms);  // one segment, the active one, offsets 0..5
    ASSERT_EQ(p()->segment_count(), 1u);
    EXPECT_EQ(retain(t0 + 102 + 1000).segments_deleted, 0u);  // not yet expired
    auto st = retain(t0 + 102 + 1001);
    EXPECT_EQ(st.segments_deleted, 1u);
    EXPECT_EQ(p()->segment_count(), 1u);
    EXPECT_EQ(p()->log_start_offset(), 6);
    EXPECT_EQ(p()->log_end_offset(), 6);
    EXPECT_FALSE(fs::exists(seg_file(0, data_ext)));
    EXPECT_TRUE(fs::exists(seg_file(6, data_ext)));
    auto r = p()->read(6, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());
    EXPECT_EQ(p()->read(5, 1 << 20, false).code(), errc::out_of_range);
    // The new active segment is empty: nothing to roll or delete.
    EXPECT_EQ(retain(t0 + 1'000'000).segments_deleted, 0u);
    EXPECT_EQ(append_durable(*mgr, p(), small_batch(t0 + 5000)).base_offset, 6);
    reopen(true);
    EXPECT_EQ(p()->log_start_offset(), 6);
    EXPECT_EQ(p()->log_end_offset(), 9);
}

TEST_F(retention_test, records_readable_before_their_fsync_expire_like_the_others) {
    cfg.segment_bytes = one_batch_segments;
    cfg.retention_ms = 0;
    open();
    fill(3, every_100ms);
    mgr->set_flush_paused(true);
    // Rolls seal segments 6, 9 and 12 (fsynced); the active one, 15, is not durable yet,
    // but readable: the high watermark is the log end.
    for (int i = 3; i < 6; ++i) ASSERT_TRUE(test::append(*p(), small_batch(every_100ms(i))).ok());
    ASSERT_EQ(p()->high_watermark(), 18);
    ASSERT_LT(p()->durable_offset(), 18);
    ASSERT_EQ(p()->segment_count(), 6u);
    // All expire: the active one is rolled (and so fsynced) first, as in Kafka.
    auto st = retain(t0 + 1'000'000);
    EXPECT_EQ(st.segments_deleted, 6u);
    EXPECT_EQ(p()->log_start_offset(), 18);
    EXPECT_EQ(p()->log_end_offset(), 18);
    EXPECT_EQ(p()->segment_count(), 1u);
    mgr->set_flush_paused(false);
    reopen(true);
    EXPECT_EQ(p()->log_start_offset(), 18);
    EXPECT_EQ(p()->log_end_offset(), 18);
}

// DeleteRecords up to records readable but not yet fsynced: they are fsynced first, so
// a machine crash cannot leave the durable log start past the durable log end.
TEST_F(retention_test, delete_records_above_the_durable_offset_fsyncs_first) {
    open();
    fill(2, every_100ms);
    mgr->set_flush_paused(true);
    ASSERT_TRUE(test::append(*p(), small_batch(every_100ms(2))).ok());
    ASSERT_EQ(p()->durable_offset(), 6);
    ASSERT_EQ(p()->high_watermark(), 9);
    EXPECT_EQ(*p()->delete_records(-1), 9);
    EXPECT_EQ(p()->durable_offset(), 9);
    EXPECT_EQ(p()->log_start_offset(), 9);
    mgr->set_flush_paused(false);
}

TEST_F(retention_test, config_changes_apply_at_the_next_pass) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(4, every_100ms);
    const timestamp_ms later = t0 + 1'000'000;
    EXPECT_EQ(retain(later).segments_deleted, 0u);  // no limits
    cfg.retention_ms = 1000;
    cfg.delete_enabled = false;  // cleanup.policy=compact
    mgr->add_topic("t", 1, cfg);
    EXPECT_EQ(retain(later).segments_deleted, 0u);
    cfg.delete_enabled = true;
    mgr->add_topic("t", 1, cfg);
    EXPECT_EQ(retain(later).segments_deleted, 4u);
    EXPECT_EQ(p()->log_start_offset(), 12);
}

TEST_F(retention_test, log_append_time_topics_expire_by_append_time) {
    cfg.segment_bytes = one_batch_segments;
    cfg.retention_ms = 1000;
    cfg.timestamp_type = protocol::timestamp_type::log_append_time;
    open();
    // Producer timestamps far in the future are replaced by the append time.
    for (int i = 0; i < 4; ++i)
        append_durable(*mgr, p(), small_batch(std::numeric_limits<int32_t>::max() * 1000LL),
                       every_100ms(i));
    EXPECT_EQ(retain(t0 + 100 + 1001).segments_deleted, 2u);
    EXPECT_EQ(p()->log_start_offset(), 6);
}

TEST_F(retention_test, segments_without_timestamps_expire_by_file_time) {
    cfg.segment_bytes = one_batch_segments;
    cfg.retention_ms = 60'000;
    open();
    const timestamp_ms now = now_ms();
    for (int i = 0; i < 3; ++i)  // producers that send no timestamp (-1)
        append_durable(*mgr, p(), make_batch(3, -1, 40, 0), now);
    EXPECT_EQ(retain(now).segments_deleted, 0u);  // written just now
    EXPECT_EQ(retain(now + 120'000).segments_deleted, 3u);
}

TEST_F(retention_test, delete_records_mid_segment_hides_the_records_below) {
    cfg.index_interval_bytes = 1;
    open();
    // Offsets 0..8; the largest timestamp (600) sits below the new start.
    append_durable(*mgr, p(),
                   build_batch({{"a", "0", 500, {}}, {"b", "1", 10, {}}, {"c", "2", 20, {}}}));
    append_durable(*mgr, p(),
                   build_batch({{"d", "3", 600, {}}, {"e", "4", 30, {}}, {"f", "5", 40, {}}}));
    append_durable(*mgr, p(),
                   build_batch({{"g", "6", 50, {}}, {"h", "7", 70, {}}, {"i", "8", 60, {}}}));
    auto low = p()->delete_records(4);
    ASSERT_TRUE(low.ok()) << low.err().message;
    EXPECT_EQ(*low, 4);
    EXPECT_EQ(p()->log_start_offset(), 4);  // ListOffsets EARLIEST
    EXPECT_EQ(p()->segment_count(), 1u);
    EXPECT_EQ(p()->read(3, 1 << 20, false).code(), errc::out_of_range);
    EXPECT_EQ(p()->read_slice_at(0, 1 << 20, false).code(), errc::out_of_range);
    auto r = p()->read(4, 1 << 20, false);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->log_start_offset, 4);
    // The batch holding the start comes whole, as from Kafka.
    EXPECT_EQ(batches_of(r->data).front().base_offset, 3);
    ASSERT_TRUE(p()->read(8, 1 << 20, false).ok());
    // Timestamp lookups see only records from the start on.
    EXPECT_EQ(*p()->offset_for_timestamp(0), (offset_and_time{4, 30}));
    EXPECT_EQ(*p()->offset_for_timestamp(35), (offset_and_time{5, 40}));
    EXPECT_EQ(*p()->offset_for_timestamp(65), (offset_and_time{7, 70}));
    EXPECT_FALSE(p()->offset_for_timestamp(71)->has_value());
    EXPECT_EQ(*p()->max_timestamp_offset(), (offset_and_time{7, 70}));
    EXPECT_EQ(test::append(*p(), small_batch(5))->log_start_offset, 4);
}

TEST_F(retention_test, delete_records_inside_a_log_append_time_batch) {
    cfg.timestamp_type = protocol::timestamp_type::log_append_time;
    open();
    append_durable(*mgr, p(), small_batch(1), 7000);
    append_durable(*mgr, p(), small_batch(1), 5000);  // an append clock that went back
    ASSERT_EQ(*p()->delete_records(1), 1);
    EXPECT_EQ(*p()->offset_for_timestamp(0), (offset_and_time{1, 7000}));
    EXPECT_EQ(*p()->max_timestamp_offset(), (offset_and_time{1, 7000}));
    ASSERT_EQ(*p()->delete_records(3), 3);
    EXPECT_EQ(*p()->offset_for_timestamp(0), (offset_and_time{3, 5000}));
    EXPECT_EQ(*p()->max_timestamp_offset(), (offset_and_time{3, 5000}));
}

TEST_F(retention_test, delete_records_removes_whole_segments_but_not_the_active_one) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(5, every_100ms);  // segments 0, 3, 6, 9, 12 (active)
    ASSERT_EQ(*p()->delete_records(7), 7);
    EXPECT_EQ(p()->segment_count(), 3u);
    EXPECT_FALSE(fs::exists(seg_file(3, data_ext)));
    EXPECT_TRUE(fs::exists(seg_file(6, data_ext)));
    // -1: up to the high watermark; the active segment stays although wholly below.
    ASSERT_EQ(*p()->delete_records(-1), 15);
    EXPECT_EQ(p()->segment_count(), 1u);
    EXPECT_TRUE(fs::exists(seg_file(12, data_ext)));
    EXPECT_EQ(p()->read(14, 1 << 20, false).code(), errc::out_of_range);
    auto r = p()->read(15, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());
    EXPECT_FALSE(p()->offset_for_timestamp(0)->has_value());
    EXPECT_FALSE(p()->max_timestamp_offset()->has_value());
    EXPECT_EQ(append_durable(*mgr, p(), small_batch(t0)).base_offset, 15);
    EXPECT_EQ(*p()->offset_for_timestamp(0), (offset_and_time{15, t0}));
}

TEST_F(retention_test, delete_records_rejects_bad_offsets_and_never_moves_back) {
    open();
    // A partition never written: nothing to delete, and no directory appears.
    EXPECT_EQ(*p()->delete_records(-1), 0);
    EXPECT_EQ(*p()->delete_records(0), 0);
    EXPECT_EQ(p()->delete_records(1).code(), errc::out_of_range);
    EXPECT_FALSE(fs::exists(part()));
    fill(3, every_100ms);
    EXPECT_EQ(p()->delete_records(-2).code(), errc::out_of_range);
    EXPECT_EQ(p()->delete_records(10).code(), errc::out_of_range);
    mgr->set_flush_paused(true);
    ASSERT_TRUE(test::append(*p(), small_batch(t0)).ok());
    EXPECT_EQ(p()->delete_records(13).code(), errc::out_of_range);  // past the high watermark
    EXPECT_EQ(*p()->delete_records(9), 9);
    mgr->set_flush_paused(false);
    EXPECT_EQ(*p()->delete_records(5), 9);  // lower: the start stays
    EXPECT_EQ(*p()->delete_records(9), 9);
    EXPECT_EQ(*read_log_start(part()), 9);
}

TEST_F(retention_test, log_start_survives_clean_and_unclean_restarts) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(4, every_100ms);
    ASSERT_EQ(*p()->delete_records(4), 4);
    for (bool clean : {true, false}) {
        SCOPED_TRACE(clean ? "clean" : "unclean");
        reopen(clean);
        EXPECT_EQ(summary.partitions_repaired, 0u);
        EXPECT_EQ(p()->log_start_offset(), 4);
        EXPECT_EQ(p()->segment_count(), 3u);
        EXPECT_EQ(p()->read(3, 1 << 20, false).code(), errc::out_of_range);
        EXPECT_EQ(*p()->offset_for_timestamp(0), (offset_and_time{4, every_100ms(1) + 1}));
    }
    // Retention's start (a segment base) persists the same way.
    cfg.retention_bytes = 0;
    mgr->add_topic("t", 1, cfg);
    ASSERT_EQ(retain(t0).segments_deleted, 2u);
    EXPECT_EQ(p()->log_start_offset(), 9);
    for (bool clean : {true, false}) {
        SCOPED_TRACE(clean ? "clean" : "unclean");
        reopen(clean);
        EXPECT_EQ(p()->log_start_offset(), 9);
        EXPECT_EQ(p()->log_end_offset(), 12);
    }
}

TEST_F(retention_test, readers_holding_a_deleted_segment_keep_reading_it) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(3, every_100ms);
    auto s = p()->read_slice_at(0, 1 << 20, false);
    ASSERT_TRUE(s.ok());
    ASSERT_EQ(*p()->delete_records(-1), 9);
    ASSERT_FALSE(fs::exists(seg_file(0, data_ext)));
    bytes data(s->size);
    ASSERT_TRUE(read_exact(*s->data_file, data.data(), data.size(), s->position).ok());
    EXPECT_TRUE(protocol::validate_batches(data, {}).ok());
    EXPECT_EQ(batches_of(data).front().base_offset, 0);
}

class unloaded_retention_test : public retention_test,
                                public ::testing::WithParamInterface<bool> {};

TEST_P(unloaded_retention_test, partitions_unused_since_a_restart_are_trimmed) {
    cfg.segment_bytes = one_batch_segments;
    open();
    mgr->add_topic("fresh", 2, cfg);
    fill(4, every_100ms);
    for (int i = 0; i < 4; ++i)
        append_durable(*mgr, mgr->get("fresh", 0), small_batch(t0 + 100'000), t0 + 100'000);
    cfg.retention_ms = 10'000;
    reopen(GetParam());
    mgr->add_topic("fresh", 2, cfg);
    ASSERT_FALSE(p()->loaded());
    // Long after: "t" expired while nobody used it; "fresh" did not.
    auto st = retain(t0 + 105'000);
    EXPECT_EQ(st.partitions_loaded, 1u);
    EXPECT_EQ(st.partitions_touched, 1u);
    EXPECT_EQ(st.segments_deleted, 4u);
    EXPECT_TRUE(p()->loaded());
    EXPECT_EQ(p()->log_start_offset(), 12);
    EXPECT_FALSE(mgr->get("fresh", 0)->loaded());
    EXPECT_FALSE(mgr->get("fresh", 1)->loaded());
    EXPECT_FALSE(fs::exists(test::partition_dir(dir.path, "fresh", 1)));
    // Size alone makes an unloaded partition a candidate too.
    cfg.retention_ms = -1;
    cfg.retention_bytes = 0;
    mgr->add_topic("fresh", 2, cfg);
    st = retain(t0 + 105'000);
    EXPECT_EQ(st.partitions_loaded, 1u);
    EXPECT_EQ(st.segments_deleted, 3u);
    EXPECT_EQ(mgr->get("fresh", 0)->log_start_offset(), 9);
    EXPECT_FALSE(mgr->get("fresh", 1)->loaded());
}

INSTANTIATE_TEST_SUITE_P(restarts, unloaded_retention_test, ::testing::Bool(), restart_name);

TEST_F(retention_test, concurrent_appends_reads_and_trims_stay_consistent) {
    cfg.segment_bytes = 600;
    open();
    std::atomic<bool> stop{false};
    std::thread reader([&] {
        while (!stop.load()) {
            const offset_t start = p()->log_start_offset();
            auto r = p()->read(start, 1 << 16, true);
            // The start may move between the two calls; nothing else may go wrong.
            if (!r.ok()) {
                ASSERT_EQ(r.code(), errc::out_of_range) << r.err().message;
                continue;
            }
            if (!r->data.empty()) {
                ASSERT_TRUE(protocol::validate_batches(r->data, {}).ok());
                EXPECT_GE(batches_of(r->data).back().last_offset(), start);
            }
            ASSERT_TRUE(p()->max_timestamp_offset().ok());
        }
    });
    std::thread trimmer([&] {
        log_config c = cfg;
        c.retention_bytes = 2000;
        mgr->add_topic("t", 1, c);
        for (int i = 0; !stop.load(); ++i) {
            auto st = mgr->enforce_retention(t0);
            EXPECT_EQ(st.partitions_failed, 0u);
            if (i % 7 == 0) {
                auto d = p()->delete_records(std::max<offset_t>(p()->high_watermark() - 10, 0));
                ASSERT_TRUE(d.ok()) << d.err().message;
            }
        }
    });
    for (int i = 0; i < 300; ++i) {
        auto a = test::append(*p(), small_batch(t0 + i), t0 + i);
        ASSERT_TRUE(a.ok());
        if (i % 10 == 0) {
            ASSERT_TRUE(test::wait_durable(*mgr, p(), a->last_offset).ok());
        }
    }
    ASSERT_TRUE(test::wait_durable(*mgr, p(), 899).ok());
    stop = true;
    reader.join();
    trimmer.join();
    EXPECT_EQ(mgr->enforce_retention(t0).partitions_failed, 0u);
    EXPECT_LT(p()->segment_count(), 10u);
    reopen(false);
    EXPECT_EQ(p()->log_end_offset(), 900);
    auto r = p()->read(p()->log_start_offset(), 1 << 20, false);
    ASSERT_TRUE(r.ok()) << r.err().message;
}

// --- the log-start-offset file and crashes around deletions ---

TEST(log_start_file, round_trips_and_rejects_damage) {
    for (offset_t o : {offset_t{0}, offset_t{7}, offset_t{1234567890123},
                       std::numeric_limits<offset_t>::max()}) {
        auto text = encode_log_start(o);
        auto back = decode_log_start(text);
        ASSERT_TRUE(back.ok()) << back.err().message;
        EXPECT_EQ(*back, o);
    }
    const bytes good = encode_log_start(42);
    const std::string body = "sluice log-start-offset v1\n42\n";
    EXPECT_EQ(std::string(good.begin(), good.end()),
              body + fmt::format("{:08x}\n", crc32c(body.data(), body.size())));
    for (size_t n = 0; n < good.size(); ++n)
        EXPECT_EQ(decode_log_start(bytes_view(good.data(), n)).code(), errc::corrupt) << n;
    auto edit = [&](size_t at, char c) {
        bytes b = good;
        b[at] = static_cast<uint8_t>(c);
        return decode_log_start(b).code();
    };
    EXPECT_EQ(edit(27, '5'), errc::corrupt);  // the offset: CRC mismatch
    EXPECT_EQ(edit(0, 'S'), errc::corrupt);   // not our file
    EXPECT_EQ(edit(25, '2'), errc::unsupported);
    bytes longer = good;
    longer.push_back('\n');
    EXPECT_EQ(decode_log_start(longer).code(), errc::corrupt);
    auto with_offset = [](const std::string& digits) {
        std::string b = "sluice log-start-offset v1\n" + digits + "\n";
        std::string text = b + fmt::format("{:08x}\n", crc32c(b.data(), b.size()));
        return decode_log_start(bytes(text.begin(), text.end())).code();
    };
    EXPECT_EQ(with_offset("42"), errc::ok);
    EXPECT_EQ(with_offset("-1"), errc::corrupt);
    EXPECT_EQ(with_offset("042"), errc::corrupt);
    EXPECT_EQ(with_offset(""), errc::corrupt);
    EXPECT_EQ(with_offset("99999999999999999999"), errc::corrupt);
}

struct damage_reporter final : recovery_reporter {
    void truncated(const fs::path&, int64_t, int64_t, offset_t, const std::string&) override {}
    void index_rebuilt(const fs::path&, const std::string&) override {}
    void corruption(const fs::path& f, const std::string&) override {
        damaged.push_back(f.filename().string());
    }
    std::vector<std::string> damaged;
};

class damaged_log_start_test : public retention_test,
                               public ::testing::WithParamInterface<std::string> {};

TEST_P(damaged_log_start_test, is_reported_and_ignored) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(3, every_100ms);
    ASSERT_EQ(*p()->delete_records(4), 4);
    mgr->close();
    const fs::path file = part() / log_start_file_name;
    bytes text = *read_whole_file(file);
    const std::string& damage = GetParam();
    if (damage == "truncated") text.resize(text.size() - 4);
    if (damage == "flipped") text[27] ^= 0x01;  // '4' -> '5': the CRC catches it
    if (damage == "empty") text.clear();
    if (damage == "garbage") text.assign(100, 0xa5);
    ASSERT_TRUE(write_whole_file(file, text).ok());
    // The unclean path reports it to the recovery reporter.
    damage_reporter rep;
    fd_cache cache(4);
    auto sum = recover_partition(part(), cfg.index_interval_bytes, cache, true, rep);
    ASSERT_TRUE(sum.ok()) << sum.err().message;
    EXPECT_EQ(rep.damaged, std::vector<std::string>{log_start_file_name});
    EXPECT_NE(sum->describe().find(log_start_file_name), std::string::npos) << sum->describe();
    EXPECT_TRUE(fs::exists(part() / log_start_damaged_name));  // kept for inspection
    // The log starts at its first segment again, and works.
    open();
    EXPECT_EQ(p()->log_start_offset(), 3);
    auto r = p()->read(3, 1 << 20, false);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(batches_of(r->data).front().base_offset, 3);
    ASSERT_EQ(*p()->delete_records(5), 5);
    EXPECT_EQ(*read_log_start(part()), 5);
}

INSTANTIATE_TEST_SUITE_P(damages, damaged_log_start_test,
                         ::testing::Values("truncated", "flipped", "empty", "garbage"));

TEST_F(retention_test, damaged_log_start_found_lazily_after_clean_shutdown) {
    open();
    fill(3, every_100ms);
    ASSERT_EQ(*p()->delete_records(4), 4);
    mgr->close();
    ASSERT_TRUE(write_whole_file(part() / log_start_file_name, bytes{'x'}).ok());
    open();
    EXPECT_EQ(p()->log_start_offset(), 0);
    EXPECT_TRUE(p()->read(0, 1 << 20, false).ok());
}

TEST_F(retention_test, newer_log_start_format_is_reported_and_left_alone) {
    open();
    fill(3, every_100ms);
    mgr->close();
    const std::string newer = "sluice log-start-offset v2\n4\nwhatever\n";
    ASSERT_TRUE(
        write_whole_file(part() / log_start_file_name, bytes(newer.begin(), newer.end())).ok());
    open();
    EXPECT_EQ(p()->log_start_offset(), 0);
    EXPECT_TRUE(fs::exists(part() / log_start_file_name));
    EXPECT_FALSE(fs::exists(part() / log_start_damaged_name));
}

// What each crash point of a deletion leaves, loaded after a clean and an unclean restart.
class interrupted_deletion_test : public retention_test,
                                  public ::testing::WithParamInterface<bool> {
  protected:
    void SetUp() override {
        retention_test::SetUp();
        cfg.segment_bytes = one_batch_segments;
        open();
        fill(5, every_100ms);  // segments 0, 3, 6, 9, 12
        mgr->close();
        for (offset_t base : {0, 3})
            for (const char* ext : {data_ext, index_ext, time_index_ext})
                saved[seg_file(base, ext)] = *read_whole_file(seg_file(base, ext));
        open();
        ASSERT_EQ(*p()->delete_records(7), 7);
        mgr->close();
    }
    void restore(offset_t base, const char* ext) {
        ASSERT_TRUE(write_whole_file(seg_file(base, ext), saved[seg_file(base, ext)]).ok());
    }
    void restart_and_check() {
        if (!GetParam()) fs::remove(dir.path / "logs" / ".clean-shutdown");
        open();
        EXPECT_EQ(summary.partitions_failed, 0u);
        EXPECT_EQ(p()->log_start_offset(), 7);
        EXPECT_EQ(p()->segment_count(), 3u);
        EXPECT_EQ(p()->log_end_offset(), 15);
        for (offset_t o = 7; o < 15; ++o) {
            auto r = p()->read(o, 1 << 20, false);
            ASSERT_TRUE(r.ok()) << r.err().message;
            EXPECT_EQ(batches_of(r->data).front().base_offset, o / 3 * 3);
        }
        EXPECT_EQ(p()->read(6, 1 << 20, false).code(), errc::out_of_range);
        for (offset_t base : {0, 3})
            for (const char* ext : {data_ext, index_ext, time_index_ext})
                EXPECT_FALSE(fs::exists(seg_file(base, ext))) << base << ext;
        EXPECT_EQ(append_durable(*mgr, p(), small_batch(t0)).base_offset, 15);
    }
    std::map<fs::path, bytes> saved;
};

TEST_P(interrupted_deletion_test, data_file_gone_index_files_left) {
    restore(3, index_ext);
    restore(3, time_index_ext);
    restore(0, time_index_ext);
    restart_and_check();
}

TEST_P(interrupted_deletion_test, log_start_written_no_segment_deleted_yet) {
    for (offset_t base : {0, 3})
        for (const char* ext : {data_ext, index_ext, time_index_ext}) restore(base, ext);
    restart_and_check();
}

TEST_P(interrupted_deletion_test, older_segment_back_after_a_newer_one_went) {
    // Unlinks not yet durable may come back in any order: a gap below the start.
    restore(0, data_ext);
    restart_and_check();
}

TEST_P(interrupted_deletion_test, temporary_log_start_file_left) {
    ASSERT_TRUE(write_whole_file(part() / "log-start-offset.tmp", bytes{'s', 'l'}).ok());
    restart_and_check();
    EXPECT_FALSE(fs::exists(part() / "log-start-offset.tmp"));
}

INSTANTIATE_TEST_SUITE_P(restarts, interrupted_deletion_test, ::testing::Bool(), restart_name);

TEST_F(retention_test, segment_files_all_gone_resume_at_the_log_start) {
    cfg.segment_bytes = one_batch_segments;
    open();
    fill(3, every_100ms);
    ASSERT_EQ(*p()->delete_records(-1), 9);
    mgr->close();
    for (const char* ext : {data_ext, index_ext, time_index_ext}) fs::remove(seg_file(6, ext));
    open();
    EXPECT_EQ(p()->log_start_offset(), 9);
    EXPECT_EQ(p()->log_end_offset(), 9);
    // Offsets are never handed out twice.
    EXPECT_EQ(append_durable(*mgr, p(), small_batch(t0)).base_offset, 9);
}

TEST_F(retention_test, log_start_past_the_log_end_follows_it_down) {
    open();
    fill(2, every_100ms);
    mgr->close();
    ASSERT_TRUE(write_log_start(part(), 100).ok());
    open();
    EXPECT_EQ(p()->log_start_offset(), 6);
    EXPECT_EQ(*read_log_start(part()), 6);
    append_durable(*mgr, p(), small_batch(t0));
    reopen(true);
    EXPECT_EQ(p()->log_start_offset(), 6);
}

}  // namespace
}  // namespace sluice::log

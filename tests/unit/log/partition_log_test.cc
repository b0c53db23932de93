#include "log/partition_log.h"

#include <gtest/gtest.h>

#include <random>

#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::build_batch;
using sluice::testing::make_batch;
using sluice::testing::test_record;
using test::append_durable;
using test::batches_of;

class partition_log_test : public ::testing::Test {
  protected:
    void open(size_t max_open_files = 64) {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, max_open_files});
        auto r = mgr->open();
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    partition_log* topic(const std::string& name, const log_config& cfg = {}, int parts = 1) {
        mgr->add_topic(name, parts, cfg);
        return mgr->get(name, 0);
    }

    test::temp_dir dir;
    std::unique_ptr<log_manager> mgr;
};

TEST_F(partition_log_test, append_assigns_offsets_and_read_returns_whole_batches) {
    open();
    auto* p = topic("t");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->log_end_offset(), 0);
    EXPECT_EQ(mgr->get("t", 1), nullptr);
    EXPECT_EQ(mgr->get("nope", 0), nullptr);

    auto a = append_durable(*mgr, p, make_batch(3, 100));
    EXPECT_EQ(a.base_offset, 0);
    EXPECT_EQ(a.last_offset, 2);
    EXPECT_EQ(a.log_append_time, -1);
    bytes two = make_batch(2, 200);
    testing::append_to(two, make_batch(4, 300));  // one payload, two batches
    auto b = append_durable(*mgr, p, two);
    EXPECT_EQ(b.base_offset, 3);
    EXPECT_EQ(b.last_offset, 8);
    EXPECT_EQ(p->log_end_offset(), 9);
    EXPECT_EQ(p->high_watermark(), 9);
    EXPECT_EQ(p->log_start_offset(), 0);

    auto r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = batches_of(r->data);
    ASSERT_EQ(hs.size(), 3u);
    EXPECT_EQ(hs[0].base_offset, 0);
    EXPECT_EQ(hs[1].base_offset, 3);
    EXPECT_EQ(hs[2].base_offset, 5);
    EXPECT_EQ(hs[2].last_offset(), 8);
    EXPECT_TRUE(protocol::validate_batches(r->data, {}).ok());  // CRCs still hold
    EXPECT_EQ(r->high_watermark, 9);
    EXPECT_EQ(r->log_end_offset, 9);

    // A read from inside a batch starts with that whole batch.
    r = p->read(6, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).front().base_offset, 5);
    // At the high watermark: empty and fine. Past the end or before the start: out of range.
    r = p->read(9, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());
    EXPECT_EQ(p->read(10, 1 << 20, false).code(), errc::out_of_range);
    EXPECT_EQ(p->read(-1, 1 << 20, false).code(), errc::out_of_range);
}

TEST_F(partition_log_test, rolls_by_bytes) {
    open();
    log_config cfg;
    cfg.segment_bytes = 1000;
    cfg.index_interval_bytes = 100;
    auto* p = topic("t", cfg);
    size_t batch_size = make_batch(2, 0, 100).size();
    for (int i = 0; i < 12; ++i) append_durable(*mgr, p, make_batch(2, i, 100));
    EXPECT_GT(p->segment_count(), 3u);
    for (const auto& f : fs::directory_iterator(test::partition_dir(dir.path, "t", 0)))
        if (f.path().extension() == ".log") {
            EXPECT_LE(f.file_size(), 1000u);
        }
    for (offset_t o = 0; o < 24; ++o) {
        auto r = p->read(o, batch_size, false);
        ASSERT_TRUE(r.ok());
        auto hs = batches_of(r->data);
        ASSERT_EQ(hs.size(), 1u) << o;
        EXPECT_EQ(hs[0].base_offset, o / 2 * 2);
    }
}

TEST_F(partition_log_test, rolls_by_age) {
    open();
    log_config cfg;
    cfg.segment_ms = 100;
    auto* p = topic("t", cfg);
    append_durable(*mgr, p, make_batch(1, 0), 1000);
    append_durable(*mgr, p, make_batch(1, 0), 1099);
    EXPECT_EQ(p->segment_count(), 1u);
    append_durable(*mgr, p, make_batch(1, 0), 1100);
    EXPECT_EQ(p->segment_count(), 2u);
    EXPECT_TRUE(fs::exists(test::partition_dir(dir.path, "t", 0) / "00000000000000000002.log"));
    auto r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 2u);  // one segment per read
    r = p->read(2, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).front().base_offset, 2);
}

TEST_F(partition_log_test, read_respects_max_bytes_min_one_and_high_watermark) {
    open();
    auto* p = topic("t");
    size_t s = make_batch(2, 0, 50).size();
    for (int i = 0; i < 4; ++i) append_durable(*mgr, p, make_batch(2, 0, 50));
    auto r = p->read(0, s * 5 / 2, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 2u);
    EXPECT_EQ(r->data.size(), 2 * s);
    r = p->read(0, s / 2, true);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->data.size(), s);  // the first batch whole, although above max_bytes
    r = p->read(0, s / 2, false);
    ASSERT_TRUE(r.ok());
    EXPECT_TRUE(r->data.empty());

    // Appended but not yet durable: readable already, as in Kafka with one replica.
    mgr->set_flush_paused(true);
    auto more = test::append(*p, make_batch(2, 0, 50));
    ASSERT_TRUE(more.ok());
    EXPECT_EQ(p->log_end_offset(), 10);
    EXPECT_EQ(p->high_watermark(), 10);
    EXPECT_EQ(p->durable_offset(), 8);
    r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 5u);
    r = p->read(8, 1 << 20, true);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 1u);
    EXPECT_EQ(r->high_watermark, 10);
    mgr->set_flush_paused(false);
    ASSERT_TRUE(test::wait_durable(*mgr, p, 9).ok());
    EXPECT_EQ(p->durable_offset(), 10);
}

TEST_F(partition_log_test, slice_cuts_at_max_bytes_and_stops_at_the_high_watermark) {
    open();
    auto* p = topic("t");
    size_t s = make_batch(2, 0, 50).size();
    for (int i = 0; i < 3; ++i) append_durable(*mgr, p, make_batch(2, 0, 50));
    // Cut inside the second batch, as a fetch with max_bytes may be.
    auto r = p->read_slice_at(0, s + s / 2, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, s + s / 2);
    ASSERT_NE(r->data_file, nullptr);
    // The bytes of the slice are the stored batches: the first one whole.
    bytes first(s);
    ASSERT_TRUE(read_exact(*r->data_file, first.data(), s, r->position).ok());
    EXPECT_EQ(batches_of(first).size(), 1u);
    EXPECT_EQ(batches_of(first)[0].base_offset, 0);
    // min_one widens the slice to the first batch.
    r = p->read_slice_at(2, s / 3, true);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, s);
    // From an offset inside the last batch: that batch from its start.
    r = p->read_slice_at(5, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, s);
    // Appended but not durable: in the slice already; at the high watermark, empty.
    mgr->set_flush_paused(true);
    ASSERT_TRUE(test::append(*p, make_batch(2, 0, 50)).ok());
    r = p->read_slice_at(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, 4 * s);
    r = p->read_slice_at(6, 1 << 20, true);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, s);
    r = p->read_slice_at(8, 1 << 20, true);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->size, 0u);
    mgr->set_flush_paused(false);
}

// First record (by offset) with timestamp >= ts, by brute force.
std::optional<offset_and_time> expected_at(const std::vector<offset_and_time>& all,
                                           timestamp_ms ts) {
    for (const auto& r : all)
        if (r.timestamp >= ts) return r;
    return std::nullopt;
}

TEST_F(partition_log_test, offset_for_timestamp_create_time_matches_brute_force) {
    open();
    log_config cfg;
    cfg.index_interval_bytes = 150;  // many index entries
    cfg.segment_bytes = 800;         // several segments
    auto* p = topic("t", cfg);
    EXPECT_FALSE(p->offset_for_timestamp(0)->has_value());
    EXPECT_FALSE(p->max_timestamp_offset()->has_value());
    std::mt19937 rng(7);
    std::vector<offset_and_time> all;
    offset_t next = 0;
    int64_t clock = 10000;
    for (int b = 0; b < 60; ++b) {
        std::vector<test_record> recs;
        int n = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < n; ++i) {
            // Mostly rising, with producers' clocks jumping back now and then.
            clock += static_cast<int64_t>(rng() % 50) - 15;
            recs.push_back({"k", "v", clock, {}});
            all.push_back({next++, clock});
        }
        append_durable(*mgr, p, build_batch(recs));
    }
    ASSERT_GT(p->segment_count(), 2u);
    for (timestamp_ms ts = 9900; ts <= clock + 10; ts += 7) {
        auto got = p->offset_for_timestamp(ts);
        ASSERT_TRUE(got.ok()) << got.err().message;
        EXPECT_EQ(*got, expected_at(all, ts)) << "ts " << ts;
    }
    auto best = all.front();
    for (const auto& r : all)
        if (r.timestamp > best.timestamp) best = r;
    auto m = p->max_timestamp_offset();
    ASSERT_TRUE(m.ok());
    EXPECT_EQ(*m, best);

    // Appended records are found by both lookups before they are durable.
    mgr->set_flush_paused(true);
    ASSERT_TRUE(test::append(*p, make_batch(1, clock + 1000)).ok());
    EXPECT_EQ(*p->offset_for_timestamp(clock + 500), (offset_and_time{next, clock + 1000}));
    EXPECT_EQ(*p->max_timestamp_offset(), (offset_and_time{next, clock + 1000}));
    EXPECT_EQ(p->durable_offset(), next);
    mgr->set_flush_paused(false);
}

TEST_F(partition_log_test, max_timestamp_ties_pick_the_earliest) {
    open();
    auto* p = topic("t");
    append_durable(*mgr, p, build_batch({{"a", "1", 50, {}}, {"b", "2", 90, {}}}));
    append_durable(*mgr, p, build_batch({{"c", "3", 90, {}}, {"d", "4", 10, {}}}));
    EXPECT_EQ(*p->max_timestamp_offset(), (offset_and_time{1, 90}));
    EXPECT_EQ(*p->offset_for_timestamp(60), (offset_and_time{1, 90}));
    EXPECT_EQ(*p->offset_for_timestamp(5), (offset_and_time{0, 50}));
}

TEST_F(partition_log_test, log_append_time_stamps_batches_and_indexes_them) {
    open();
    log_config cfg;
    cfg.timestamp_type = protocol::timestamp_type::log_append_time;
    cfg.index_interval_bytes = 1;
    auto* p = topic("t", cfg);
    auto a = append_durable(*mgr, p, make_batch(3, 99999), 5000);  // producer time ignored
    EXPECT_EQ(a.log_append_time, 5000);
    append_durable(*mgr, p, make_batch(2, 1), 6000);
    append_durable(*mgr, p, make_batch(2, 1), 7000);
    auto r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    auto hs = batches_of(r->data);
    ASSERT_EQ(hs.size(), 3u);
    EXPECT_EQ(hs[1].ts_type(), protocol::timestamp_type::log_append_time);
    EXPECT_EQ(hs[1].max_timestamp, 6000);
    EXPECT_TRUE(protocol::validate_batches(r->data, {}).ok());  // CRC recomputed
    EXPECT_EQ(*p->offset_for_timestamp(5500), (offset_and_time{3, 6000}));
    EXPECT_EQ(*p->offset_for_timestamp(5000), (offset_and_time{0, 5000}));
    EXPECT_EQ(*p->offset_for_timestamp(6001), (offset_and_time{5, 7000}));
    EXPECT_FALSE(p->offset_for_timestamp(7001)->has_value());
    EXPECT_EQ(*p->max_timestamp_offset(), (offset_and_time{5, 7000}));
}

TEST_F(partition_log_test, lazy_descriptors_bounded_across_ten_partitions) {
    open(2);
    log_config cfg;
    cfg.segment_bytes = 600;  // rolls too
    mgr->add_topic("t", 10, cfg);
    std::vector<offset_t> ends(10, 0);
    for (int round = 0; round < 6; ++round) {
        for (int i = 0; i < 10; ++i) {
            auto* p = mgr->get("t", i);
            auto a = append_durable(*mgr, p, make_batch(2, round, 60));
            EXPECT_EQ(a.base_offset, ends[static_cast<size_t>(i)]);
            ends[static_cast<size_t>(i)] = a.last_offset + 1;
            // Read an older partition in between, evicting the one just written.
            auto* q = mgr->get("t", (i + 3) % 10);
            if (q->high_watermark() > 0) {
                auto r = q->read(q->high_watermark() - 1, 1 << 20, false);
                ASSERT_TRUE(r.ok()) << r.err().message;
                EXPECT_EQ(batches_of(r->data).size(), 1u);
            }
            EXPECT_LE(mgr->files().cached(), 2u);
        }
    }
    for (int i = 0; i < 10; ++i) {
        auto r = mgr->get("t", i)->read(0, 1 << 20, false);
        ASSERT_TRUE(r.ok());
        EXPECT_EQ(batches_of(r->data).front().base_offset, 0);
    }
    EXPECT_GT(mgr->files().opens(), 20u);  // descriptors were really recycled
}

}  // namespace
}  // namespace sluice::log

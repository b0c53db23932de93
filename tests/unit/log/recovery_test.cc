#include "log/recovery.h"

#include <gtest/gtest.h>

#include "log/file_header.h"
#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;
using test::append_durable;
using test::batches_of;

struct recording_reporter final : recovery_reporter {
    void truncated(const fs::path& f, int64_t pos, int64_t n, offset_t end,
                   const std::string&) override {
        cuts.push_back({f.filename().string(), pos, n, end});
    }
    void index_rebuilt(const fs::path& f, const std::string&) override {
        rebuilt.push_back(f.filename().string());
    }
    void corruption(const fs::path& f, const std::string&) override {
        damaged.push_back(f.filename().string());
    }
    struct cut {
        std::string file;
        int64_t position, bytes;
        offset_t log_end;
    };
    std::vector<cut> cuts;
    std::vector<std::string> rebuilt, damaged;
};

class recovery_test : public ::testing::Test {
  protected:
    std::unique_ptr<log_manager> open_manager() {
        auto m = std::make_unique<log_manager>(log_manager::options{dir.path, 16});
        // Declared first, as the broker does from its catalog, so recovery rebuilds
        // indexes with the topic's own density.
        m->add_topic("t", 1, cfg);
        auto r = m->open();
        EXPECT_TRUE(r.ok()) << r.err().message;
        if (r.ok()) summary = *r;
        return m;
    }
    // Writes `n` batches of 3 records (offsets 0..3n-1) and shuts down cleanly.
    void write_batches(int n) {
        auto m = open_manager();
        for (int i = 0; i < n; ++i) {
            sizes.push_back(make_batch(3, 1000 + i).size());
            append_durable(*m, m->get("t", 0), make_batch(3, 1000 + i), 2000);
        }
        m->close();
    }
    // What a kill -9 leaves: no marker.
    void forget_clean_shutdown() { fs::remove(dir.path / "logs" / ".clean-shutdown"); }
    fs::path part() const { return test::partition_dir(dir.path, "t", 0); }
    fs::path seg_file(offset_t base, const char* ext) const {
        return part() / segment_file_name(base, ext);
    }
    void edit(const fs::path& p, const std::function<void(bytes&)>& fn) {
        auto b = read_whole_file(p);
        ASSERT_TRUE(b.ok());
        fn(*b);
        ASSERT_TRUE(write_whole_file(p, *b).ok());
    }

    test::temp_dir dir;
    log_config cfg;
    std::vector<size_t> sizes;
    log_manager::open_summary summary;
};

TEST_F(recovery_test, torn_last_batch_is_truncated) {
    write_batches(5);
    forget_clean_shutdown();
    auto full = fs::file_size(seg_file(0, data_ext));
    fs::resize_file(seg_file(0, data_ext), full - 10);  // the last write was cut short
    auto m = open_manager();
    EXPECT_FALSE(summary.clean_shutdown);
    EXPECT_EQ(summary.partitions_scanned, 1u);
    EXPECT_EQ(summary.partitions_repaired, 1u);
    EXPECT_EQ(summary.bytes_truncated, static_cast<int64_t>(sizes.back() - 10));
    auto* p = m->get("t", 0);
    EXPECT_EQ(p->log_end_offset(), 12);
    EXPECT_EQ(p->high_watermark(), 12);  // what is left is durable
    EXPECT_EQ(fs::file_size(seg_file(0, data_ext)), full - sizes.back());
    auto r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 4u);
    EXPECT_EQ(append_durable(*m, p, make_batch(1, 0)).base_offset, 12);
}

TEST_F(recovery_test, garbage_after_valid_data_is_cut) {
    write_batches(3);
    forget_clean_shutdown();
    edit(seg_file(0, data_ext), [](bytes& b) {
        for (int i = 0; i < 100; ++i) b.push_back(static_cast<uint8_t>(i * 37 + 1));
    });
    auto m = open_manager();
    EXPECT_EQ(summary.bytes_truncated, 100);
    EXPECT_EQ(m->get("t", 0)->log_end_offset(), 9);
}

TEST_F(recovery_test, zeroed_tail_is_cut) {
    write_batches(3);
    forget_clean_shutdown();
    edit(seg_file(0, data_ext), [](bytes& b) { b.resize(b.size() + 4096, 0); });
    auto m = open_manager();
    EXPECT_EQ(summary.bytes_truncated, 4096);
    EXPECT_EQ(m->get("t", 0)->log_end_offset(), 9);
}

TEST_F(recovery_test, flipped_byte_in_last_batch_fails_its_crc) {
    write_batches(4);
    forget_clean_shutdown();
    edit(seg_file(0, data_ext), [](bytes& b) { b[b.size() - 5] ^= 0x40; });
    recording_reporter rep;
    fd_cache cache(4);
    auto sum = recover_partition(part(), 4096, cache, true, rep);
    ASSERT_TRUE(sum.ok()) << sum.err().message;
    ASSERT_EQ(rep.cuts.size(), 1u);
    EXPECT_EQ(rep.cuts[0].file, "00000000000000000000.log");
    EXPECT_EQ(rep.cuts[0].bytes, static_cast<int64_t>(sizes.back()));
    EXPECT_EQ(rep.cuts[0].log_end, 9);
    EXPECT_EQ(sum->log_end_offset, 9);
    EXPECT_NE(sum->describe().find("CRC"), std::string::npos) << sum->describe();
    auto m = open_manager();  // the marker is still absent: recovery again, nothing to do
    EXPECT_EQ(summary.partitions_repaired, 0u);
    EXPECT_EQ(m->get("t", 0)->log_end_offset(), 9);
}

TEST_F(recovery_test, unclean_restart_without_damage_changes_nothing) {
    write_batches(3);
    forget_clean_shutdown();
    auto m = open_manager();
    EXPECT_EQ(summary.partitions_scanned, 1u);
    EXPECT_EQ(summary.partitions_repaired, 0u);
    EXPECT_EQ(m->get("t", 0)->log_end_offset(), 9);
}

TEST_F(recovery_test, clean_restart_keeps_offsets_and_skips_recovery) {
    cfg.index_interval_bytes = 100;
    write_batches(6);
    auto m = open_manager();
    EXPECT_TRUE(summary.clean_shutdown);
    EXPECT_EQ(summary.partitions_scanned, 0u);
    EXPECT_FALSE(fs::exists(dir.path / "logs" / ".clean-shutdown"));  // consumed
    auto* p = m->get("t", 0);
    EXPECT_FALSE(p->loaded());  // lazily
    EXPECT_EQ(p->log_end_offset(), 18);
    EXPECT_EQ(p->high_watermark(), 18);
    // Batch i holds timestamps 1000+i .. 1002+i: the first at or after 1003 is offset 5.
    EXPECT_EQ(*p->offset_for_timestamp(1003), (offset_and_time{5, 1003}));
    EXPECT_EQ(*p->offset_for_timestamp(1007), (offset_and_time{17, 1007}));
    EXPECT_EQ(append_durable(*m, p, make_batch(1, 5000)).base_offset, 18);
    EXPECT_EQ(*p->max_timestamp_offset(), (offset_and_time{18, 5000}));
}

class index_recovery_test : public recovery_test {
  protected:
    void SetUp() override {
        cfg.segment_bytes = 700;
        cfg.index_interval_bytes = 100;
        write_batches(12);
        segs = *list_segments(part());
        ASSERT_GE(segs.size(), 3u);
        original = *read_whole_file(seg_file(0, index_ext));
        ASSERT_GT(original.size(), file_header_size + offset_index::entry_size);
    }
    void expect_rebuilt_and_readable() {
        EXPECT_EQ(*read_whole_file(seg_file(0, index_ext)), original);
        auto* p = log->get("t", 0);
        EXPECT_EQ(p->log_end_offset(), 36);
        for (offset_t o = 0; o < 36; o += 1) {
            auto r = p->read(o, 1, true);
            ASSERT_TRUE(r.ok()) << r.err().message;
            EXPECT_EQ(batches_of(r->data).front().base_offset, o / 3 * 3);
        }
    }
    std::vector<segment_file_info> segs;
    bytes original;
    std::unique_ptr<log_manager> log;
};

TEST_F(index_recovery_test, truncated_index_of_sealed_segment_is_rebuilt) {
    forget_clean_shutdown();
    edit(seg_file(0, index_ext), [](bytes& b) { b.resize(file_header_size + 5); });
    log = open_manager();
    EXPECT_EQ(summary.indexes_rebuilt, 1);
    EXPECT_EQ(summary.bytes_truncated, 0);
    expect_rebuilt_and_readable();
}

TEST_F(index_recovery_test, disagreeing_index_is_rebuilt) {
    forget_clean_shutdown();
    // The last entry now names a position inside a batch: in range, ordered, but wrong.
    edit(seg_file(0, index_ext), [](bytes& b) { b[b.size() - 1] += 1; });
    log = open_manager();
    EXPECT_EQ(summary.indexes_rebuilt, 1);
    expect_rebuilt_and_readable();
}

TEST_F(index_recovery_test, bad_index_found_lazily_after_clean_shutdown) {
    fs::remove(seg_file(0, time_index_ext));
    log = open_manager();
    EXPECT_TRUE(summary.clean_shutdown);
    expect_rebuilt_and_readable();
    EXPECT_TRUE(fs::exists(seg_file(0, time_index_ext)));
}

TEST_F(recovery_test, torn_header_of_new_empty_segment_is_rewritten) {
    cfg.segment_ms = 10;
    write_batches(2);  // same `now`: one segment
    forget_clean_shutdown();
    // A crash right after the roll created segment 6, before its header reached disk.
    ASSERT_TRUE(write_whole_file(seg_file(6, data_ext), bytes(7, 0)).ok());
    auto m = open_manager();
    EXPECT_EQ(summary.partitions_repaired, 1u);
    auto* p = m->get("t", 0);
    EXPECT_EQ(p->log_end_offset(), 6);
    EXPECT_EQ(fs::file_size(seg_file(6, data_ext)), file_header_size);
    EXPECT_EQ(append_durable(*m, p, make_batch(1, 0), 2000).base_offset, 6);
    auto r = p->read(0, 1 << 20, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(batches_of(r->data).size(), 2u);
}

}  // namespace
}  // namespace sluice::log

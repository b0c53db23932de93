// store_cursor: records of a partition read through the partition-log interface
// (partition_store::read), as SQL scans read shared mode's partitions; driven here over a
// local partition_log, which implements the same interface: exact ranges within and
// across batches, compressed batches, empty ranges, and reads split into several chunks.

#include "log/store_cursor.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

#include "log_test_util.h"
#include "support/compressed_batch.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;

class store_cursor_test : public ::testing::Test {
  protected:
    void SetUp() override {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 64});
        ASSERT_TRUE(mgr->open().ok());
        mgr->add_topic("t", 1, log_config{});
        p0 = mgr->get("t", 0);
        // Offsets 0-99 in one batch, 100-149 gzip-compressed, 150-151 one more.
        test::append_durable(*mgr, p0, make_batch(100, 1000));
        test::append_durable(
            *mgr, p0,
            sluice::testing::compress_batch(make_batch(50, 2000), protocol::compression::gzip));
        test::append_durable(*mgr, p0, make_batch(2, 3000));
    }
    std::vector<std::pair<offset_t, int64_t>> range(offset_t start, offset_t end) {
        auto opened = cur.open(p0, start, end);
        EXPECT_TRUE(opened.ok());
        std::vector<std::pair<offset_t, int64_t>> out;
        for (;;) {
            auto more = cur.next();
            EXPECT_TRUE(more.ok()) << more.err().message;
            if (!more.ok() || !*more) break;
            out.emplace_back(cur.record().offset, cur.record().timestamp);
        }
        return out;
    }
    static std::vector<std::pair<offset_t, int64_t>> want(offset_t start, offset_t end,
                                                          offset_t base, int64_t ts) {
        std::vector<std::pair<offset_t, int64_t>> out;
        for (offset_t o = start; o < end; ++o) out.emplace_back(o, ts + (o - base));
        return out;
    }

    test::temp_dir dir;
    std::unique_ptr<log_manager> mgr;
    partition_log* p0 = nullptr;
    store_cursor cur;
};

TEST_F(store_cursor_test, whole_partition_across_batches) {
    auto got = range(0, 152);
    auto w = want(0, 100, 0, 1000);
    for (auto& r : want(100, 150, 100, 2000)) w.push_back(r);
    for (auto& r : want(150, 152, 150, 3000)) w.push_back(r);
    EXPECT_EQ(got, w);
    EXPECT_EQ(cur.stats().records_read, 152);
    EXPECT_EQ(cur.stats().batches_read, 3);
    EXPECT_FALSE(cur.is_open());
}

TEST_F(store_cursor_test, ranges_inside_and_across_batches) {
    EXPECT_EQ(range(10, 13), want(10, 13, 0, 1000));
    EXPECT_EQ(range(120, 125), want(120, 125, 100, 2000));  // in the compressed batch
    auto w = want(98, 100, 0, 1000);
    for (auto& r : want(100, 102, 100, 2000)) w.push_back(r);
    EXPECT_EQ(range(98, 102), w);
    EXPECT_TRUE(range(40, 40).empty());
    EXPECT_TRUE(range(152, 152).empty());
}

TEST_F(store_cursor_test, many_small_batches_read_in_several_chunks) {
    mgr->add_topic("big", 1, log_config{});
    auto* p = mgr->get("big", 0);
    // About 3 MB in 300 batches: more than one read_chunk_bytes.
    for (int i = 0; i < 300; ++i)
        test::append_durable(*mgr, p, make_batch(10, 10000 + i * 10, 1000));
    ASSERT_TRUE(cur.open(p, 5, 2995).ok());
    offset_t next = 5;
    for (;;) {
        auto more = cur.next();
        ASSERT_TRUE(more.ok()) << more.err().message;
        if (!*more) break;
        ASSERT_EQ(cur.record().offset, next);
        ++next;
    }
    EXPECT_EQ(next, 2995);
    EXPECT_GT(cur.stats().bytes_read, int64_t{store_cursor::read_chunk_bytes});
}

// next_count: what next() would return, counted; batches wholly in the range from their
// headers (their records neither decompressed nor decoded), the ones the
// range cuts record by record.
TEST_F(store_cursor_test, counts_match_the_records_next_returns) {
    const auto count = [&](offset_t start, offset_t end) {
        cur.stats() = {};
        EXPECT_TRUE(cur.open(p0, start, end).ok());
        int64_t n = 0;
        for (;;) {
            auto c = cur.next_count();
            EXPECT_TRUE(c.ok()) << c.err().message;
            if (!c.ok() || !*c) break;
            EXPECT_GT(**c, 0);
            n += **c;
        }
        EXPECT_FALSE(cur.is_open());
        return n;
    };
    for (const auto& [start, end] : std::vector<std::pair<offset_t, offset_t>>{
             {0, 152}, {5, 152}, {0, 120}, {120, 121}, {99, 151}, {150, 152}, {151, 151}}) {
        const auto n = static_cast<int64_t>(range(start, end).size());
        EXPECT_EQ(count(start, end), n) << start << ".." << end;
        EXPECT_EQ(cur.stats().records_read, n) << start << ".." << end;
    }
    // The whole partition: its three batches, each counted once.
    EXPECT_EQ(count(0, 152), 152);
    EXPECT_EQ(cur.stats().batches_read, 3);
    // A range cutting the gzip batch decodes it: 100..120 counted record by record.
    EXPECT_EQ(count(100, 120), 20);
}

}  // namespace
}  // namespace sluice::log

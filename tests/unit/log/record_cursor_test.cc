// record_cursor: ranges opened one after another on the same log (the point lookups of
// a SQL join) return exactly their records, whether the batch is still buffered, the
// reader stands before or after the new start, the batch is compressed, or the next
// range lies in another batch or another partition.

#include "log/record_cursor.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "log_test_util.h"
#include "support/compressed_batch.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;

class record_cursor_test : public ::testing::Test {
  protected:
    void SetUp() override {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 64});
        ASSERT_TRUE(mgr->open().ok());
        mgr->add_topic("t", 2, log_config{});
        p0 = mgr->get("t", 0);
        p1 = mgr->get("t", 1);
        // p0: offsets 0-99 in one batch, 100-149 gzip-compressed, 150-151 one more.
        test::append_durable(*mgr, p0, make_batch(100, 1000));
        test::append_durable(
            *mgr, p0,
            sluice::testing::compress_batch(make_batch(50, 2000), protocol::compression::gzip));
        test::append_durable(*mgr, p0, make_batch(2, 3000));
        test::append_durable(*mgr, p1, make_batch(10, 5000));
    }
    // The offsets and timestamps [start, end) of `p` gives.
    std::vector<std::pair<offset_t, int64_t>> range(const partition_log* p, offset_t start,
                                                    offset_t end) {
        cur.close();
        cur.open(p, start, end);
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
    partition_log* p1 = nullptr;
    record_cursor cur;
};

TEST_F(record_cursor_test, point_lookups_forward_read_the_batch_once) {
    for (offset_t o = 0; o < 100; o += 7) EXPECT_EQ(range(p0, o, o + 1), want(o, o + 1, 0, 1000));
    // One chunk read for all of them: the later lookups came from the buffer.
    EXPECT_EQ(cur.stats().segments_read, 1);
    const int64_t bytes_once = cur.stats().bytes_read;
    EXPECT_GT(bytes_once, 0);
    // Consecutive offsets: the record read past one range's end is the next one's first.
    for (offset_t o = 40; o < 45; ++o) EXPECT_EQ(range(p0, o, o + 1), want(o, o + 1, 0, 1000));
    EXPECT_EQ(cur.stats().bytes_read, bytes_once);
}

TEST_F(record_cursor_test, lookups_backwards_and_overlapping_ranges) {
    EXPECT_EQ(range(p0, 50, 53), want(50, 53, 0, 1000));
    EXPECT_EQ(range(p0, 10, 12), want(10, 12, 0, 1000));  // behind the reader
    EXPECT_EQ(range(p0, 11, 15), want(11, 15, 0, 1000));  // overlaps the last range
    EXPECT_EQ(range(p0, 14, 14), want(14, 14, 0, 1000));  // empty
    EXPECT_EQ(range(p0, 14, 16), want(14, 16, 0, 1000));  // the pending record is 15
    EXPECT_EQ(range(p0, 16, 17), want(16, 17, 0, 1000));
}

TEST_F(record_cursor_test, lookups_across_batches_codecs_and_partitions) {
    EXPECT_EQ(range(p0, 120, 121), want(120, 121, 100, 2000));  // compressed
    EXPECT_EQ(range(p0, 121, 123), want(121, 123, 100, 2000));  // same batch, read on
    EXPECT_EQ(range(p0, 105, 106), want(105, 106, 100, 2000));  // same batch, from its start
    EXPECT_EQ(range(p0, 99, 101),
              (std::vector<std::pair<offset_t, int64_t>>{{99, 1099}, {100, 2000}}));
    EXPECT_EQ(range(p1, 3, 4), want(3, 4, 0, 5000));  // another log
    EXPECT_EQ(range(p0, 3, 4), want(3, 4, 0, 1000));  // and back
    EXPECT_EQ(range(p0, 149, 152),
              (std::vector<std::pair<offset_t, int64_t>>{{149, 2049}, {150, 3000}, {151, 3001}}));
    EXPECT_EQ(range(p0, 0, 152).size(), 152u);
    EXPECT_EQ(range(p0, 151, 152), want(151, 152, 150, 3000));
}

// next_count: what next() would return, counted; batches wholly in the range from their
// headers, the ones the range cuts (or a lookup left half read) record by record.
TEST_F(record_cursor_test, counts_match_the_records_next_returns) {
    const auto count = [&](const partition_log* p, offset_t start, offset_t end, bool reopen) {
        if (reopen) {
            cur.close();
            cur.open(p, start, end);
        }
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
        EXPECT_EQ(count(p0, start, end, true), static_cast<int64_t>(range(p0, start, end).size()))
            << start << ".." << end;
    }
    EXPECT_EQ(count(p1, 0, 10, true), 10);
    // Whole batches are not decoded: no batch counted as read record by record, and the
    // same records counted.
    cur.close();
    cur.stats() = {};
    EXPECT_EQ(count(p0, 0, 152, true), 152);
    EXPECT_EQ(cur.stats().records_read, 152);
    EXPECT_EQ(cur.stats().batches_read, 3);
    // After a point lookup read into a batch: the same range on from the pending record.
    EXPECT_EQ(range(p0, 40, 41), want(40, 41, 0, 1000));
    EXPECT_EQ(count(p0, 41, 152, true), 111);
}

}  // namespace
}  // namespace sluice::log

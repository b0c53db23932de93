#include "log/producer_state.h"

#include <gtest/gtest.h>

#include <limits>

#include "common/crc32c.h"
#include "common/endian.h"

namespace sluice::log {
namespace {

constexpr int32_t max_seq = std::numeric_limits<int32_t>::max();

protocol::batch_header batch(int64_t pid, int16_t epoch, int32_t seq, int32_t records = 1,
                             int64_t ts = 1000) {
    protocol::batch_header h;
    h.producer_id = pid;
    h.producer_epoch = epoch;
    h.base_sequence = seq;
    h.last_offset_delta = records - 1;
    h.record_count = records;
    h.max_timestamp = ts;
    return h;
}

TEST(ProducerSequence, WrapsAtInt32Max) {
    EXPECT_EQ(last_sequence(0, 4), 4);
    EXPECT_EQ(last_sequence(max_seq, 0), max_seq);
    EXPECT_EQ(last_sequence(max_seq, 1), 0);
    EXPECT_EQ(last_sequence(max_seq - 1, 3), 1);
    EXPECT_TRUE(in_sequence(4, 5));
    EXPECT_TRUE(in_sequence(max_seq, 0));
    EXPECT_FALSE(in_sequence(max_seq, max_seq));
    EXPECT_FALSE(in_sequence(4, 6));
    EXPECT_FALSE(in_sequence(4, 4));
}

TEST(ProducerState, FirstBatchOfUnknownProducer) {
    producer_state st;
    // Kafka 4.3 takes an unknown producer's first batch at any sequence.
    EXPECT_EQ(st.check(batch(7, 0, 0)).verdict, sequence_verdict::append);
    EXPECT_EQ(st.check(batch(7, 0, 5)).verdict, sequence_verdict::append);
}

TEST(ProducerState, NextBatchAppendsAndGapIsOutOfOrder) {
    producer_state st;
    st.apply(batch(7, 0, 0, 3), 10, 0);  // sequences 0..2 at offsets 10..12
    EXPECT_EQ(st.check(batch(7, 0, 3)).verdict, sequence_verdict::append);
    EXPECT_EQ(st.check(batch(7, 0, 4)).verdict, sequence_verdict::out_of_order);
    EXPECT_EQ(st.check(batch(7, 0, 1)).verdict, sequence_verdict::out_of_order);  // overlaps
    const auto& e = st.entries().at(7);
    EXPECT_EQ(e.epoch, 0);
    ASSERT_EQ(e.batches.size(), 1u);
    EXPECT_EQ(e.batches[0].last_seq, 2);
    EXPECT_EQ(e.batches[0].last_offset, 12);
}

TEST(ProducerState, RetryOfOneOfTheLastFiveIsADuplicateWithItsOffsets) {
    producer_state st;
    for (int i = 0; i < 6; ++i) st.apply(batch(7, 0, i * 2, 2), 100 + i * 2, 0);
    ASSERT_EQ(st.entries().at(7).batches.size(), producer_batches_kept);
    auto c = st.check(batch(7, 0, 4, 2));
    ASSERT_EQ(c.verdict, sequence_verdict::duplicate);
    EXPECT_EQ(c.original.first_offset, 104);
    EXPECT_EQ(c.original.last_offset, 105);
    // The oldest (sequence 0) fell out of the five: a retry of it is out of order.
    EXPECT_EQ(st.check(batch(7, 0, 0, 2)).verdict, sequence_verdict::out_of_order);
    // Same first sequence, other length: not the same batch.
    EXPECT_EQ(st.check(batch(7, 0, 4, 1)).verdict, sequence_verdict::out_of_order);
}

TEST(ProducerState, Epochs) {
    producer_state st;
    st.apply(batch(7, 3, 0, 2), 0, 0);
    EXPECT_EQ(st.check(batch(7, 2, 2)).verdict, sequence_verdict::invalid_epoch);
    EXPECT_EQ(st.check(batch(7, 4, 2)).verdict, sequence_verdict::out_of_order);
    EXPECT_EQ(st.check(batch(7, 4, 0)).verdict, sequence_verdict::append);
    st.apply(batch(7, 4, 0), 2, 0);
    const auto& e = st.entries().at(7);
    EXPECT_EQ(e.epoch, 4);
    ASSERT_EQ(e.batches.size(), 1u);  // the old epoch's batches are gone
    // A retry from the old epoch now is stale.
    EXPECT_EQ(st.check(batch(7, 3, 0, 2)).verdict, sequence_verdict::invalid_epoch);
}

TEST(ProducerState, SequenceWrapsInTheCheck) {
    producer_state st;
    st.apply(batch(7, 0, max_seq - 1, 2), 50, 0);  // max-1, max
    EXPECT_EQ(st.check(batch(7, 0, 0)).verdict, sequence_verdict::append);
    EXPECT_EQ(st.check(batch(7, 0, max_seq)).verdict, sequence_verdict::out_of_order);
    st = {};
    st.apply(batch(7, 0, max_seq, 3), 50, 0);  // max, 0, 1
    EXPECT_EQ(st.entries().at(7).batches[0].last_seq, 1);
    EXPECT_EQ(st.check(batch(7, 0, 2)).verdict, sequence_verdict::append);
    EXPECT_EQ(st.check(batch(7, 0, max_seq, 3)).verdict, sequence_verdict::duplicate);
}

TEST(ProducerState, EvictExpireTruncate) {
    producer_state st;
    st.apply(batch(1, 0, 0, 1, 1000), 0, 1000);
    st.apply(batch(2, 0, 0, 1, 5000), 1, 5000);
    st.apply(batch(3, 0, 0, 1, 1), 2, 9000);  // an old producer timestamp
    st.expire_one(3, 10000, 5000);            // came 1000 ago: kept
    EXPECT_EQ(st.entries().count(3), 1u);
    st.evict_below(1);
    EXPECT_EQ(st.entries().count(1), 0u);
    EXPECT_EQ(st.check(batch(1, 0, 1)).verdict, sequence_verdict::append);  // forgotten: starts anew
    st.expire(10000, 5000);  // 2 came 5000 ago: gone; 3 came 1000 ago, whatever its timestamp
    EXPECT_EQ(st.entries().count(2), 0u);
    EXPECT_EQ(st.entries().count(3), 1u);
    st.apply(batch(3, 0, 1, 1, 9000), 3, 9000);
    st.truncate(3);
    ASSERT_EQ(st.entries().at(3).batches.size(), 1u);
    EXPECT_EQ(st.check(batch(3, 0, 1)).verdict, sequence_verdict::append);
    st.truncate(0);
    EXPECT_TRUE(st.empty());
}

TEST(ProducerSnapshot, RoundTripsAndRejectsDamage) {
    producer_state st;
    st.apply(batch(9, 2, 0, 4, 1234), 40, 0);
    st.apply(batch(9, 2, 4, 1, 1300), 44, 4242);
    st.apply(batch(11, 0, max_seq, 2, 77), 45, 0);
    bytes b = st.encode(47, 123);
    auto d = producer_state::decode(b);
    ASSERT_TRUE(d) << d.err().message;
    EXPECT_EQ(d->second, 47);
    const auto& e = d->first.entries().at(9);
    EXPECT_EQ(e.epoch, 2);
    EXPECT_EQ(e.last_timestamp, 1300);
    EXPECT_EQ(e.last_seen, 4242);
    ASSERT_EQ(e.batches.size(), 2u);
    EXPECT_EQ(e.batches[1].first_offset, 44);
    EXPECT_EQ(d->first.entries().at(11).batches[0].last_seq, 0);
    EXPECT_EQ(d->first.check(batch(9, 2, 5)).verdict, sequence_verdict::append);

    bytes flipped = b;
    flipped[45] ^= 1;  // in the first entry
    EXPECT_EQ(producer_state::decode(flipped).code(), errc::corrupt);
    bytes magic = b;
    magic[0] = 'X';
    EXPECT_EQ(producer_state::decode(magic).code(), errc::corrupt);
    bytes cut(b.begin(), b.end() - 5);
    EXPECT_EQ(producer_state::decode(cut).code(), errc::corrupt);
    bytes head = b;
    head[8] ^= 1;  // the offset, in the file header
    EXPECT_EQ(producer_state::decode(head).code(), errc::corrupt);
    bytes version = b;
    version[5] = 9;  // with the header's CRC (bytes 28..31, of bytes 0..27) made right
    store_be<uint32_t>(version.data() + 28, crc32c(version.data(), 28));
    EXPECT_EQ(producer_state::decode(version).code(), errc::unsupported);
    EXPECT_TRUE(producer_state::decode(producer_state{}.encode(0, 0)));
}

}  // namespace
}  // namespace sluice::log

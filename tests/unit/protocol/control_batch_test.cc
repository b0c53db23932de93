#include "protocol/control_batch.h"

#include <gtest/gtest.h>

#include "protocol/record_batch.h"
#include "support/batch_builder.h"

namespace sluice::protocol {
namespace {

TEST(ControlBatch, EncodesAKafkaMarkerAndDecodesIt) {
    bytes b = encode_control_batch(42, 3, control_type::commit, 7, 123456, 99);
    auto h = read_batch_header(b);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->size_bytes(), b.size());
    EXPECT_EQ(h->magic, 2);
    EXPECT_TRUE(h->is_control());
    EXPECT_TRUE(h->is_transactional());
    EXPECT_EQ(h->codec(), compression::none);
    EXPECT_EQ(h->base_offset, 99);
    EXPECT_EQ(h->producer_id, 42);
    EXPECT_EQ(h->producer_epoch, 3);
    EXPECT_EQ(h->base_sequence, -1);
    EXPECT_EQ(h->record_count, 1);
    EXPECT_EQ(h->last_offset_delta, 0);
    EXPECT_EQ(h->base_timestamp, 123456);
    EXPECT_EQ(h->max_timestamp, 123456);
    EXPECT_TRUE(batch_crc_ok(b));
    // Kafka's record layout: key = version 0, type; value = version 0, coordinator epoch.
    int records = 0;
    ASSERT_TRUE(for_each_record(b, [&](const record_view& r) {
        ++records;
        EXPECT_EQ(r.offset, 99);
        EXPECT_EQ(r.timestamp, 123456);
        const bytes key{0, 0, 0, 1};
        const bytes value{0, 0, 0, 0, 0, 7};
        EXPECT_EQ(bytes(r.key->begin(), r.key->end()), key);
        EXPECT_EQ(bytes(r.value->begin(), r.value->end()), value);
        EXPECT_TRUE(r.headers.empty());
        return true;
    }));
    EXPECT_EQ(records, 1);
    auto c = decode_control_batch(b);
    ASSERT_TRUE(c) << c.err().message;
    EXPECT_TRUE(c->is_marker());
    EXPECT_TRUE(c->is_commit());
    EXPECT_EQ(c->coordinator_epoch, 7);

    auto a = decode_control_batch(encode_control_batch(1, 0, control_type::abort, 0, 5));
    ASSERT_TRUE(a);
    EXPECT_EQ(a->type, 0);
    EXPECT_FALSE(a->is_commit());
}

TEST(ControlBatch, ProducersMayNotWriteThem) {
    bytes b = encode_control_batch(42, 3, control_type::abort, 7, 1000);
    auto v = validate_batches(b, {});
    EXPECT_EQ(v.code(), errc::invalid_record);
}

TEST(ControlBatch, DecodeRefusesOtherBatches) {
    EXPECT_EQ(decode_control_batch(sluice::testing::make_batch(1, 0)).code(),
              errc::invalid_argument);
    bytes b = encode_control_batch(42, 3, control_type::abort, 7, 1000);
    b.resize(b.size() - 3);  // the record cut
    EXPECT_FALSE(decode_control_batch(b));
}

}  // namespace
}  // namespace sluice::protocol

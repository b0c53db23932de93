#include "protocol/legacy_records.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>

#include "common/endian.h"
#include "protocol/compression.h"
#include "protocol/record_batch.h"

namespace sluice::protocol {
namespace {

void put_i32(bytes& out, int32_t v) {
    uint8_t b[4];
    store_be(b, v);
    out.insert(out.end(), b, b + 4);
}

// One v0/v1 message as an old producer writes it.
bytes message(int8_t magic, const std::string& key, const std::string& value, int64_t ts = -1,
              int8_t attributes = 0) {
    bytes body{static_cast<uint8_t>(magic), static_cast<uint8_t>(attributes)};
    if (magic == 1) {
        uint8_t b[8];
        store_be(b, ts);
        body.insert(body.end(), b, b + 8);
    }
    for (const auto* f : {&key, &value}) {
        put_i32(body, static_cast<int32_t>(f->size()));
        body.insert(body.end(), f->begin(), f->end());
    }
    bytes out(8, 0);
    put_i32(out, static_cast<int32_t>(4 + body.size()));
    uint32_t crc = static_cast<uint32_t>(::crc32(0L, body.data(), static_cast<uInt>(body.size())));
    put_i32(out, static_cast<int32_t>(crc));
    out.insert(out.end(), body.begin(), body.end());
    return out;
}

std::string legacy_str(const std::optional<bytes_view>& v) {
    return v ? std::string(v->begin(), v->end()) : "<null>";
}

TEST(legacy_records, uncompressed_v1_set_becomes_one_v2_batch_and_back) {
    bytes set = message(1, "a", "one", 1000);
    auto second = message(1, "b", "two", 1005);
    set.insert(set.end(), second.begin(), second.end());
    ASSERT_EQ(first_magic(set), 1);
    auto v2 = upconvert_message_set(set, min_decompressed_limit);
    ASSERT_TRUE(v2) << v2.err().message;
    auto batches = validate_batches(*v2, batch_limits{});
    ASSERT_TRUE(batches) << batches.err().message;
    ASSERT_EQ(batches->size(), 1u);
    EXPECT_EQ((*batches)[0].header.record_count, 2);
    EXPECT_EQ((*batches)[0].max_record_timestamp, 1005);
    std::vector<std::string> seen;
    for_each_record(*v2, [&](const record_view& r) {
        seen.push_back(std::to_string(r.offset) + ":" + legacy_str(r.key) + "=" +
                       legacy_str(r.value) + "@" + std::to_string(r.timestamp));
        return true;
    });
    EXPECT_EQ(seen, (std::vector<std::string>{"0:a=one@1000", "1:b=two@1005"}));
    // Down to magic 0 from offset 1: the second message alone, without a timestamp.
    EXPECT_EQ(downconvert_batches(*v2, 0, 1), [] {
        auto m = message(0, "b", "two");
        store_be<int64_t>(m.data(), 1);
        return m;
    }());
    // Down to magic 1: byte for byte what the producer sent (offsets 0 and 1).
    bytes want = message(1, "a", "one", 1000);
    auto m2 = message(1, "b", "two", 1005);
    store_be<int64_t>(m2.data(), 1);
    want.insert(want.end(), m2.begin(), m2.end());
    EXPECT_EQ(downconvert_batches(*v2, 1, 0), want);
}

TEST(legacy_records, compressed_wrapper_keeps_its_codec) {
    bytes inner = message(0, "k1", "v1");
    auto m2 = message(0, "k2", "v2");
    inner.insert(inner.end(), m2.begin(), m2.end());
    auto z = compress(compression::gzip, inner);
    ASSERT_TRUE(z);
    bytes wrapper = message(0, "", std::string(z->begin(), z->end()), -1, 1);
    auto v2 = upconvert_message_set(wrapper, min_decompressed_limit);
    ASSERT_TRUE(v2) << v2.err().message;
    auto h = read_batch_header(*v2);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->codec(), compression::gzip);
    EXPECT_EQ(h->record_count, 2);
    EXPECT_EQ(h->base_timestamp, no_record_timestamp);
    EXPECT_TRUE(validate_batches(*v2, batch_limits{}));
}

TEST(legacy_records, bad_crc_truncation_and_zstd_are_refused) {
    auto m = message(1, "k", "v", 5);
    auto bad = m;
    bad[12] ^= 1;
    EXPECT_EQ(upconvert_message_set(bad, min_decompressed_limit).code(), errc::corrupt);
    EXPECT_EQ(
        upconvert_message_set(bytes_view(m).first(m.size() - 1), min_decompressed_limit).code(),
        errc::corrupt);
    auto zstd = message(1, "", "x", 5, 4);
    EXPECT_EQ(upconvert_message_set(zstd, min_decompressed_limit).code(), errc::unsupported);
    auto garbage = message(1, "", "not gzip", 5, 1);
    EXPECT_EQ(upconvert_message_set(garbage, min_decompressed_limit).code(), errc::invalid_record);
}

TEST(legacy_records, partial_batch_at_the_end_is_not_converted) {
    auto v2 = upconvert_message_set(message(1, "a", "one", 1), min_decompressed_limit);
    ASSERT_TRUE(v2);
    bytes two = *v2;
    two.insert(two.end(), v2->begin(), v2->end() - 3);
    EXPECT_EQ(downconvert_batches(two, 1, 0), downconvert_batches(*v2, 1, 0));
}

}  // namespace
}  // namespace sluice::protocol

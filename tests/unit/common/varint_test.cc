#include "common/varint.h"

#include <gtest/gtest.h>

#include <limits>

namespace sluice {
namespace {

TEST(varint, round_trip_signed) {
    for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{63}, int64_t{-64}, int64_t{300},
                      std::numeric_limits<int64_t>::max(), std::numeric_limits<int64_t>::min()}) {
        uint8_t buf[10];
        size_t n = encode_uvarint(buf, zigzag(v));
        int64_t back = 0;
        ASSERT_EQ(decode_varint64(buf, n, back), n);
        EXPECT_EQ(back, v);
    }
}

TEST(varint, truncated_and_overlong_are_rejected) {
    uint8_t buf[10];
    size_t n = encode_uvarint(buf, 1u << 20);
    uint64_t out = 0;
    EXPECT_EQ(decode_uvarint(buf, n - 1, out), 0u);
    uint8_t overlong[6] = {0x80, 0x80, 0x80, 0x80, 0x80, 0x01};
    int32_t v32 = 0;
    EXPECT_EQ(decode_varint32(overlong, 6, v32), 0u);
}

}  // namespace
}  // namespace sluice

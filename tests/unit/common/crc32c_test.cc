#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace sluice {
namespace {

TEST(crc32c, known_vectors) {
    // RFC 3720 (iSCSI) check value for "123456789".
    EXPECT_EQ(crc32c("123456789", 9), 0xe3069283u);
    std::vector<uint8_t> zeros(32, 0);
    EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8a9136aau);
    std::vector<uint8_t> ones(32, 0xff);
    EXPECT_EQ(crc32c(ones.data(), ones.size()), 0x62a8ab43u);
}

TEST(crc32c, incremental_equals_whole) {
    std::string s(1000, 'x');
    for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>(i * 7);
    uint32_t whole = crc32c(s.data(), s.size());
    for (size_t cut : {0, 1, 7, 8, 9, 500, 999, 1000}) {
        uint32_t part = crc32c(s.data(), cut);
        EXPECT_EQ(crc32c(s.data() + cut, s.size() - cut, part), whole) << cut;
    }
}

}  // namespace
}  // namespace sluice

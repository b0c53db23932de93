#include "common/crc32c.h"

#include <gtest/gtest.h>

#include <random>
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

// The instruction path splits long inputs into three lanes of 4096 or 256 bytes and
// joins them; every length around those boundaries, at odd alignments and with a
// running CRC, must give what the byte table gives.
TEST(crc32c, lanes_agree_with_the_table) {
    std::vector<uint8_t> buf(3 * 4096 * 3 + 64);
    std::mt19937 rng(7);
    for (auto& b : buf) b = static_cast<uint8_t>(rng());
    std::vector<size_t> lengths;
    for (size_t base : {size_t{0}, size_t{768}, size_t{3 * 4096}, size_t{2 * 3 * 4096}})
        for (size_t d = 0; d < 40; ++d) {
            lengths.push_back(base + d);
            if (base >= d) lengths.push_back(base - d);
        }
    for (size_t i = 0; i < 200; ++i) lengths.push_back(rng() % (buf.size() - 8));
    for (size_t len : lengths) {
        for (size_t align : {size_t{0}, size_t{1}, size_t{5}}) {
            const uint32_t seed = static_cast<uint32_t>(rng());
            EXPECT_EQ(crc32c(buf.data() + align, len, seed),
                      crc32c_portable(buf.data() + align, len, seed))
                << "length " << len << " alignment " << align;
        }
    }
    EXPECT_EQ(crc32c_portable("123456789", 9), 0xe3069283u);
}

}  // namespace
}  // namespace sluice

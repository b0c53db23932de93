#include "catalog/uuid.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string_view>

namespace sluice::catalog {
namespace {

constexpr std::string_view base64url =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

TEST(uuid, string_form_is_22_base64url_chars) {
    for (int i = 0; i < 1000; ++i) {
        std::string s = uuid_to_string(random_uuid());
        ASSERT_EQ(s.size(), 22u);
        for (char c : s) ASSERT_NE(base64url.find(c), std::string_view::npos) << s;
        ASSERT_NE(s.front(), '-') << "Kafka never issues ids that read as a CLI option";
    }
}

TEST(uuid, known_values) {
    EXPECT_EQ(uuid_to_string(uuid{}), "AAAAAAAAAAAAAAAAAAAAAA");
    uuid ones;
    ones.fill(0xff);
    EXPECT_EQ(uuid_to_string(ones), "_____________________w");
    // 0x01..0x10 in big-endian order, checked against an independent base64 encoder.
    uuid seq;
    for (size_t i = 0; i < seq.size(); ++i) seq[i] = static_cast<uint8_t>(i + 1);
    EXPECT_EQ(uuid_to_string(seq), "AQIDBAUGBwgJCgsMDQ4PEA");
}

TEST(uuid, random_is_version_4_and_unique) {
    std::set<uuid> seen;
    for (int i = 0; i < 1000; ++i) {
        uuid u = random_uuid();
        EXPECT_FALSE(std::all_of(u.begin(), u.end(), [](uint8_t b) { return b == 0; }));
        EXPECT_EQ(u[6] >> 4, 4);
        EXPECT_EQ(u[8] >> 6, 2);
        EXPECT_TRUE(seen.insert(u).second);
    }
}

TEST(uuid, parse_round_trips_and_rejects_malformed) {
    for (int i = 0; i < 100; ++i) {
        uuid u = random_uuid();
        auto back = uuid_from_string(uuid_to_string(u));
        ASSERT_TRUE(back.has_value());
        EXPECT_EQ(*back, u);
    }
    EXPECT_FALSE(uuid_from_string(""));
    EXPECT_FALSE(uuid_from_string("AQIDBAUGBwgJCgsMDQ4PE"));    // 21 chars
    EXPECT_FALSE(uuid_from_string("AQIDBAUGBwgJCgsMDQ4PEAA"));  // 23 chars
    EXPECT_FALSE(uuid_from_string("AQIDBAUGBwgJCgsMDQ4PE="));   // padding
    EXPECT_FALSE(uuid_from_string("AQIDBAUGBwgJCgsMDQ4P+A"));   // standard alphabet
    EXPECT_FALSE(uuid_from_string("AQIDBAUGBwgJCgsMDQ4PEB"));   // non-zero spare bits
}

}  // namespace
}  // namespace sluice::catalog

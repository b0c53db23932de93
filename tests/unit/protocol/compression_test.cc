// The record batch codecs: each round-trips at its levels, refuses corrupt and
// truncated input, stops at the decompression bound, and reads the framings that
// real clients write (xerial snappy, concatenated gzip members and zstd frames).

#include "protocol/compression.h"

#include <gtest/gtest.h>
#include <snappy-c.h>

#include <string>

#include "common/endian.h"
#include "support/compressed_batch.h"

namespace sluice::protocol {
namespace {

using sluice::testing::all_codecs;

bytes json_lines(size_t n) {
    std::string s;
    for (size_t i = 0; s.size() < n; ++i)
        s += R"({"id":)" + std::to_string(i) + R"(,"op":"insert","user":"u)" +
             std::to_string(i % 97) + R"(","amount":)" + std::to_string(i * 7 % 1000) + "}\n";
    s.resize(n);
    return bytes(s.begin(), s.end());
}

std::string name(compression c) { return std::string(compression_name(c)); }

TEST(compression, every_codec_round_trips_at_its_levels) {
    const bytes in = json_lines(300 * 1024);
    for (auto c : all_codecs) {
        std::vector<std::optional<int>> levels = {std::nullopt};
        if (auto r = compression_levels(c)) levels = {std::nullopt, r->min, r->max};
        if (c == compression::zstd) levels = {std::nullopt, -5, 1, 19};  // max is slow
        for (auto level : levels) {
            auto z = compress(c, in, level);
            ASSERT_TRUE(z.ok()) << name(c) << ": " << z.err().message;
            EXPECT_LT(z->size(), in.size() / 2) << name(c);  // JSON compresses well
            auto back = decompress(c, *z, in.size());
            ASSERT_TRUE(back.ok()) << name(c) << ": " << back.err().message;
            EXPECT_EQ(*back, in) << name(c) << " level " << level.value_or(-99);
        }
    }
}

TEST(compression, empty_input_round_trips) {
    for (auto c : all_codecs) {
        auto z = compress(c, bytes_view());
        ASSERT_TRUE(z.ok()) << name(c);
        auto back = decompress(c, *z, 10);
        ASSERT_TRUE(back.ok()) << name(c) << ": " << back.err().message;
        EXPECT_TRUE(back->empty()) << name(c);
    }
}

TEST(compression, garbage_and_truncated_input_is_corrupt) {
    const bytes in = json_lines(100 * 1024);
    bytes garbage(4096);
    for (size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<uint8_t>(i * 131 + 7);
    for (auto c : all_codecs) {
        auto g = decompress(c, garbage, 1 << 20);
        ASSERT_FALSE(g.ok()) << name(c);
        EXPECT_EQ(g.code(), errc::corrupt) << name(c);
        EXPECT_NE(g.err().message.find(name(c)), std::string::npos) << g.err().message;
        EXPECT_EQ(decompress(c, bytes_view(), 1 << 20).code(), errc::corrupt) << name(c);
        auto z = *compress(c, in);
        auto cut = decompress(c, bytes_view(z).first(z.size() / 2), 1 << 20);
        ASSERT_FALSE(cut.ok()) << name(c);
        EXPECT_EQ(cut.code(), errc::corrupt) << name(c);
    }
}

TEST(compression, output_beyond_the_bound_is_too_large) {
    const bytes zeros(8 << 20, 0);  // 8 MiB that compress to a few KiB: a small bomb
    for (auto c : all_codecs) {
        auto z = *compress(c, zeros);
        EXPECT_LT(z.size(), zeros.size() / 20) << name(c);
        auto r = decompress(c, z, 1 << 20);
        ASSERT_FALSE(r.ok()) << name(c);
        EXPECT_EQ(r.code(), errc::too_large) << name(c);
        // Exactly the bound is allowed.
        auto exact = decompress(c, z, zeros.size());
        ASSERT_TRUE(exact.ok()) << name(c) << ": " << exact.err().message;
        EXPECT_EQ(exact->size(), zeros.size());
        EXPECT_EQ(decompress(c, z, zeros.size() - 1).code(), errc::too_large) << name(c);
    }
}

TEST(compression, the_bound_is_max_message_bytes_or_64_mib) {
    EXPECT_EQ(decompressed_limit(1 << 20), size_t{64} << 20);
    EXPECT_EQ(decompressed_limit(size_t{100} << 20), size_t{100} << 20);
}

bytes raw_snappy(bytes_view in) {
    size_t len = snappy_max_compressed_length(in.size());
    bytes out(len);
    EXPECT_EQ(snappy_compress(reinterpret_cast<const char*>(in.data()), in.size(),
                              reinterpret_cast<char*>(out.data()), &len),
              SNAPPY_OK);
    out.resize(len);
    return out;
}

TEST(compression, snappy_reads_raw_and_xerial_framing) {
    const bytes in = json_lines(100 * 1024);
    // Raw, as librdkafka and kafkajs write it.
    EXPECT_EQ(*decompress(compression::snappy, raw_snappy(in), in.size()), in);
    // Xerial, as the Java client writes it: our compressor's output, blocks of 32 KiB.
    auto x = *compress(compression::snappy, in);
    ASSERT_GE(x.size(), 16u);
    EXPECT_EQ(x[0], 0x82);
    EXPECT_EQ(std::string(x.begin() + 1, x.begin() + 7), "SNAPPY");
    EXPECT_EQ(load_be<int32_t>(x.data() + 8), 1);  // version
    // The first block holds 32 KiB of input.
    const auto first = static_cast<size_t>(load_be<int32_t>(x.data() + 16));
    EXPECT_EQ(*decompress(compression::snappy, bytes_view(x).subspan(20, first), 1 << 20),
              bytes(in.begin(), in.begin() + 32 * 1024));
    EXPECT_EQ(*decompress(compression::snappy, x, in.size()), in);
    // A hand-made xerial stream of two blocks, as another writer may cut them.
    bytes hand(x.begin(), x.begin() + 16);
    for (auto part : {bytes_view(in).first(1000), bytes_view(in).subspan(1000)}) {
        bytes blk = raw_snappy(part);
        uint8_t len[4];
        store_be<int32_t>(len, static_cast<int32_t>(blk.size()));
        hand.insert(hand.end(), len, len + 4);
        hand.insert(hand.end(), blk.begin(), blk.end());
    }
    EXPECT_EQ(*decompress(compression::snappy, hand, in.size()), in);
    // A block length beyond the data.
    bytes bad = hand;
    store_be<int32_t>(bad.data() + 16, 1 << 30);
    EXPECT_EQ(decompress(compression::snappy, bad, in.size()).code(), errc::corrupt);
    // Xerial blocks count toward the bound together.
    EXPECT_EQ(decompress(compression::snappy, hand, in.size() - 1).code(), errc::too_large);
}

TEST(compression, concatenated_gzip_members_and_zstd_frames_are_one_stream) {
    const bytes a = json_lines(5000);
    const bytes b = json_lines(7000);
    bytes both = a;
    both.insert(both.end(), b.begin(), b.end());
    for (auto c : {compression::gzip, compression::zstd}) {
        bytes z = *compress(c, a);
        bytes zb = *compress(c, b);
        z.insert(z.end(), zb.begin(), zb.end());
        auto r = decompress(c, z, 1 << 20);
        ASSERT_TRUE(r.ok()) << name(c) << ": " << r.err().message;
        EXPECT_EQ(*r, both) << name(c);
    }
}

TEST(compression, names_and_levels_follow_kafka) {
    EXPECT_EQ(compression_from_name("uncompressed"), compression::none);
    EXPECT_EQ(compression_from_name("zstd"), compression::zstd);
    EXPECT_EQ(compression_from_name("producer"), std::nullopt);
    EXPECT_EQ(compression_from_name("brotli"), std::nullopt);
    EXPECT_EQ(compression_levels(compression::lz4)->max, 17);
    EXPECT_EQ(compression_levels(compression::zstd)->max, 22);
    EXPECT_EQ(compression_levels(compression::zstd)->min, -131072);
    EXPECT_EQ(compression_levels(compression::snappy), std::nullopt);
    EXPECT_FALSE(is_known_compression(5));
}

}  // namespace
}  // namespace sluice::protocol

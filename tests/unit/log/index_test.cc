#include <gtest/gtest.h>

#include "log/file_header.h"
#include "log/offset_index.h"
#include "log/time_index.h"

namespace sluice::log {
namespace {

TEST(file_header, round_trip_and_rejects_damage) {
    uint8_t buf[file_header_size];
    encode_file_header(buf, {file_kind::offset_index, current_format_version, 42, 1234});
    auto h = decode_file_header(bytes_view(buf, sizeof buf), file_kind::offset_index);
    ASSERT_TRUE(h.ok());
    EXPECT_EQ(h->base_offset, 42);
    EXPECT_EQ(h->created_ms, 1234);
    EXPECT_EQ(decode_file_header(bytes_view(buf, sizeof buf), file_kind::data).code(),
              errc::corrupt);
    EXPECT_EQ(decode_file_header(bytes_view(buf, 10), file_kind::offset_index).code(),
              errc::corrupt);
    buf[12] ^= 1;
    EXPECT_EQ(decode_file_header(bytes_view(buf, sizeof buf), file_kind::offset_index).code(),
              errc::corrupt);
}

offset_index sample_offsets() {
    offset_index idx(100);
    idx.append(110, 5000);
    idx.append(120, 9000);
    idx.append(130, 13000);
    return idx;
}

TEST(offset_index, lookup_exact_between_before_and_after) {
    auto idx = sample_offsets();
    EXPECT_EQ(idx.lookup(120), (offset_index::entry{120, 9000}));  // exact
    EXPECT_EQ(idx.lookup(125), (offset_index::entry{120, 9000}));  // between entries
    EXPECT_EQ(idx.lookup(105),
              (offset_index::entry{100, static_cast<int64_t>(file_header_size)}));  // before
    EXPECT_EQ(idx.lookup(100), (offset_index::entry{100, static_cast<int64_t>(file_header_size)}));
    EXPECT_EQ(idx.lookup(999), (offset_index::entry{130, 13000}));  // after last
    offset_index empty(7);
    EXPECT_EQ(empty.lookup(9), (offset_index::entry{7, static_cast<int64_t>(file_header_size)}));
}

TEST(offset_index, encode_decode_round_trip) {
    auto idx = sample_offsets();
    auto file = idx.encode(1);
    EXPECT_EQ(file.size(), file_header_size + 3 * offset_index::entry_size);
    auto back = offset_index::decode(file, 100, 20000);
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_TRUE(*back == idx);
}

TEST(offset_index, decode_rejects_torn_disordered_and_out_of_range) {
    auto file = sample_offsets().encode(1);
    auto torn = file;
    torn.resize(torn.size() - 3);
    EXPECT_EQ(offset_index::decode(torn, 100, 20000).code(), errc::corrupt);
    EXPECT_EQ(offset_index::decode(file, 100, 10000).code(), errc::corrupt);  // 13000 >= size
    EXPECT_EQ(offset_index::decode(file, 99, 20000).code(), errc::corrupt);   // wrong base
    auto zeroed = file;
    std::fill(zeroed.end() - 8, zeroed.end(), 0);  // a lost page reads back as zeros
    EXPECT_EQ(offset_index::decode(zeroed, 100, 20000).code(), errc::corrupt);
}

TEST(time_index, start_for_skips_only_older_records) {
    time_index idx(100);
    idx.append(1000, 110);  // records below 110 are <= 1000
    idx.append(2000, 120);
    idx.append(2000, 130);
    idx.append(3000, 140);
    EXPECT_EQ(idx.start_for(500, 1000), 100);   // nothing known older: from the start
    EXPECT_EQ(idx.start_for(1000, 1000), 100);  // t must be < ts to skip
    EXPECT_EQ(idx.start_for(1500, 1000), 110);
    EXPECT_EQ(idx.start_for(2500, 1000), 130);
    EXPECT_EQ(idx.start_for(9999, 1000), 140);
    EXPECT_EQ(idx.start_for(9999, 125), 120);  // entries above the limit are not used
    EXPECT_EQ(idx.last_at_or_below(125), 1);
    EXPECT_EQ(idx.last_at_or_below(99), -1);
}

TEST(time_index, same_offset_raises_timestamp_and_round_trips) {
    time_index idx(0);
    idx.append(10, 5);
    idx.append(12, 5);
    ASSERT_EQ(idx.size(), 1u);
    EXPECT_EQ(idx.last(), (time_index::entry{12, 5}));
    idx.append(20, 9);
    auto back = time_index::decode(idx.encode(0), 0, 9);
    ASSERT_TRUE(back.ok()) << back.err().message;
    EXPECT_TRUE(*back == idx);
    EXPECT_EQ(time_index::decode(idx.encode(0), 0, 8).code(), errc::corrupt);  // past the end
}

}  // namespace
}  // namespace sluice::log

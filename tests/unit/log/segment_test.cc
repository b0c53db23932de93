#include "log/segment.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include "log/file_header.h"
#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;

// Writes `n` batches of 5 records each at offsets base, base+5, ...; returns their positions.
std::vector<int64_t> fill(segment& seg, int n, int32_t interval) {
    std::vector<int64_t> positions;
    offset_t next = seg.base_offset();
    for (int i = 0; i < n; ++i) {
        auto b = make_batch(5, 1000 + i * 10, 40);
        protocol::set_base_offset(b.data(), next);
        positions.push_back(seg.size());
        EXPECT_TRUE(seg.append(b, next + 4).ok());
        seg.note_batch(next, positions.back(), 1000 + i * 10 + 4, interval);
        next += 5;
    }
    return positions;
}

TEST(segment, write_read_round_trip_and_index_lookup) {
    test::temp_dir dir;
    fd_cache cache(4);
    auto seg = segment::create(dir.path, 50, 777, cache);
    ASSERT_TRUE(seg.ok()) << seg.err().message;
    auto positions = fill(**seg, 20, 300);
    EXPECT_EQ((*seg)->end_offset(), 150);
    EXPECT_GT((*seg)->offsets().size(), 3u);
    // Every offset maps to the batch holding it, whether or not an entry names it.
    for (offset_t o = 50; o < 150; ++o) {
        auto p = (*seg)->find_position(o);
        ASSERT_TRUE(p.ok());
        EXPECT_EQ(*p, positions[static_cast<size_t>((o - 50) / 5)]) << o;
    }
    // The bytes on disk are the batches as written, after the header.
    auto f = (*seg)->data();
    ASSERT_TRUE(f.ok());
    bytes first(static_cast<size_t>(positions[1] - positions[0]));
    ASSERT_TRUE(read_exact(**f, first.data(), first.size(), positions[0]).ok());
    auto h = protocol::read_batch_header(first);
    ASSERT_TRUE(h.has_value());
    EXPECT_EQ(h->base_offset, 50);
    EXPECT_TRUE(protocol::batch_crc_ok(first));
    EXPECT_EQ(positions[0], static_cast<int64_t>(file_header_size));

    // Saved indexes load back equal, in a fresh object over the same files.
    (*seg)->add_final_time_entry();
    ASSERT_TRUE((*seg)->save_indexes().ok());
    segment again(dir.path, 50, (*seg)->size(), false, cache);
    again.set_end_offset(150);
    std::string why;
    auto loaded = again.load_indexes(&why);
    ASSERT_TRUE(loaded.ok());
    ASSERT_TRUE(*loaded) << why;
    EXPECT_TRUE(again.offsets() == (*seg)->offsets());
    EXPECT_TRUE(again.times() == (*seg)->times());
    EXPECT_EQ(again.times().last(), (time_index::entry{1000 + 19 * 10 + 4, 150}));
    EXPECT_EQ(again.created_ms(), 777);

    auto listed = list_segments(dir.path);
    ASSERT_TRUE(listed.ok());
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].base_offset, 50);
    EXPECT_EQ(dir.path / "00000000000000000050.log", (*seg)->data_path());
}

TEST(segment, missing_or_disagreeing_index_is_reported) {
    test::temp_dir dir;
    fd_cache cache(4);
    auto seg = segment::create(dir.path, 0, 1, cache);
    ASSERT_TRUE(seg.ok());
    fill(**seg, 10, 200);
    segment other(dir.path, 0, (*seg)->size(), false, cache);
    std::string why;
    auto loaded = other.load_indexes(&why);
    ASSERT_TRUE(loaded.ok());
    EXPECT_FALSE(*loaded);
    EXPECT_NE(why.find("missing"), std::string::npos) << why;

    // An index whose last entry names a position that holds no such batch.
    offset_index wrong(0);
    wrong.append(3, 500);
    ASSERT_TRUE(write_whole_file(other.index_path(), wrong.encode(1)).ok());
    ASSERT_TRUE(write_whole_file(other.time_index_path(), time_index(0).encode(1)).ok());
    loaded = other.load_indexes(&why);
    ASSERT_TRUE(loaded.ok());
    EXPECT_FALSE(*loaded);
}

TEST(segment, header_is_checked_on_first_open) {
    test::temp_dir dir;
    fd_cache cache(4);
    {
        auto seg = segment::create(dir.path, 0, 1, cache);
        ASSERT_TRUE(seg.ok());
    }
    auto path = dir.path / segment_file_name(0, data_ext);
    auto raw = read_whole_file(path);
    ASSERT_TRUE(raw.ok());
    (*raw)[0] = 'X';
    ASSERT_TRUE(write_whole_file(path, *raw).ok());
    segment seg(dir.path, 0, static_cast<int64_t>(raw->size()), false, cache);
    EXPECT_EQ(seg.data().code(), errc::corrupt);
}

TEST(fd_cache, evicts_least_recently_used_and_keeps_in_use_files_open) {
    test::temp_dir dir;
    fd_cache cache(2);
    for (int i = 0; i < 3; ++i)
        ASSERT_TRUE(write_whole_file(dir.path / std::to_string(i), bytes{1}).ok());
    int built = 0;  // paths composed: only for files the cache does not hold
    auto path_of = [&](int i) {
        return [&, i] {
            ++built;
            return dir.path / std::to_string(i);
        };
    };
    auto a = cache.get(1, path_of(0), O_RDONLY);
    ASSERT_TRUE(a.ok());
    ASSERT_TRUE(cache.get(2, path_of(1), O_RDONLY).ok());
    ASSERT_TRUE(cache.get(3, path_of(2), O_RDONLY).ok());  // evicts id 1
    EXPECT_EQ(cache.cached(), 2u);
    uint8_t b = 0;
    EXPECT_TRUE(read_exact(**a, &b, 1, 0).ok());  // still open: held by `a`
    bool fresh = false;
    ASSERT_TRUE(cache.get(1, path_of(0), O_RDONLY, &fresh).ok());
    EXPECT_TRUE(fresh);
    EXPECT_EQ(cache.opens(), 4u);
    ASSERT_TRUE(cache.get(1, path_of(0), O_RDONLY, &fresh).ok());  // a hit
    EXPECT_FALSE(fresh);
    EXPECT_EQ(built, 4);
}

}  // namespace
}  // namespace sluice::log

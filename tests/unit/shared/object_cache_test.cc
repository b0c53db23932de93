#include <gtest/gtest.h>

#include <filesystem>

#include "shared/object_cache.h"
#include "shared/object_store.h"

namespace sluice::shared {

namespace {

std::unique_ptr<object_store> fresh_store(const char* name) {
    auto dir = std::filesystem::path(::testing::TempDir()) / name;
    std::filesystem::remove_all(dir);
    return std::move(make_local_object_store(dir.string()).value());
}

}  // namespace

TEST(ObjectCache, ReadsThroughThenServesRangesInsideWhatItHolds) {
    auto store = fresh_store("object_cache_read_through");
    ASSERT_TRUE(store->put("o1", "0123456789abcdef").ok());
    object_cache cache(*store, 1024);
    std::string out;
    ASSERT_TRUE(cache.read("o1", 2, 8, out).ok());
    EXPECT_EQ(out, "23456789");
    EXPECT_EQ(cache.counters().misses, 1u);
    // Inside the cached range: from memory, even once the object is gone from the store.
    ASSERT_TRUE(store->remove("o1").ok());
    out.clear();
    ASSERT_TRUE(cache.read("o1", 4, 3, out).ok());
    EXPECT_EQ(out, "456");
    EXPECT_EQ(cache.counters().hits, 1u);
    // Reaching past it: the store, which no longer has it.
    out.clear();
    EXPECT_EQ(cache.read("o1", 8, 4, out).code(), errc::not_found);
}

TEST(ObjectCache, PutRangesAreServedAndTheLeastRecentlyUsedGoFirst) {
    auto store = fresh_store("object_cache_lru");
    object_cache cache(*store, 10);
    cache.put("a", 100, std::make_shared<const std::string>("aaaa"));
    cache.put("b", 0, std::make_shared<const std::string>("bbbb"));
    std::string out;
    ASSERT_TRUE(cache.read("a", 101, 2, out).ok());  // a is now the most recent
    EXPECT_EQ(out, "aa");
    cache.put("c", 0, std::make_shared<const std::string>("cccc"));  // 12 > 10: b goes
    EXPECT_EQ(cache.counters().entries, 2u);
    EXPECT_EQ(cache.counters().bytes, 8u);
    out.clear();
    EXPECT_EQ(cache.read("b", 0, 4, out).code(), errc::not_found);  // not cached, not stored
    ASSERT_TRUE(cache.read("a", 100, 4, out).ok());
    EXPECT_EQ(out, "aaaa");
    // A short object is an error, not a short answer.
    ASSERT_TRUE(store->put("d", "dd").ok());
    out.clear();
    EXPECT_EQ(cache.read("d", 0, 5, out).code(), errc::corrupt);
}

}  // namespace sluice::shared

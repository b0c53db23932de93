#include <gtest/gtest.h>

#include <filesystem>

#include "shared/object_store.h"

namespace sluice::shared {

TEST(LocalObjectStore, PutGetRangeListDelete) {
    auto dir = std::filesystem::path(::testing::TempDir()) / "local_object_store_test";
    std::filesystem::remove_all(dir);
    auto store = make_local_object_store(dir.string());
    ASSERT_TRUE(store.ok());
    auto& s = **store;
    ASSERT_TRUE(s.put("t/0/a", "hello world").ok());
    ASSERT_TRUE(s.put("t/1/b", "xyz").ok());
    EXPECT_EQ(s.get("t/0/a").value(), "hello world");
    EXPECT_EQ(s.get("t/0/a", byte_range{6, 100}).value(), "world");
    EXPECT_EQ(s.get("t/0/a", byte_range{20, 1}).code(), errc::out_of_range);
    EXPECT_EQ(s.head("t/1/b").value().size, 3u);
    auto all = s.list("t/").value();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0].key, "t/0/a");
    EXPECT_EQ(s.list("t/1").value().size(), 1u);
    ASSERT_TRUE(s.remove("t/0/a").ok());
    ASSERT_TRUE(s.remove("t/0/a").ok());  // absent: succeeds, as on S3
    EXPECT_EQ(s.get("t/0/a").code(), errc::not_found);
    EXPECT_EQ(s.put("../escape", "x").code(), errc::invalid_argument);
}

TEST(S3Url, ParsesBucketAndPrefix) {
    s3_config c;
    ASSERT_TRUE(parse_s3_url("s3://bucket/a/b", c).ok());
    EXPECT_EQ(c.bucket, "bucket");
    EXPECT_EQ(c.prefix, "a/b/");
    ASSERT_TRUE(parse_s3_url("s3://only", c).ok());
    EXPECT_EQ(c.prefix, "");
    EXPECT_EQ(parse_s3_url("http://x/y", c).code(), errc::invalid_config);
    EXPECT_EQ(parse_s3_url("s3:///y", c).code(), errc::invalid_config);
}

}  // namespace sluice::shared

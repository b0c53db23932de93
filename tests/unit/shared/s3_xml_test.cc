#include "shared/s3_xml.h"

#include <gtest/gtest.h>

namespace sluice::shared::s3_xml {

TEST(S3Xml, ReadsAListingPage) {
    std::string page =
        "<?xml version='1.0' "
        "encoding='UTF-8'?><ListBucketResult><Name>b</Name><KeyCount>2</KeyCount>"
        "<IsTruncated>true</IsTruncated><NextContinuationToken>a/&amp;2</NextContinuationToken>"
        "<Contents><Key>a/1 &lt;x&gt;</Key><Size>6</Size><ETag>&quot;e1&quot;</ETag></Contents>"
        "<Contents><Key>a/&#233;</Key><Size>7</Size></Contents></ListBucketResult>";
    auto contents = elements(page, "Contents");
    ASSERT_EQ(contents.size(), 2u);
    EXPECT_EQ(first_text(contents[0], "Key"), "a/1 <x>");  // not <KeyCount>
    EXPECT_EQ(first_text(contents[0], "ETag"), "\"e1\"");
    EXPECT_EQ(first_text(contents[1], "Key"), "a/\xC3\xA9");
    EXPECT_EQ(first_text(contents[1], "Size"), "7");
    EXPECT_EQ(first_text(page, "NextContinuationToken"), "a/&2");
    EXPECT_EQ(first_text(page, "IsTruncated"), "true");
}

TEST(S3Xml, EmptyAndMissingElements) {
    std::string page = "<ListBucketResult><Prefix/><ContinuationToken/></ListBucketResult>";
    EXPECT_EQ(first_text(page, "Prefix"), "");
    EXPECT_EQ(first_text(page, "Key"), "");
    EXPECT_TRUE(elements(page, "Contents").empty());
    EXPECT_EQ(decode_entities("a &bogus; &#xZZ; b"), "a &bogus; &#xZZ; b");
}

TEST(S3Xml, ErrorBody) {
    std::string body =
        "<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>";
    EXPECT_EQ(first_text(body, "Code"), "SlowDown");
    EXPECT_EQ(first_text(body, "Message"), "Please reduce your request rate.");
}

TEST(s3_xml, parses_last_modified_times) {
    EXPECT_EQ(parse_time_ms("1970-01-01T00:00:00.000Z"), 0);
    EXPECT_EQ(parse_time_ms("2026-12-06T14:12:27.250Z"), 1796566347250);
    EXPECT_EQ(parse_time_ms("2000-02-29T23:59:59Z"), 951868799000);
    EXPECT_EQ(parse_time_ms("yesterday"), -1);
}

}  // namespace sluice::shared::s3_xml

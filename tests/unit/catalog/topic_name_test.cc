#include "catalog/topic_name.h"

#include <gtest/gtest.h>

#include <string>

namespace sluice::catalog {
namespace {

TEST(topic_name, valid_names) {
    for (const std::string& name : {std::string("a"), std::string("__consumer_offsets"),
                                    std::string("x.y-z_1"), std::string("ABC.def-123_"),
                                    std::string("..."), std::string(".a"), std::string(249, 'n')}) {
        auto r = validate_topic_name(name);
        EXPECT_TRUE(r.ok()) << name << ": " << r.err().message;
    }
}

void expect_invalid(const std::string& name, const std::string& says) {
    auto r = validate_topic_name(name);
    ASSERT_FALSE(r.ok()) << "accepted '" << name << "'";
    EXPECT_EQ(r.code(), errc::invalid_argument);
    EXPECT_NE(r.err().message.find(says), std::string::npos)
        << "'" << name << "' -> " << r.err().message;
}

TEST(topic_name, each_rule_is_named_in_the_error) {
    expect_invalid("", "empty");
    expect_invalid(".", "cannot be '.'");
    expect_invalid("..", "cannot be '..'");
    expect_invalid(std::string(250, 'n'), "250 characters long; the limit is 249");
    expect_invalid("a/b", "illegal character (byte 0x2f at position 1)");
    expect_invalid("a b", "illegal character (byte 0x20 at position 1)");
    expect_invalid("\xc3\xa9", "illegal character (byte 0xc3 at position 0)");  // "é" in UTF-8
    expect_invalid(std::string("a\0b", 3), "illegal character (byte 0x00");
    expect_invalid("topic:1", "illegal character");
}

}  // namespace
}  // namespace sluice::catalog

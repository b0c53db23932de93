#include "broker/connection_quotas.h"

#include <gtest/gtest.h>

namespace sluice::broker {
namespace {

TEST(connection_quotas, overrides_parse_ip_and_count) {
    auto r = parse_ip_overrides("127.0.0.1:5, [::1]:7,10.0.0.2:0");
    ASSERT_TRUE(r) << r.err().message;
    EXPECT_EQ(*r, (std::map<std::string, int64_t>{{"127.0.0.1", 5}, {"::1", 7}, {"10.0.0.2", 0}}));
    EXPECT_TRUE(parse_ip_overrides("")->empty());
    EXPECT_FALSE(parse_ip_overrides("localhost:5"));
    EXPECT_FALSE(parse_ip_overrides("127.0.0.1"));
    EXPECT_FALSE(parse_ip_overrides("127.0.0.1:-1"));
    EXPECT_FALSE(parse_ip_overrides("127.0.0.1:x"));
}

TEST(connection_quotas, peer_address_strips_port_and_brackets) {
    EXPECT_EQ(peer_address("127.0.0.1:9092"), "127.0.0.1");
    EXPECT_EQ(peer_address("[::1]:40000"), "::1");
}

TEST(connection_quotas, limits_bind_the_next_connection) {
    connection_quotas q;
    q.set({.max = 3, .per_ip = 2, .per_ip_overrides = {{"10.0.0.9", 3}}});
    EXPECT_FALSE(q.admit("10.0.0.1"));
    EXPECT_FALSE(q.admit("10.0.0.1"));
    auto why = q.admit("10.0.0.1");
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("max.connections.per.ip is 2"), std::string::npos) << *why;
    EXPECT_FALSE(q.admit("10.0.0.9"));
    why = q.admit("10.0.0.9");
    ASSERT_TRUE(why);
    EXPECT_NE(why->find("max.connections is 3"), std::string::npos) << *why;
    q.release("10.0.0.1");
    EXPECT_FALSE(q.admit("10.0.0.9"));  // the override allows a second
    EXPECT_EQ(q.open(), 3);
    // Lowered below what is open: connections stay, the next is refused.
    q.set({.max = 1});
    EXPECT_TRUE(q.admit("10.0.0.5"));
    EXPECT_EQ(q.open(), 3);
}

}  // namespace
}  // namespace sluice::broker

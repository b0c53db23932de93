// The one parse of member metadata the broker does: the topics of a consumer's
// subscription, for OffsetDelete.

#include "group/consumer_protocol.h"

#include <gtest/gtest.h>

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

using topics = std::vector<std::string>;

TEST(consumer_protocol, parses_a_v0_subscription) {
    EXPECT_EQ(subscribed_topics(subscription_v0({"orders", "payments"})),
              (topics{"orders", "payments"}));
    EXPECT_EQ(subscribed_topics(subscription_v0({})), topics{});
}

TEST(consumer_protocol, parses_a_v1_subscription_with_owned_partitions) {
    bytes b = subscription_v1({"orders", "audit"}, "user-data", {{"orders", {0, 2}}});
    EXPECT_EQ(subscribed_topics(b), (topics{"orders", "audit"}));
}

TEST(consumer_protocol, rejects_every_truncation_of_a_v0_subscription) {
    bytes full = subscription_v0({"orders", "payments"});
    for (size_t n = 0; n < full.size(); ++n) {
        bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_FALSE(subscribed_topics(cut)) << "cut to " << n << " of " << full.size();
    }
}

TEST(consumer_protocol, rejects_a_v1_subscription_cut_before_its_owned_partitions) {
    bytes full = subscription_v1({"orders"}, "ud", {{"orders", {1}}});
    // version (2) + count (4) + "orders" (2 + 6) + user data (4 + 2)
    const size_t through_user_data = 2 + 4 + 8 + 6;
    for (size_t n = 0; n < through_user_data; ++n) {
        bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_FALSE(subscribed_topics(cut)) << "cut to " << n;
    }
}

TEST(consumer_protocol, rejects_impossible_topic_counts) {
    bytes negative;
    put16(negative, 0);
    put32(negative, -2);
    put32(negative, -1);
    EXPECT_FALSE(subscribed_topics(negative));

    bytes huge;
    put16(huge, 0);
    put32(huge, 1'000'000);
    put_string(huge, "orders");
    put32(huge, -1);
    EXPECT_FALSE(subscribed_topics(huge));
}

}  // namespace
}  // namespace sluice::group::test

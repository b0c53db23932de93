// The parses of classic member metadata and assignments the broker does: the topics of
// a consumer's subscription (OffsetDelete, system.group_members) and the partitions of
// its assignment (system.group_members).

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

// A ConsumerProtocolAssignment of `version` (v1 to v3 have v0's layout).
bytes assignment_bytes(int16_t version,
                       const std::vector<std::pair<std::string, std::vector<int32_t>>>& parts,
                       std::optional<std::string_view> user_data = std::nullopt) {
    bytes b;
    put16(b, version);
    put32(b, static_cast<int32_t>(parts.size()));
    for (const auto& [topic, ps] : parts) {
        put_string(b, topic);
        put32(b, static_cast<int32_t>(ps.size()));
        for (int32_t p : ps) put32(b, p);
    }
    put32(b, user_data ? static_cast<int32_t>(user_data->size()) : -1);
    if (user_data) b.insert(b.end(), user_data->begin(), user_data->end());
    return b;
}

TEST(consumer_protocol, parses_assignments_of_every_version) {
    const partition_map want{{"orders", {0, 2, 5}}, {"audit", {1}}};
    for (int16_t v : {0, 1, 3}) {
        auto got = assigned_partitions(
            assignment_bytes(v, {{"orders", {5, 0, 2}}, {"audit", {1}}}, "sticky"));
        ASSERT_TRUE(got) << "version " << v;
        EXPECT_EQ(*got, want);
        EXPECT_EQ(format_partitions(*got), "audit:1;orders:0,2,5");
    }
    EXPECT_EQ(assigned_partitions(assignment_bytes(0, {})), partition_map{});
}

TEST(consumer_protocol, rejects_what_is_not_an_assignment) {
    EXPECT_FALSE(assigned_partitions(bytes{}));  // not assigned yet
    bytes full = assignment_bytes(0, {{"orders", {0, 1}}});
    for (size_t n = 0; n < full.size(); ++n) {
        bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
        EXPECT_FALSE(assigned_partitions(cut)) << "cut to " << n << " of " << full.size();
    }
    bytes negative;
    put16(negative, 0);
    put32(negative, 1);
    put_string(negative, "orders");
    put32(negative, -3);
    put32(negative, -1);
    EXPECT_FALSE(assigned_partitions(negative));
}

}  // namespace
}  // namespace sluice::group::test

// Group configs (Kafka's GroupConfig): names, bounds and Kafka's refusal messages, and
// the coordinators reading a group's overrides instead of the broker's settings.

#include <gtest/gtest.h>

#include "group/consumer/coordinator.h"
#include "group/group_configs.h"
#include "group/share/coordinator.h"

namespace sluice::group {
namespace {

using protocol::error_code;

std::optional<std::string> check(const std::string& k, const std::string& v,
                                 group_defaults d = {}) {
    return check_group_configs(d, {{k, v}});
}

TEST(GroupConfigs, KafkasBoundsAndMessages) {
    EXPECT_FALSE(check("consumer.session.timeout.ms", "50000"));
    EXPECT_EQ(check("consumer.session.timeout.ms", "1000"),
              "consumer.session.timeout.ms must be greater than or equal to "
              "group.consumer.min.session.timeout.ms");
    EXPECT_EQ(check("consumer.session.timeout.ms", "70000"),
              "consumer.session.timeout.ms must be less than or equal to "
              "group.consumer.max.session.timeout.ms");
    EXPECT_EQ(check("consumer.session.timeout.ms", "abc"),
              "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of "
              "type INT");
    EXPECT_EQ(check("no.such", "1"), "Unknown group config name: no.such");
    EXPECT_EQ(check("share.delivery.count.limit", "1"),
              "Invalid value 1 for configuration share.delivery.count.limit: Value must be at "
              "least 2");
    EXPECT_EQ(check("share.delivery.count.limit", "11"),
              "share.delivery.count.limit must be less than or equal to "
              "group.share.max.delivery.count.limit");
    EXPECT_FALSE(check("share.record.lock.duration.ms", "15000"));
    EXPECT_EQ(check("share.record.lock.duration.ms", "14999"),
              "share.record.lock.duration.ms must be greater than or equal to "
              "group.share.min.record.lock.duration.ms");
    EXPECT_EQ(check("share.record.lock.duration.ms", "999"),
              "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be "
              "at least 1000");
    EXPECT_EQ(check("consumer.heartbeat.interval.ms", "0"),
              "Invalid value 0 for configuration consumer.heartbeat.interval.ms: Value must be "
              "at least 1");
    EXPECT_FALSE(check("share.auto.offset.reset", "earliest"));
    EXPECT_TRUE(check("share.auto.offset.reset", "bogus"));
    EXPECT_FALSE(check("share.isolation.level", "read_uncommitted"));
    EXPECT_TRUE(check("share.isolation.level", "bogus"));
    // A broker default below Kafka's minimum widens the bound down to it.
    group_defaults shortlocks;
    shortlocks.share.record_lock_duration_ms = 2000;
    EXPECT_FALSE(check("share.record.lock.duration.ms", "2000", shortlocks));
    EXPECT_TRUE(check("share.record.lock.duration.ms", "1999", shortlocks));
}

TEST(GroupConfigs, OverridesFallBackToTheBrokerSettings) {
    group_configs gc;
    config base;
    EXPECT_EQ(gc.consumer_session_timeout_ms("g", base), base.consumer_session_timeout_ms);
    gc.set("g", {{"consumer.session.timeout.ms", "50000"},
                 {"share.auto.offset.reset", "earliest"},
                 {"share.record.lock.duration.ms", "20000"}});
    EXPECT_EQ(gc.consumer_session_timeout_ms("g", base), 50000);
    EXPECT_EQ(gc.consumer_session_timeout_ms("other", base), base.consumer_session_timeout_ms);
    EXPECT_EQ(gc.consumer_heartbeat_interval_ms("g", base), base.consumer_heartbeat_interval_ms);
    auto s = gc.share_settings("g", share::config{});
    EXPECT_EQ(s.auto_offset_reset, "earliest");
    EXPECT_EQ(s.record_lock_duration_ms, 20000);
    EXPECT_EQ(s.delivery_count_limit, share::config{}.delivery_count_limit);
    gc.set("g", {});
    EXPECT_TRUE(gc.of("g").empty());
}

class no_topics final : public consumer::topic_view {
  public:
    std::optional<int32_t> partitions(const std::string& t) const override {
        return t == "t" ? std::optional<int32_t>(1) : std::nullopt;
    }
    std::vector<std::string> names() const override { return {"t"}; }
};

// The share coordinator reads the group's auto offset reset, lock duration and
// heartbeat interval from its config.
TEST(GroupConfigs, TheShareCoordinatorAppliesThem) {
    no_topics topics;
    int64_t now = 1;
    share::coordinator c{share::config{}, topics,
                         clock_source{[&] { return now; }, [&] { return now; }}};
    group_configs gc;
    c.set_group_configs(&gc);
    gc.set("early", {{"share.auto.offset.reset", "earliest"},
                     {"share.record.lock.duration.ms", "15000"},
                     {"share.heartbeat.interval.ms", "7000"}});
    const share::tp p{"t", 0};
    EXPECT_EQ(c.fetch_position("late", p, 0, 10), -1);  // latest: nothing yet
    EXPECT_EQ(c.fetch_position("early", p, 0, 10), 0);  // earliest: the old records
    share::heartbeat_request r;
    r.group_id = "early";
    r.member_id = "m";
    r.subscribed_topic_names = std::vector<std::string>{"t"};
    int32_t interval = 0;
    auto answered = [&](const share::heartbeat_result& h) { interval = h.heartbeat_interval_ms; };
    c.heartbeat(r, answered);  // at once: the coordinator's default runner
    EXPECT_EQ(interval, 7000);
    r.group_id = "late";
    c.heartbeat(r, answered);
    EXPECT_EQ(interval, share::config{}.heartbeat_interval_ms);
    ASSERT_EQ(c.use_session("early", "m", 0, {p}, {}).error, error_code::none);
    auto got = c.acquire("early", "m", p, 0, 9, 100);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 1u);
    // The lock ends after the group's 15 s, not the broker's 30 s: offered again.
    now += 15001;
    EXPECT_EQ(c.fetch_position("early", p, 0, 10), 0);
    EXPECT_EQ(c.settings("early").record_lock_duration_ms, 15000);
}

}  // namespace
}  // namespace sluice::group

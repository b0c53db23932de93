#include "broker/dynamic_config.h"

#include <gtest/gtest.h>

#include "protocol/messages/describe_configs.h"

namespace sluice::broker {
namespace {

namespace p = protocol;
using levels_t = std::vector<std::pair<int8_t, std::string>>;

TEST(dynamic_config, precedence_is_broker_then_cluster_default_then_static_then_default) {
    broker_config cfg;
    cfg.topic_defaults["retention.ms"] = "3600000";
    dynamic_config d(cfg);
    EXPECT_EQ(d.levels("log.retention.ms"),
              (levels_t{{p::source_static_broker, "3600000"}, {p::source_default, "604800000"}}));
    d.set(config_level::cluster_default, {{"log.retention.ms", "60000"}});
    d.set(config_level::this_broker, {{"log.retention.ms", "120000"}});
    EXPECT_EQ(d.levels("log.retention.ms"),
              (levels_t{{p::source_dynamic_broker, "120000"},
                        {p::source_dynamic_default_broker, "60000"},
                        {p::source_static_broker, "3600000"},
                        {p::source_default, "604800000"}}));
    EXPECT_EQ(d.value("log.retention.ms"), "120000");
    d.set(config_level::this_broker, {});
    EXPECT_EQ(d.value("log.retention.ms"), "60000");
    // Topic defaults are keyed by the topic config they stand for.
    EXPECT_EQ(d.topic_defaults(config_level::cluster_default),
              (config_map{{"retention.ms", "60000"}}));
    EXPECT_TRUE(d.levels("log.dirs").empty());  // static: not a dynamic setting
}

TEST(dynamic_config, group_settings_follow_the_levels) {
    broker_config cfg;
    cfg.groups.initial_rebalance_delay_ms = 300;  // static, as --group-initial-rebalance-delay-ms
    dynamic_config d(cfg);
    EXPECT_EQ(d.levels("group.initial.rebalance.delay.ms"),
              (levels_t{{p::source_static_broker, "300"}, {p::source_default, "3000"}}));
    EXPECT_EQ(d.levels("offsets.retention.minutes"), (levels_t{{p::source_default, "10080"}}));
    d.set(config_level::cluster_default,
          {{"offsets.retention.minutes", "60"}, {"group.initial.rebalance.delay.ms", "0"}});
    d.set(config_level::this_broker, {{"group.initial.rebalance.delay.ms", "50"}});
    const auto g = d.group_settings();
    EXPECT_EQ(g.offsets_retention_ms, 60 * 60'000);
    EXPECT_EQ(g.initial_rebalance_delay_ms, 50);
    EXPECT_EQ(g.min_session_timeout_ms, cfg.groups.min_session_timeout_ms);
    EXPECT_TRUE(d.topic_defaults(config_level::cluster_default).empty());
}

TEST(dynamic_config, connection_limits_follow_the_levels) {
    broker_config cfg;
    cfg.max_connections_per_ip = 50;  // static, as --max-connections-per-ip
    dynamic_config d(cfg);
    EXPECT_EQ(d.levels("max.connections.per.ip"),
              (levels_t{{p::source_static_broker, "50"}, {p::source_default, "2147483647"}}));
    EXPECT_EQ(d.levels("max.connections"), (levels_t{{p::source_default, "2147483647"}}));
    d.set(config_level::cluster_default, {{"max.connections", "10"}});
    d.set(config_level::this_broker, {{"max.connections.per.ip.overrides", "127.0.0.1:3"}});
    auto l = d.connection_limits();
    EXPECT_EQ(l.max, 10);
    EXPECT_EQ(l.per_ip, 50);
    EXPECT_EQ(l.per_ip_overrides, (std::map<std::string, int64_t>{{"127.0.0.1", 3}}));
    EXPECT_FALSE(d.check(config_level::this_broker, {{"max.connections", "-1"}}));
    EXPECT_FALSE(d.check(config_level::this_broker, {{"max.connections.per.ip.overrides", "a:1"}}));
    EXPECT_TRUE(d.check(config_level::this_broker, {{"max.connections.per.ip", "0"}}));
}

TEST(dynamic_config, check_refuses_static_unknown_and_bad_values) {
    broker_config cfg;
    dynamic_config d(cfg);
    EXPECT_TRUE(d.check(config_level::cluster_default,
                        {{"log.retention.ms", "1000"}, {"log.cleanup.policy", "compact,delete"}}));
    auto ro = d.check(config_level::cluster_default,
                      {{"log.dirs", "/x"}, {"num.partitions", "3"}, {"log.retention.ms", "1"}});
    ASSERT_FALSE(ro);
    EXPECT_EQ(ro.code(), errc::invalid_argument);
    EXPECT_NE(ro.err().message.find("Cannot update these configs dynamically: log.dirs, "
                                    "num.partitions."),
              std::string::npos)
        << ro.err().message;
    EXPECT_NE(ro.err().message.find("restart"), std::string::npos);
    // A name Sluice does not know is kept, as Kafka keeps it, and only described.
    EXPECT_TRUE(d.check(config_level::this_broker, {{"no.such", "1"}}));
    EXPECT_TRUE(d.levels("no.such").empty());
    d.set(config_level::this_broker, {{"no.such", "1"}});
    EXPECT_EQ(d.levels("no.such"), (levels_t{{p::source_dynamic_broker, "1"}}));
    EXPECT_TRUE(d.topic_defaults(config_level::this_broker).empty());
    for (auto [name, value] : {std::pair{"log.retention.ms", "soon"}, {"log.cleanup.policy", "tidy"},
                               {"group.initial.rebalance.delay.ms", "-1"},
                               {"offsets.retention.minutes", "0"},
                               {"group.max.session.timeout.ms", "99999999999"}}) {
        auto r = d.check(config_level::this_broker, {{name, value}});
        ASSERT_FALSE(r) << name << "=" << value;
        EXPECT_EQ(r.code(), errc::invalid_config) << name;
        EXPECT_NE(r.err().message.find(name), std::string::npos) << r.err().message;
    }
}

TEST(dynamic_config, check_compares_session_bounds_across_levels) {
    broker_config cfg;
    dynamic_config d(cfg);
    d.set(config_level::cluster_default, {{"group.max.session.timeout.ms", "10000"}});
    auto r = d.check(config_level::this_broker, {{"group.min.session.timeout.ms", "20000"}});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), errc::invalid_config);
    // The broker's own max, above its min, makes it valid.
    EXPECT_TRUE(d.check(config_level::this_broker, {{"group.min.session.timeout.ms", "20000"},
                                                    {"group.max.session.timeout.ms", "30000"}}));
}

}  // namespace
}  // namespace sluice::broker

#include "catalog/topic_config.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

namespace sluice::catalog {
namespace {

void expect_ok(const std::string& key, const std::string& value) {
    auto r = validate_topic_config(key, value);
    EXPECT_TRUE(r.ok()) << key << "=" << value << ": " << r.err().message;
}

// The message must name the key and the reason, so that INVALID_CONFIG is actionable.
void expect_bad(const std::string& key, const std::string& value, const std::string& says) {
    auto r = validate_topic_config(key, value);
    ASSERT_FALSE(r.ok()) << "accepted " << key << "=" << value;
    EXPECT_EQ(r.code(), errc::invalid_argument);
    EXPECT_NE(r.err().message.find("'" + key + "'"), std::string::npos) << r.err().message;
    EXPECT_NE(r.err().message.find(says), std::string::npos) << r.err().message;
}

TEST(topic_config, every_default_passes_its_own_validator) {
    std::set<std::string_view> names;
    for (const auto& d : topic_config_defs()) {
        expect_ok(std::string(d.name), std::string(d.default_value));
        EXPECT_FALSE(d.doc.empty()) << d.name;
        EXPECT_TRUE(names.insert(d.name).second) << "duplicate " << d.name;
        EXPECT_EQ(find_topic_config_def(d.name), &d);
    }
    EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
    for (auto required :
         {"cleanup.policy", "retention.ms", "retention.bytes", "message.timestamp.type",
          "max.message.bytes", "segment.bytes", "segment.ms", "message.timestamp.difference.max.ms",
          "min.insync.replicas", "compression.type", "index.interval.bytes"}) {
        EXPECT_TRUE(names.contains(required)) << required;
    }
}

TEST(topic_config, unknown_key) {
    expect_bad("retention.millis", "1", "unknown topic config");
    expect_bad("", "1", "unknown topic config");
    expect_bad("log.retention.ms", "1", "unknown topic config");  // broker name, not topic
}

TEST(topic_config, cleanup_policy_delete_and_compact) {
    expect_ok("cleanup.policy", "delete");
    expect_ok("cleanup.policy", "compact");
    expect_ok("cleanup.policy", "delete,compact");
    expect_ok("cleanup.policy", "compact, delete");
    expect_bad("cleanup.policy", "remove", "must be 'delete'");
    // Kafka 4.x: an empty list, neither policy.
    expect_ok("cleanup.policy", "");
    expect_bad("cleanup.policy", "Delete", "must be 'delete'");
    expect_bad("cleanup.policy", "delete,,compact", "must be 'delete'");
}

TEST(topic_config, tiered_storage_is_described_but_not_enabled) {
    expect_ok("local.retention.ms", "-2");
    expect_ok("local.retention.bytes", "1000");
    expect_bad("local.retention.ms", "-3", "must be >= -2");
    expect_ok("remote.storage.enable", "false");
    expect_bad("remote.storage.enable", "true", "Tiered Storage functionality is disabled");
    expect_bad("remote.storage.enable", "yes", "must be 'true' or 'false'");
    expect_ok("remote.log.copy.disable", "TRUE");
}

TEST(topic_config, retention) {
    for (auto key : {"retention.ms", "retention.bytes"}) {
        expect_ok(key, "-1");
        expect_ok(key, "0");
        expect_ok(key, "9223372036854775807");
        expect_bad(key, "-2", "must be >= -1");
        expect_bad(key, "9223372036854775808", "does not fit in a 64-bit integer");
        expect_bad(key, "1h", "must be a 64-bit integer >= -1");
        expect_bad(key, "", "must be a 64-bit integer");
        expect_bad(key, " 5", "must be a 64-bit integer");
        expect_bad(key, "+5", "must be a 64-bit integer");
        expect_bad(key, "1.5", "must be a 64-bit integer");
    }
}

TEST(topic_config, message_timestamp_type) {
    expect_ok("message.timestamp.type", "CreateTime");
    expect_ok("message.timestamp.type", "LogAppendTime");
    expect_bad("message.timestamp.type", "createtime", "'CreateTime' or 'LogAppendTime'");
    expect_bad("message.timestamp.type", "", "'CreateTime' or 'LogAppendTime'");
}

TEST(topic_config, max_message_bytes) {
    expect_ok("max.message.bytes", "0");
    expect_ok("max.message.bytes", "1048588");
    expect_ok("max.message.bytes", "2147483647");
    expect_bad("max.message.bytes", "2147483648", "does not fit in a 32-bit integer");
    expect_bad("max.message.bytes", "-1", "must be >= 0");
    expect_bad("max.message.bytes", "1MB", "must be a 32-bit integer");
}

TEST(topic_config, segments) {
    expect_ok("segment.bytes", "1024");
    expect_ok("segment.bytes", "1073741824");
    expect_bad("segment.bytes", "1023", "must be >= 1024");
    expect_bad("segment.bytes", "14", "must be >= 1024");
    expect_bad("segment.bytes", "4294967296", "does not fit in a 32-bit integer");
    expect_ok("segment.ms", "1");
    expect_bad("segment.ms", "0", "must be >= 1");
    expect_ok("index.interval.bytes", "1");
    expect_bad("index.interval.bytes", "0", "must be >= 1");
    expect_ok("segment.index.bytes", "4");
    expect_bad("segment.index.bytes", "3", "must be >= 4");
}

TEST(topic_config, accepted_and_stored_keys) {
    expect_ok("message.timestamp.difference.max.ms", "3600000");
    expect_bad("message.timestamp.difference.max.ms", "-1", "must be >= 0");
    expect_ok("min.insync.replicas", "1");
    expect_ok("min.insync.replicas", "2");
    expect_bad("min.insync.replicas", "0", "must be >= 1");
    expect_ok("unclean.leader.election.enable", "true");
    expect_ok("preallocate", "FALSE");
    expect_bad("preallocate", "yes", "must be 'true' or 'false'");
    expect_ok("min.cleanable.dirty.ratio", "0.25");
    expect_bad("min.cleanable.dirty.ratio", "1.5", "number in [0, 1]");
    expect_bad("min.cleanable.dirty.ratio", "nan", "number in [0, 1]");
}

// Sluice's default max.compaction.lag.ms is 30 s (Kafka's: Long.MAX_VALUE); its floor is
// Kafka's (1), and a topic's max below its min is refused as Kafka does.
TEST(topic_config, compaction_lags) {
    EXPECT_EQ(find_topic_config_def("max.compaction.lag.ms")->default_value, "30000");
    EXPECT_EQ(find_topic_config_def("min.compaction.lag.ms")->default_value, "0");
    EXPECT_EQ(topic_config_synonyms("max.compaction.lag.ms").broker_name,
              "log.cleaner.max.compaction.lag.ms");
    expect_ok("max.compaction.lag.ms", "1");
    expect_bad("max.compaction.lag.ms", "0", "must be >= 1");
    expect_bad("max.compaction.lag.ms", "-1", "must be >= 1");
    expect_bad("min.compaction.lag.ms", "-1", "must be >= 0");
    const std::map<std::string, std::string> none;
    EXPECT_TRUE(validate_compaction_lags({{"max.compaction.lag.ms", "5000"}}, none).ok());
    EXPECT_TRUE(validate_compaction_lags(
                    {{"min.compaction.lag.ms", "5000"}, {"max.compaction.lag.ms", "5000"}}, none)
                    .ok());
    auto r = validate_compaction_lags(
        {{"min.compaction.lag.ms", "5001"}, {"max.compaction.lag.ms", "5000"}}, none);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::invalid_argument);
    EXPECT_NE(r.err().message.find("min.compaction.lag.ms (5001) > max.compaction.lag.ms (5000)"),
              std::string::npos)
        << r.err().message;
    // The min in force may come from the broker's defaults.
    EXPECT_FALSE(validate_compaction_lags({{"max.compaction.lag.ms", "5000"}},
                                          {{"min.compaction.lag.ms", "60000"}})
                     .ok());
    // Only the min set: accepted although above the default max (min then wins).
    EXPECT_TRUE(validate_compaction_lags({{"min.compaction.lag.ms", "60000"}}, none).ok());
}

TEST(topic_config, compression_type) {
    expect_ok("compression.type", "producer");
    expect_ok("compression.type", "uncompressed");
    for (auto codec : {"gzip", "snappy", "lz4", "zstd"}) expect_ok("compression.type", codec);
    expect_bad("compression.type", "brotli",
               "must be 'producer', 'uncompressed', 'gzip', 'snappy', 'lz4' or 'zstd'");
    expect_bad("compression.type", "none", "must be");  // Kafka's topic config has no 'none'
}

TEST(topic_config, compression_levels_take_kafkas_ranges) {
    for (auto v : {"-1", "1", "9"}) expect_ok("compression.gzip.level", v);
    expect_bad("compression.gzip.level", "0", "must be -1 (the default) or in [1, 9]");
    for (auto v : {"10", "-2", "5 "}) expect_bad("compression.gzip.level", v, "in [-1, 9]");
    EXPECT_EQ(topic_config_type("compression.gzip.level"), 3);  // INT, as Kafka's
    expect_ok("compression.lz4.level", "17");
    expect_bad("compression.lz4.level", "18", "in [1, 17]");
    expect_bad("compression.lz4.level", "0", "in [1, 17]");
    expect_ok("compression.zstd.level", "-131072");
    expect_ok("compression.zstd.level", "22");
    expect_bad("compression.zstd.level", "23", "in [-131072, 22]");
    EXPECT_EQ(find_topic_config_def("compression.zstd.level")->default_value, "3");
    EXPECT_EQ(find_topic_config_def("compression.lz4.level")->default_value, "9");
    EXPECT_EQ(find_topic_config_def("compression.gzip.level")->default_value, "-1");
}

TEST(topic_config, validate_many_reports_first_bad_key) {
    EXPECT_TRUE(validate_topic_configs({}).ok());
    EXPECT_TRUE(
        validate_topic_configs({{"retention.ms", "1000"}, {"segment.bytes", "1048576"}}).ok());
    auto r = validate_topic_configs({{"retention.ms", "1000"}, {"segment.ms", "0"}});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::invalid_argument);
    EXPECT_NE(r.err().message.find("'segment.ms'"), std::string::npos) << r.err().message;
}

TEST(topic_config, effective_config_precedence) {
    topic_info t;
    t.name = "t";
    const std::map<std::string, std::string> broker = {{"retention.ms", "1000"},
                                                       {"segment.bytes", "2048"}};
    // Built-in default when nobody set it.
    EXPECT_EQ(effective_config(t, "retention.ms"), "604800000");
    EXPECT_EQ(effective_config(t, "cleanup.policy", broker), "delete");
    // Broker override beats the built-in default.
    EXPECT_EQ(effective_config(t, "retention.ms", broker), "1000");
    // The topic's own setting beats both.
    t.configs["retention.ms"] = "5";
    EXPECT_EQ(effective_config(t, "retention.ms", broker), "5");
    EXPECT_EQ(effective_config(t, "retention.ms"), "5");
    EXPECT_EQ(effective_config(t, "segment.bytes", broker), "2048");
    // Unknown keys have no default.
    EXPECT_EQ(effective_config(t, "no.such.key"), "");
}

}  // namespace
}  // namespace sluice::catalog

namespace sluice::catalog {
namespace {

TEST(topic_config, types_as_kafka_numbers_them) {
    EXPECT_EQ(topic_config_type("retention.ms"), 5);        // long
    EXPECT_EQ(topic_config_type("segment.bytes"), 3);       // int
    EXPECT_EQ(topic_config_type("cleanup.policy"), 7);      // list
    EXPECT_EQ(topic_config_type("message.timestamp.type"), 2);  // string
    EXPECT_EQ(topic_config_type("min.cleanable.dirty.ratio"), 6);  // double
    EXPECT_EQ(topic_config_type("preallocate"), 1);          // boolean
    EXPECT_EQ(topic_config_type("no.such.key"), 0);
    for (const auto& def : topic_config_defs()) EXPECT_NE(topic_config_type(def.name), 0) << def.name;
}

}  // namespace
}  // namespace sluice::catalog

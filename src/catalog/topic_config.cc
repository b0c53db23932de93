#include "catalog/topic_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>

namespace sluice::catalog {
namespace {

constexpr int64_t int32_max = std::numeric_limits<int32_t>::max();
constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();

// custom and list values are checked by the spec's own function.
enum class value_type { int32, int64, boolean, fraction, custom, list };

// Returns "" when the value is acceptable, else the reason it is not.
using custom_check = std::string (*)(std::string_view value);

struct config_spec {
    config_def def;
    value_type type;
    int64_t min = 0;
    int64_t max = 0;
    custom_check check = nullptr;
};

// Kafka 4.x: an empty list applies neither policy (segments are kept forever).
std::string check_cleanup_policy(std::string_view v) {
    if (v.empty()) return "";
    for (const auto& item : config_list_items(v))
        if (item != "compact" && item != "delete")
            return "must be 'delete', 'compact', 'compact,delete' or empty";
    return "";
}

std::string check_compression_type(std::string_view v) {
    if (v == "producer" || v == "uncompressed" || v == "gzip" || v == "snappy" || v == "lz4" ||
        v == "zstd")
        return "";
    return "must be 'producer', 'uncompressed', 'gzip', 'snappy', 'lz4' or 'zstd'";
}

// Kafka's (KIP-390): zlib's levels 1..9, or -1 for zlib's default; the integer range
// [-1, 9] is checked first, this takes out the 0 inside it.
std::string check_gzip_level(std::string_view v) {
    return v == "0" ? "must be -1 (the default) or in [1, 9]" : "";
}

std::string check_timestamp_type(std::string_view v) {
    if (v == "CreateTime" || v == "LogAppendTime") return "";
    return "must be 'CreateTime' or 'LogAppendTime'";
}

bool all_digits(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// Kafka 3.x's message.format.version takes a release: "2.8", "0.10.2", "3.0-IV1".
std::string check_format_version(std::string_view v) {
    constexpr std::string_view why = "must be a Kafka release such as '2.8' or '3.0-IV1'";
    std::string_view release = v.substr(0, v.find("-IV"));
    if (release.size() < v.size() && !all_digits(v.substr(release.size() + 3))) return std::string(why);
    int parts = 0;
    for (const auto& part : config_list_items(release, '.')) {
        if (!all_digits(part)) return std::string(why);
        ++parts;
    }
    return parts >= 2 && parts <= 3 ? "" : std::string(why);
}

// Without tiered storage Kafka refuses remote.storage.enable=true with this reason.
std::string check_no_remote_storage(std::string_view v) {
    if (v.size() == 4 && (v[0] | 0x20) == 't')
        return "Tiered Storage functionality is disabled in the broker. Topic cannot be "
               "configured with remote log storage.";
    return "";
}

// Kafka's throttled-replica lists: empty, "*", or PARTITION:BROKER items.
std::string check_throttled_replicas(std::string_view v) {
    if (v.empty() || v == "*") return "";
    for (const auto& item : config_list_items(v)) {
        auto pair = config_list_items(item, ':');
        if (pair.size() != 2 || !all_digits(pair[0]) || !all_digits(pair[1]))
            return "must be '*' or a list of PARTITION:BROKER";
    }
    return "";
}

// Defaults follow Kafka's so that clients comparing DescribeConfigs output see no surprise.
// Keys marked "no effect" are accepted so that tools which send full config sets work;
// they change nothing in a single-broker Sluice.
const std::vector<config_spec>& specs() {
    static const std::vector<config_spec> s = [] {
        std::vector<config_spec> v = {
            {{"cleanup.policy", "delete",
              "What happens to old segments: 'delete' removes them by retention.ms and "
              "retention.bytes; 'compact' keeps only the latest record of each key (records "
              "must have keys); 'compact,delete' does both; an empty list neither (segments "
              "are kept forever)."},
             value_type::list,
             0,
             0,
             check_cleanup_policy},
            {{"compression.type", "producer",
              "Compression of stored batches: 'producer' keeps what the producer sent; "
              "'uncompressed', 'gzip', 'snappy', 'lz4' or 'zstd' recompress, on append, "
              "every batch the producer compressed otherwise."},
             value_type::custom,
             0,
             0,
             check_compression_type},
            {{"compression.gzip.level", "-1",
              "Level of the broker's gzip compression (compression.type=gzip): 1 to 9, or "
              "-1 for zlib's default (6)."},
             value_type::int32,
             -1,
             9,
             check_gzip_level},
            // Kafka's ranges: lz4's levels 1..17 (its default 9), zstd's from
            // ZSTD_minCLevel() (-131072) to ZSTD_maxCLevel() (22), its default 3.
            {{"compression.lz4.level", "9",
              "Level of the broker's lz4 compression (compression.type=lz4): 1 to 17."},
             value_type::int32,
             1,
             17},
            {{"compression.zstd.level", "3",
              "Level of the broker's zstd compression (compression.type=zstd): -131072 "
              "to 22."},
             value_type::int32,
             -131072,
             22},
            {{"delete.retention.ms", "86400000",
              "How long a tombstone (null value) of a compacted topic is kept, counted from "
              "its timestamp, once a cleaner pass has seen it."},
             value_type::int64,
             0,
             int64_max},
            {{"file.delete.delay.ms", "60000",
              "Delay before a segment removed by retention is deleted from disk."},
             value_type::int64,
             0,
             int64_max},
            {{"flush.messages", "9223372036854775807",
              "Force an fsync after this many messages. Acknowledged acks=all writes are "
              "always on stable storage regardless."},
             value_type::int64,
             1,
             int64_max},
            {{"flush.ms", "9223372036854775807",
              "Force an fsync after this many ms. Acknowledged acks=all writes are always on "
              "stable storage regardless."},
             value_type::int64,
             0,
             int64_max},
            {{"index.interval.bytes", "4096",
              "Bytes of data between two entries of the sparse offset index."},
             value_type::int32,
             1,
             int32_max},
            {{"leader.replication.throttled.replicas", "",
              "Replicas whose replication is throttled on the leader side ('*' or "
              "PARTITION:BROKER items). Accepted and without effect: one broker, no "
              "replication."},
             value_type::list,
             0,
             0,
             check_throttled_replicas},
            {{"follower.replication.throttled.replicas", "",
              "Replicas whose replication is throttled on the follower side ('*' or "
              "PARTITION:BROKER items). Accepted and without effect: one broker, no "
              "replication."},
             value_type::list,
             0,
             0,
             check_throttled_replicas},
            // Sluice's default, not Kafka's (Long.MAX_VALUE): a compacted topic ends with
            // the latest record per key within seconds, as CDC and Connect's internal
            // topics expect, without tuning segment.ms (docs/configuration.md).
            // Tiered storage (KIP-405): listed with Kafka's defaults, which keep everything
            // local (-2: as retention.bytes / retention.ms). Sluice has no remote tier.
            {{"local.retention.bytes", "-2",
              "Tiered storage: local bytes kept before segments may be deleted locally "
              "(-2: retention.bytes). No effect: there is no remote tier."},
             value_type::int64,
             -2,
             int64_max},
            {{"local.retention.ms", "-2",
              "Tiered storage: local age kept before segments may be deleted locally (-2: "
              "retention.ms). No effect: there is no remote tier."},
             value_type::int64,
             -2,
             int64_max},
            {{"remote.log.copy.disable", "false",
              "Tiered storage: stop copying segments to the remote tier. No effect."},
             value_type::boolean},
            {{"remote.log.delete.on.disable", "false",
              "Tiered storage: delete remote segments when tiering is turned off. No effect."},
             value_type::boolean},
            {{"remote.storage.enable", "false",
              "Tiered storage for the topic; 'true' is refused, as by a Kafka broker "
              "without tiered storage."},
             value_type::boolean,
             0,
             0,
             check_no_remote_storage},
            {{"max.compaction.lag.ms", "30000",
              "Longest time a record stays uncompacted: the active segment of a compacted "
              "topic rolls once its first record is older, and a partition whose oldest "
              "dirty record is older is cleaned whatever its dirty ratio (30 s by default)."},
             value_type::int64,
             1,
             int64_max},
            // Kafka's message.max.bytes: 1 MiB plus the 12 bytes of a batch's log overhead.
            {{"max.message.bytes", "1048588",
              "Largest record batch the topic accepts, in bytes (after compression)."},
             value_type::int32,
             0,
             int32_max},
            {{"message.downconversion.enable", "true",
              "Kafka 3.x: whether old consumers get records down-converted. Accepted (it is "
              "deprecated but still accepted there) and without effect: no down-conversion."},
             value_type::boolean},
            {{"message.format.version", "3.0-IV1",
              "Kafka 3.x: the record format version of the topic. Accepted (it is "
              "deprecated but still accepted there) and without effect: records are always "
              "stored as v2 batches."},
             value_type::custom,
             0,
             0,
             check_format_version},
            // Kafka 4.0's default (KIP-937): one hour.
            {{"message.timestamp.after.max.ms", "3600000",
              "How far a CreateTime timestamp may lie in the future of the broker's clock "
              "(one hour by default); a batch with a later record is refused "
              "(INVALID_TIMESTAMP)."},
             value_type::int64,
             0,
             int64_max},
            {{"message.timestamp.before.max.ms", "9223372036854775807",
              "How far a CreateTime timestamp may lie in the past of the broker's clock; a "
              "batch with an older record is refused (INVALID_TIMESTAMP)."},
             value_type::int64,
             0,
             int64_max},
            {{"message.timestamp.difference.max.ms", "9223372036854775807",
              "Largest allowed difference between a CreateTime timestamp and the broker's "
              "clock (older Kafka name of the two settings above)."},
             value_type::int64,
             0,
             int64_max},
            {{"message.timestamp.type", "CreateTime",
              "Which timestamp records carry: 'CreateTime' (the producer's) or "
              "'LogAppendTime' (the broker's)."},
             value_type::custom,
             0,
             0,
             check_timestamp_type},
            {{"min.cleanable.dirty.ratio", "0.5",
              "Share of uncompacted (dirty) bytes in the cleanable part of a compacted "
              "partition that triggers compaction."},
             value_type::fraction},
            {{"min.compaction.lag.ms", "0",
              "Shortest time a record stays uncompacted: segments holding newer records "
              "are not cleaned."},
             value_type::int64,
             0,
             int64_max},
            {{"min.insync.replicas", "1",
              "Replicas that must acknowledge an acks=all write. Accepted and stored; a "
              "single broker is its own only replica."},
             value_type::int32,
             1,
             int32_max},
            {{"preallocate", "false", "Preallocate segment files. No effect."},
             value_type::boolean},
            {{"retention.bytes", "-1",
              "Largest size of a partition before old segments are deleted; -1 means no "
              "limit."},
             value_type::int64,
             -1,
             int64_max},
            {{"retention.ms", "604800000",
              "Age after which a segment is deleted (7 days by default); -1 means forever."},
             value_type::int64,
             -1,
             int64_max},
            // Kafka's floor is 14 bytes; ours is 1 KiB so a typo cannot create a segment
            // file per record.
            {{"segment.bytes", "1073741824", "Size at which a segment is rolled, in bytes."},
             value_type::int32,
             1024,
             int32_max},
            {{"segment.index.bytes", "10485760",
              "Largest size of a segment's offset and time indexes, in bytes."},
             value_type::int32,
             4,
             int32_max},
            {{"segment.jitter.ms", "0",
              "Random jitter subtracted from segment.ms so segments do not all roll at "
              "once."},
             value_type::int64,
             0,
             int64_max},
            {{"segment.ms", "604800000",
              "Age at which a segment is rolled even if not full (7 days by default)."},
             value_type::int64,
             1,
             int64_max},
            {{"unclean.leader.election.enable", "false",
              "Allow an out-of-sync replica to become leader. No effect on a single broker."},
             value_type::boolean},
        };
        std::sort(v.begin(), v.end(), [](const config_spec& a, const config_spec& b) {
            return a.def.name < b.def.name;
        });
        return v;
    }();
    return s;
}

const config_spec* find_spec(std::string_view name) {
    const auto& s = specs();
    auto it =
        std::lower_bound(s.begin(), s.end(), name,
                         [](const config_spec& c, std::string_view n) { return c.def.name < n; });
    return it != s.end() && it->def.name == name ? &*it : nullptr;
}

std::string check_integer(const config_spec& spec, std::string_view v) {
    const int64_t type_min = spec.type == value_type::int32 ? std::numeric_limits<int32_t>::min()
                                                            : std::numeric_limits<int64_t>::min();
    const int64_t type_max = spec.type == value_type::int32 ? int32_max : int64_max;
    const char* what = spec.type == value_type::int32 ? "a 32-bit integer" : "a 64-bit integer";
    std::string range = spec.max == type_max ? fmt::format(">= {}", spec.min)
                                             : fmt::format("in [{}, {}]", spec.min, spec.max);
    int64_t n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec == std::errc::invalid_argument || end != v.data() + v.size()) {
        return fmt::format("must be {} {}", what, range);
    }
    if (ec == std::errc::result_out_of_range || n < type_min || n > type_max) {
        return fmt::format("does not fit in {}; must be {}", what, range);
    }
    if (n < spec.min || n > spec.max) return fmt::format("must be {}", range);
    return "";
}

std::string check_value(const config_spec& spec, std::string_view v) {
    switch (spec.type) {
        case value_type::int32:
        case value_type::int64: {
            std::string why = check_integer(spec, v);
            return why.empty() && spec.check ? spec.check(v) : why;  // a hole in the range
        }
        case value_type::boolean: {
            auto lower = [](std::string_view s, std::string_view word) {
                return std::equal(s.begin(), s.end(), word.begin(), word.end(),
                                  [](char a, char b) { return (a | 0x20) == b; });
            };
            // Kafka compares booleans case-insensitively.
            if (!lower(v, "true") && !lower(v, "false")) return "must be 'true' or 'false'";
            return spec.check ? spec.check(v) : "";
        }
        case value_type::fraction: {
            double d = 0;
            auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
            // The negated comparison also rejects NaN.
            if (v.empty() || ec != std::errc{} || end != v.data() + v.size() ||
                !(d >= 0.0 && d <= 1.0)) {
                return "must be a number in [0, 1]";
            }
            return "";
        }
        case value_type::custom:
        case value_type::list:
            return spec.check(v);
    }
    return "unknown value type";
}

// Kafka's broker-level synonyms of each topic config (its ServerTopicConfigSynonyms):
// the broker config a topic's default comes from, and the one Kafka reports as its
// built-in default. Keys absent here have no broker synonym. Kafka lists a built-in
// default only when its first broker name has one: log.retention.ms, log.roll.ms,
// log.roll.jitter.ms and log.flush.interval.ms have none (their defaults come from other
// keys in other units), so Kafka 4.3 answers no default synonym for those four.
struct synonym_row {
    std::string_view topic_name;
    std::string_view broker_name;
    bool lists_default = true;
};
constexpr synonym_row synonym_rows[] = {
    {"cleanup.policy", "log.cleanup.policy"},
    {"compression.gzip.level", "compression.gzip.level"},
    {"compression.lz4.level", "compression.lz4.level"},
    {"compression.type", "compression.type"},
    {"compression.zstd.level", "compression.zstd.level"},
    {"delete.retention.ms", "log.cleaner.delete.retention.ms"},
    {"file.delete.delay.ms", "log.segment.delete.delay.ms"},
    {"flush.messages", "log.flush.interval.messages"},
    {"flush.ms", "log.flush.interval.ms", false},
    {"index.interval.bytes", "log.index.interval.bytes"},
    {"local.retention.bytes", "log.local.retention.bytes"},
    {"local.retention.ms", "log.local.retention.ms"},
    {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"},
    {"max.message.bytes", "message.max.bytes"},
    {"message.downconversion.enable", "log.message.downconversion.enable"},
    {"message.format.version", "log.message.format.version"},
    {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"},
    {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"},
    {"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms"},
    {"message.timestamp.type", "log.message.timestamp.type"},
    {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
    {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
    {"min.insync.replicas", "min.insync.replicas"},
    {"preallocate", "log.preallocate"},
    {"retention.bytes", "log.retention.bytes"},
    {"retention.ms", "log.retention.ms", false},
    {"segment.bytes", "log.segment.bytes"},
    {"segment.index.bytes", "log.index.size.max.bytes"},
    {"segment.jitter.ms", "log.roll.jitter.ms", false},
    {"segment.ms", "log.roll.ms", false},
    {"unclean.leader.election.enable", "unclean.leader.election.enable"},
};

}  // namespace

config_synonyms topic_config_synonyms(std::string_view name) {
    for (const auto& r : synonym_rows) {
        if (r.topic_name != name) continue;
        const config_spec* spec = find_spec(name);
        if (!r.lists_default || !spec) return {r.broker_name, {}, {}};
        return {r.broker_name, r.broker_name, spec->def.default_value};
    }
    return {};
}

std::vector<std::string> config_list_items(std::string_view v, char separator) {
    std::vector<std::string> out;
    size_t start = 0;
    while (start <= v.size()) {
        size_t comma = std::min(v.find(separator, start), v.size());
        std::string_view item = v.substr(start, comma - start);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
        out.emplace_back(item);
        start = comma + 1;
    }
    return out;
}

const std::vector<config_def>& topic_config_defs() {
    static const std::vector<config_def> defs = [] {
        std::vector<config_def> d;
        for (const auto& s : specs()) d.push_back(s.def);
        return d;
    }();
    return defs;
}

const config_def* find_topic_config_def(std::string_view name) {
    const config_spec* s = find_spec(name);
    // topic_config_defs() lists the specs in the same order, so the index carries over.
    return s ? &topic_config_defs()[static_cast<size_t>(s - specs().data())] : nullptr;
}

int8_t topic_config_type(std::string_view name) {
    // Kafka's ConfigEntry.ConfigType numbering.
    constexpr int8_t unknown = 0, boolean = 1, string = 2, int32 = 3, int64 = 5, dbl = 6;
    const config_spec* s = find_spec(name);
    if (!s) return unknown;
    switch (s->type) {
        case value_type::int32: return int32;
        case value_type::int64: return int64;
        case value_type::boolean: return boolean;
        case value_type::fraction: return dbl;
        case value_type::custom: return string;
        case value_type::list: return config_type_list;
    }
    return unknown;
}

result<void> validate_topic_config(std::string_view key, std::string_view value) {
    const config_spec* spec = find_spec(key);
    if (!spec) return {errc::invalid_argument, fmt::format("unknown topic config '{}'", key)};
    std::string why = check_value(*spec, value);
    if (!why.empty()) {
        return {errc::invalid_argument,
                fmt::format("invalid value '{}' for topic config '{}': {}", value, key, why)};
    }
    return {};
}

result<void> validate_topic_configs(const std::map<std::string, std::string>& configs) {
    for (const auto& [k, v] : configs) {
        auto r = validate_topic_config(k, v);
        if (!r) return r;
    }
    return {};
}

result<void> validate_compaction_lags(const std::map<std::string, std::string>& configs,
                                      const std::map<std::string, std::string>& broker_defaults) {
    auto it = configs.find("max.compaction.lag.ms");
    if (it == configs.end()) return {};
    topic_info t;
    t.configs = configs;
    const std::string min = effective_config(t, "min.compaction.lag.ms", broker_defaults);
    int64_t lo = 0;
    int64_t hi = 0;
    std::from_chars(min.data(), min.data() + min.size(), lo);
    std::from_chars(it->second.data(), it->second.data() + it->second.size(), hi);
    if (lo <= hi) return {};
    // Kafka's wording (LogConfig.validateValues), naming both keys.
    return {errc::invalid_argument,
            fmt::format("conflict topic config setting min.compaction.lag.ms ({}) > "
                        "max.compaction.lag.ms ({})",
                        lo, hi)};
}

std::string effective_config(const topic_info& t, std::string_view key,
                             const std::map<std::string, std::string>& broker_defaults) {
    // std::map<std::string, ...> has no heterogeneous lookup without std::less<>.
    std::string k(key);
    if (auto it = t.configs.find(k); it != t.configs.end()) return it->second;
    if (auto it = broker_defaults.find(k); it != broker_defaults.end()) return it->second;
    if (const config_spec* s = find_spec(key)) return std::string(s->def.default_value);
    return "";
}

}  // namespace sluice::catalog

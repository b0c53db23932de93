#pragma once

// Identity policies in the IAM style (docs/security.md):
//   {"Version": "1", "Statement": [{"Effect": "Allow", "Action": ["KafkaRead"],
//                                   "Resource": ["sluice:topic:orders-*"]}]}
// Action and Resource take a string or a list of strings; `*` matches any run of
// characters and `?` one character, anywhere in the pattern.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sluice::security {

enum class action : uint8_t {
    read,
    write,
    create,
    delete_,
    describe,
    describe_configs,
    alter_configs,
    alter,
    cluster_action,
    idempotent_write,  // InitProducerId without a transactional id, on the cluster
};
inline constexpr size_t action_count = 10;
std::string_view action_name(action a);  // "KafkaRead", ...
std::optional<action> parse_action(std::string_view name);

enum class resource_kind : uint8_t { topic, group, cluster, transactional_id };
struct resource {
    resource_kind kind = resource_kind::cluster;
    std::string name;  // empty for the cluster
};
// "sluice:topic:NAME", "sluice:group:NAME", "sluice:cluster",
// "sluice:transactional-id:NAME".
std::string resource_name(const resource& r);

enum class effect : uint8_t { allow, deny };
struct statement {
    effect eff = effect::allow;
    std::vector<std::string> actions;    // names or patterns ("Kafka*", "*")
    std::vector<std::string> resources;  // patterns over resource_name()
};
struct policy {
    std::string name;
    std::string document;  // the JSON text as given
    std::vector<statement> statements;
};

// Validates the document: known keys, Effect Allow/Deny, every Action a known name or
// a pattern matching at least one, every Resource starting "sluice:" (or "*"). The
// error names the statement and field at fault.
result<policy> parse_policy(std::string name, std::string_view json);

bool glob_match(std::string_view pattern, std::string_view text);
// True when one of the patterns matches the text.
bool glob_match_any(const std::vector<std::string>& patterns, std::string_view text);

enum class decision : uint8_t { no_match, allow, deny };
// Deny wins over Allow within and across statements.
decision evaluate(const policy& p, action a, const resource& r);

}  // namespace sluice::security

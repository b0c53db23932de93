#pragma once

// Kafka's ACL bindings as a second view of identity policies (docs/security.md, "Kafka
// ACLs"). A binding (resource pattern, principal, host, operation, permission) is one
// policy statement with one action and one resource; a statement is the bindings it
// grants or denies, when Kafka's patterns can express them. Bindings written through
// Kafka's ACL APIs live in one managed policy per principal, `kafka-acl:User:NAME`,
// attached to NAME; Kafka's wildcard principal User:* is `kafka-acl:User:*`, attached to
// `*`, which the authorizer applies to every principal (security/authorizer.h). Pure
// functions: the catalog and the wire are the callers' business.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "common/result.h"
#include "security/policy.h"

namespace sluice::security::acl {

// Kafka's wire codes (org.apache.kafka.common.resource / acl).
enum class resource_type : int8_t {
    unknown = 0,
    any = 1,
    topic = 2,
    group = 3,
    cluster = 4,
    transactional_id = 5,
    delegation_token = 6,
    user = 7,
};
enum class pattern_type : int8_t { unknown = 0, any = 1, match = 2, literal = 3, prefixed = 4 };
enum class operation : int8_t {
    unknown = 0,
    any = 1,
    all = 2,
    read = 3,
    write = 4,
    create = 5,
    delete_ = 6,
    alter = 7,
    describe = 8,
    cluster_action = 9,
    describe_configs = 10,
    alter_configs = 11,
    idempotent_write = 12,
    create_tokens = 13,
    describe_tokens = 14,
    two_phase_commit = 15,
};
enum class permission : int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

// Kafka's name for the cluster resource.
inline constexpr std::string_view cluster_name = "kafka-cluster";
// Managed policies are named this prefix and the principal: "kafka-acl:User:alice".
inline constexpr std::string_view managed_prefix = "kafka-acl:";

struct binding {
    resource_type type = resource_type::unknown;
    std::string name;
    pattern_type pattern = pattern_type::literal;
    std::string principal;  // "User:NAME"
    std::string host = "*";
    operation op = operation::unknown;
    permission perm = permission::unknown;

    bool operator==(const binding&) const = default;
    // Field by field, in declaration order (written out: clang-tidy misreads a
    // defaulted <=> as a comparison with 0).
    bool operator<(const binding& o) const {
        return std::tie(type, name, pattern, principal, host, op, perm) <
               std::tie(o.type, o.name, o.pattern, o.principal, o.host, o.op, o.perm);
    }
};

// A filter (DescribeAcls, DeleteAcls): null strings and ANY match everything; MATCH
// matches the patterns that would apply to the name (Kafka's ResourcePatternFilter).
struct filter {
    resource_type type = resource_type::any;
    std::optional<std::string> name;
    pattern_type pattern = pattern_type::any;
    std::optional<std::string> principal;
    std::optional<std::string> host;
    operation op = operation::any;
    permission perm = permission::any;
};

// The Kafka operation of a Sluice action (READ for KafkaRead, ...).
operation operation_of(action a);

// The statement a binding becomes, and the principal's user name, or why Kafka's
// binding cannot be expressed as a policy statement (errc::invalid_argument).
struct mapped {
    std::string user;
    statement st;
};
result<mapped> to_statement(const binding& b);

// The bindings a statement grants or denies to `user`; parts of it that Kafka's patterns
// cannot express (a resource pattern such as "sluice:topic:*-audit") give none.
std::vector<binding> to_bindings(const statement& st, const std::string& user);

// Every binding of a policy's statements for each user it is attached to, with where it
// comes from: DescribeAcls and the SQL table system.acls read policies through this.
struct placed_binding {
    binding b;
    size_t statement = 0;      // its index in the policy
    size_t from_statement = 1;  // how many bindings that statement gives the user
};
std::vector<placed_binding> bindings_of(const policy& p, const std::vector<std::string>& users);

// Why a filter is malformed (an UNKNOWN or out-of-range element), or nullopt.
std::optional<std::string> filter_error(const filter& f);
bool matches(const filter& f, const binding& b);

std::string managed_policy_name(const std::string& user);
// The user whose managed policy `policy_name` is, or nullopt when it is no managed name.
std::optional<std::string> managed_user(std::string_view policy_name);
// A policy document holding exactly these statements, in order (Sid dropped).
std::string policy_document(const std::vector<statement>& statements);

// Kafka's names of the codes, for messages: "TOPIC", "PREFIXED", "READ", "ALLOW".
std::string_view name_of(resource_type t);
std::string_view name_of(pattern_type p);
std::string_view name_of(operation o);
std::string_view name_of(permission p);
// As Kafka prints a binding: "TOPIC:LITERAL:orders (principal=User:alice, host=*, ...)".
std::string to_string(const binding& b);

}  // namespace sluice::security::acl

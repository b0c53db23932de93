#include "security/acl.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <set>

namespace sluice::security::acl {
namespace {

// Kafka's operation for each action, in the order of the action enum.
constexpr std::array<operation, action_count> operation_by_action = {
    operation::read,          operation::write,           operation::create,
    operation::delete_,       operation::describe,        operation::describe_configs,
    operation::alter_configs, operation::alter,           operation::cluster_action,
    operation::idempotent_write,
};

constexpr std::array<std::string_view, 8> resource_type_names = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
constexpr std::array<std::string_view, 5> pattern_type_names = {"UNKNOWN", "ANY", "MATCH",
                                                                 "LITERAL", "PREFIXED"};
constexpr std::array<std::string_view, 16> operation_names = {
    "UNKNOWN",          "ANY",           "ALL",    "READ",           "WRITE",
    "CREATE",           "DELETE",        "ALTER",  "DESCRIBE",       "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE", "CREATE_TOKENS",
    "DESCRIBE_TOKENS",  "TWO_PHASE_COMMIT"};
constexpr std::array<std::string_view, 4> permission_names = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

template <size_t N>
std::string_view code_name(const std::array<std::string_view, N>& names, int8_t v) {
    const auto i = static_cast<size_t>(static_cast<uint8_t>(v));
    return v >= 0 && i < N ? names[i] : "INVALID";
}
template <size_t N>
bool known(const std::array<std::string_view, N>& /*names*/, int8_t v) {
    return v > 0 && static_cast<size_t>(v) < N;  // 0 is UNKNOWN everywhere
}

constexpr std::string_view user_prefix = "User:";

bool has_wildcard(std::string_view s) {
    return s.find_first_of("*?") != s.npos;
}

error refuse(std::string what) {
    return {errc::invalid_argument, std::move(what)};
}

// The kinds with names, and their policy resource prefixes.
struct named_kind {
    resource_type type;
    std::string_view prefix;
    std::string_view noun;
};
constexpr std::array<named_kind, 3> named_kinds = {{
    {resource_type::topic, "sluice:topic:", "topic"},
    {resource_type::group, "sluice:group:", "group"},
    {resource_type::transactional_id, "sluice:transactional-id:", "transactional id"},
}};

// The resource pattern of a binding, checked; "sluice:topic:orders-*" for PREFIXED orders-.
result<std::string> resource_of(const binding& b) {
    if (b.name.empty()) return refuse("the resource name must not be empty");
    if (b.type == resource_type::cluster) {
        if (b.name != cluster_name)
            return refuse(fmt::format("the only valid name for the CLUSTER resource is {}",
                                      cluster_name));
        if (b.pattern != pattern_type::literal)
            return refuse("the CLUSTER resource takes a LITERAL pattern");
        return std::string("sluice:cluster");
    }
    const auto& kind = *std::find_if(named_kinds.begin(), named_kinds.end(),
                                     [&](const auto& k) { return k.type == b.type; });
    std::string prefix(kind.prefix);
    if (b.pattern == pattern_type::literal && b.name == "*") return prefix + "*";
    if (has_wildcard(b.name))
        return refuse(fmt::format(
            "the resource name '{}' contains '*' or '?', which Sluice policies read as "
            "wildcards; only the whole name \"*\" (LITERAL) means every {}",
            b.name, kind.noun));
    return b.pattern == pattern_type::prefixed ? prefix + b.name + "*" : prefix + b.name;
}

struct resource_pattern {
    resource_type type;
    std::string name;
    pattern_type pattern;
};

// What Kafka's patterns can say of one policy resource pattern: nothing for patterns such
// as "sluice:topic:*-audit" or "sluice:group:a?".
std::vector<resource_pattern> patterns_of(std::string_view r) {
    if (r == "*" || r == "sluice:*")
        return {{resource_type::topic, "*", pattern_type::literal},
                {resource_type::group, "*", pattern_type::literal},
                {resource_type::transactional_id, "*", pattern_type::literal},
                {resource_type::cluster, std::string(cluster_name), pattern_type::literal}};
    if (r == "sluice:cluster")
        return {{resource_type::cluster, std::string(cluster_name), pattern_type::literal}};
    for (const auto& k : named_kinds) {
        if (!r.starts_with(k.prefix)) continue;
        std::string_view rest = r.substr(k.prefix.size());
        if (rest == "*" || !has_wildcard(rest))
            return {{k.type, std::string(rest), pattern_type::literal}};
        std::string_view stem = rest.substr(0, rest.size() - 1);
        if (rest.back() == '*' && !stem.empty() && !has_wildcard(stem))
            return {{k.type, std::string(stem), pattern_type::prefixed}};
        return {};
    }
    return {};
}

// The operations an Action pattern names: ALL when it matches every action.
std::set<operation> operations_of(const std::vector<std::string>& actions) {
    std::set<operation> out;
    for (const auto& a : actions) {
        std::vector<operation> ops;
        for (size_t i = 0; i < action_count; ++i)
            if (glob_match(a, action_name(static_cast<action>(i))))
                ops.push_back(operation_by_action[i]);
        if (ops.size() == action_count)
            out.insert(operation::all);
        else
            out.insert(ops.begin(), ops.end());
    }
    return out;
}

void append_json_string(std::string& out, std::string_view s) {
    out += '"';
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
        } else {
            out += c;
        }
    }
    out += '"';
}

void append_string_or_list(std::string& out, const std::vector<std::string>& v) {
    if (v.size() == 1) {
        append_json_string(out, v[0]);
        return;
    }
    out += '[';
    for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ", ";
        append_json_string(out, v[i]);
    }
    out += ']';
}

}  // namespace

operation operation_of(action a) {
    return operation_by_action.at(static_cast<size_t>(a));
}

std::string_view name_of(resource_type t) {
    return code_name(resource_type_names, static_cast<int8_t>(t));
}
std::string_view name_of(pattern_type p) {
    return code_name(pattern_type_names, static_cast<int8_t>(p));
}
std::string_view name_of(operation o) {
    return code_name(operation_names, static_cast<int8_t>(o));
}
std::string_view name_of(permission p) {
    return code_name(permission_names, static_cast<int8_t>(p));
}

std::string to_string(const binding& b) {
    return fmt::format("{}:{}:{} (principal={}, host={}, operation={}, permissionType={})",
                       name_of(b.type), name_of(b.pattern), b.name, b.principal, b.host,
                       name_of(b.op), name_of(b.perm));
}

result<mapped> to_statement(const binding& b) {
    switch (b.type) {
        case resource_type::topic:
        case resource_type::group:
        case resource_type::cluster:
        case resource_type::transactional_id:
            break;
        case resource_type::delegation_token:
        case resource_type::user:
            return refuse(fmt::format("ACLs on {} resources cannot be expressed as Sluice "
                                      "policies, which cover topics, groups, transactional "
                                      "ids and the cluster",
                                      name_of(b.type)));
        default:
            return refuse(fmt::format("invalid resource type {} for an ACL", name_of(b.type)));
    }
    if (b.pattern == pattern_type::match || b.pattern == pattern_type::any)
        return refuse(fmt::format("pattern type {} is for filters; an ACL's pattern type is "
                                  "LITERAL or PREFIXED",
                                  name_of(b.pattern)));
    if (b.pattern != pattern_type::literal && b.pattern != pattern_type::prefixed)
        return refuse(fmt::format("invalid pattern type {} for an ACL", name_of(b.pattern)));
    std::string act;
    if (b.op == operation::all) {
        act = "Kafka*";
    } else {
        auto it = std::find(operation_by_action.begin(), operation_by_action.end(), b.op);
        if (it != operation_by_action.end())
            act = action_name(static_cast<action>(it - operation_by_action.begin()));
        else if (known(operation_names, static_cast<int8_t>(b.op)) && b.op != operation::any)
            return refuse(fmt::format("operation {} has no Sluice action (Sluice has no "
                                      "delegation tokens or two-phase commit)",
                                      name_of(b.op)));
        else
            return refuse(fmt::format("invalid operation {} for an ACL", name_of(b.op)));
    }
    if (b.perm != permission::allow && b.perm != permission::deny)
        return refuse(fmt::format("invalid permission type {} for an ACL", name_of(b.perm)));
    if (b.host != "*")
        return refuse(fmt::format("host '{}' cannot be expressed: Sluice policies do not "
                                  "restrict hosts, so an ACL's host must be '*'",
                                  b.host));
    if (!b.principal.starts_with(user_prefix))
        return refuse(fmt::format("principal '{}' cannot be expressed: Sluice policies attach "
                                  "to users, written User:NAME",
                                  b.principal));
    std::string user = b.principal.substr(user_prefix.size());
    if (user.empty()) return refuse("the principal 'User:' has an empty user name");
    // User:* (every principal) is the policy kafka-acl:User:*, attached to every_user.
    auto res = resource_of(b);
    if (!res) return res.err();
    statement st;
    st.eff = b.perm == permission::allow ? effect::allow : effect::deny;
    st.actions = {std::move(act)};
    st.resources = {std::move(*res)};
    return mapped{std::move(user), std::move(st)};
}

std::vector<binding> to_bindings(const statement& st, const std::string& user) {
    std::vector<binding> out;
    auto ops = operations_of(st.actions);
    for (const auto& r : st.resources) {
        for (auto& p : patterns_of(r)) {
            for (auto op : ops) {
                out.push_back({p.type, p.name, p.pattern, std::string(user_prefix) + user, "*", op,
                               st.eff == effect::allow ? permission::allow : permission::deny});
            }
        }
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

std::vector<placed_binding> bindings_of(const policy& p, const std::vector<std::string>& users) {
    std::vector<placed_binding> out;
    for (size_t i = 0; i < p.statements.size(); ++i) {
        for (const auto& user : users) {
            auto bs = to_bindings(p.statements[i], user);
            for (auto& b : bs) out.push_back({std::move(b), i, bs.size()});
        }
    }
    return out;
}

std::optional<std::string> filter_error(const filter& f) {
    if (!known(resource_type_names, static_cast<int8_t>(f.type)))
        return fmt::format("the filter's resource type is {}", name_of(f.type));
    if (!known(pattern_type_names, static_cast<int8_t>(f.pattern)))
        return fmt::format("the filter's pattern type is {}", name_of(f.pattern));
    if (!known(operation_names, static_cast<int8_t>(f.op)))
        return fmt::format("the filter's operation is {}", name_of(f.op));
    if (!known(permission_names, static_cast<int8_t>(f.perm)))
        return fmt::format("the filter's permission type is {}", name_of(f.perm));
    return std::nullopt;
}

// Kafka's ResourcePatternFilter and AccessControlEntryFilter.
bool matches(const filter& f, const binding& b) {
    if (f.type != resource_type::any && f.type != b.type) return false;
    if (f.pattern != pattern_type::any && f.pattern != pattern_type::match &&
        f.pattern != b.pattern)
        return false;
    if (f.name) {
        if (f.pattern == pattern_type::any || f.pattern == b.pattern) {
            if (*f.name != b.name) return false;
        } else if (b.pattern == pattern_type::literal) {  // MATCH
            if (*f.name != b.name && b.name != "*") return false;
        } else if (!f.name->starts_with(b.name)) {  // MATCH against PREFIXED
            return false;
        }
    }
    if (f.principal && *f.principal != b.principal) return false;
    if (f.host && *f.host != b.host) return false;
    if (f.op != operation::any && f.op != b.op) return false;
    return f.perm == permission::any || f.perm == b.perm;
}

std::string managed_policy_name(const std::string& user) {
    return fmt::format("{}{}{}", managed_prefix, user_prefix, user);
}

std::optional<std::string> managed_user(std::string_view policy_name) {
    std::string head = fmt::format("{}{}", managed_prefix, user_prefix);
    if (!policy_name.starts_with(head) || policy_name.size() == head.size()) return std::nullopt;
    return std::string(policy_name.substr(head.size()));
}

std::string policy_document(const std::vector<statement>& statements) {
    std::string out = "{\"Version\": \"1\", \"Statement\": [";
    for (size_t i = 0; i < statements.size(); ++i) {
        const auto& st = statements[i];
        out += i ? ",\n  " : "\n  ";
        out += st.eff == effect::allow ? "{\"Effect\": \"Allow\", \"Action\": "
                                       : "{\"Effect\": \"Deny\", \"Action\": ";
        append_string_or_list(out, st.actions);
        out += ", \"Resource\": ";
        append_string_or_list(out, st.resources);
        out += '}';
    }
    return out + "\n]}\n";
}

}  // namespace sluice::security::acl

#include "security/policy.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <set>
#include <utility>

namespace sluice::security {

namespace {

// Indexed by action's value; the order of the enum.
constexpr std::array<std::string_view, action_count> action_names = {
    "KafkaRead",         "KafkaWrite",    "KafkaCreate",
    "KafkaDelete",       "KafkaDescribe", "KafkaDescribeConfigs",
    "KafkaAlterConfigs", "KafkaAlter",    "KafkaClusterAction",
    "KafkaIdempotentWrite",
};

constexpr std::string_view resource_prefix = "sluice:";

error bad(const std::string& where, const std::string& what) {
    return {errc::invalid_argument, where.empty() ? what : where + ": " + what};
}

bool has_wildcard(std::string_view s) {
    return s.find_first_of("*?") != s.npos;
}

std::string list_keys(const std::vector<std::string_view>& keys) {
    std::string out;
    for (auto k : keys) out += fmt::format("{}'{}'", out.empty() ? "" : ", ", k);
    return out;
}

// A string, or a non-empty list of strings: each value with the place it came from.
using placed = std::vector<std::pair<std::string, std::string>>;
result<placed> string_or_list(simdjson::dom::element v, const std::string& where) {
    placed out;
    std::string_view s;
    if (!v.get_string().get(s)) {
        out.emplace_back(where, std::string(s));
        return out;
    }
    simdjson::dom::array arr;
    if (v.get_array().get(arr)) return bad(where, "must be a string or a list of strings");
    size_t i = 0;
    for (auto item : arr) {
        std::string at = fmt::format("{}[{}]", where, i++);
        if (item.get_string().get(s)) return bad(at, "must be a string");
        out.emplace_back(std::move(at), std::string(s));
    }
    if (out.empty()) return bad(where, "must not be an empty list");
    return out;
}

result<void> check_action(const std::string& where, std::string_view a) {
    if (!has_wildcard(a)) {
        if (parse_action(a)) return {};
        return bad(where, fmt::format("unknown action '{}'", a));
    }
    for (auto name : action_names)
        if (glob_match(a, name)) return {};
    return bad(where, fmt::format("pattern '{}' matches no action", a));
}

// "*", or "sluice:" then a kind: "cluster", "topic:<pattern>", "group:<pattern>",
// "transactional-id:<pattern>". A kind
// spelled with a wildcard ("sluice:*") is taken as is; a misspelt literal kind is an
// error, since it would silently never match.
result<void> check_resource(const std::string& where, std::string_view r) {
    if (r == "*") return {};
    if (!r.starts_with(resource_prefix))
        return bad(where, fmt::format("resource '{}' must be \"*\" or start with \"sluice:\"", r));
    std::string_view rest = r.substr(resource_prefix.size());
    std::string_view kind = rest.substr(0, rest.find(':'));
    if (has_wildcard(kind)) return {};
    if (kind == "cluster") {
        if (rest == "cluster") return {};
        return bad(where, fmt::format("resource '{}': the cluster is \"sluice:cluster\"", r));
    }
    if (kind == "topic" || kind == "group" || kind == "transactional-id") {
        if (rest.size() > kind.size() + 1) return {};
        return bad(where, fmt::format("resource '{}' needs a name or pattern after "
                                      "\"sluice:{}:\"",
                                      r, kind));
    }
    return bad(where, fmt::format("resource '{}': unknown kind '{}' (topic, group, "
                                  "transactional-id or cluster)",
                                  r, kind));
}

result<statement> parse_statement(simdjson::dom::element v, const std::string& where) {
    simdjson::dom::object obj;
    if (v.get_object().get(obj)) return bad(where, "a statement must be an object");
    statement st;
    std::set<std::string_view> seen;
    std::vector<std::string_view> unknown;
    bool has_effect = false, has_action = false, has_resource = false;
    for (auto [key, value] : obj) {
        if (!seen.insert(key).second) return bad(where, fmt::format("duplicate key '{}'", key));
        std::string at = fmt::format("{}.{}", where, key);
        std::string_view s;
        if (key == "Sid") {
            if (value.get_string().get(s)) return bad(at, "must be a string");
        } else if (key == "Effect") {
            if (value.get_string().get(s) || (s != "Allow" && s != "Deny"))
                return bad(at, "must be \"Allow\" or \"Deny\"");
            st.eff = s == "Allow" ? effect::allow : effect::deny;
            has_effect = true;
        } else if (key == "Action") {
            auto list = string_or_list(value, at);
            if (!list) return list.err();
            for (auto& [place, name] : *list) {
                if (auto ok = check_action(place, name); !ok) return ok.err();
                st.actions.push_back(std::move(name));
            }
            has_action = true;
        } else if (key == "Resource") {
            auto list = string_or_list(value, at);
            if (!list) return list.err();
            for (auto& [place, name] : *list) {
                if (auto ok = check_resource(place, name); !ok) return ok.err();
                st.resources.push_back(std::move(name));
            }
            has_resource = true;
        } else {
            unknown.push_back(key);
        }
    }
    if (!unknown.empty())
        return bad(where, fmt::format("unknown key{} {} (expected Sid, Effect, Action, Resource)",
                                      unknown.size() > 1 ? "s" : "", list_keys(unknown)));
    if (!has_effect) return bad(where, "missing \"Effect\"");
    if (!has_action) return bad(where, "missing \"Action\"");
    if (!has_resource) return bad(where, "missing \"Resource\"");
    return st;
}

}  // namespace

std::string_view action_name(action a) {
    return action_names.at(static_cast<size_t>(a));
}

std::optional<action> parse_action(std::string_view name) {
    for (size_t i = 0; i < action_names.size(); ++i)
        if (action_names[i] == name) return static_cast<action>(i);
    return std::nullopt;
}

std::string resource_name(const resource& r) {
    switch (r.kind) {
        case resource_kind::topic:
            return "sluice:topic:" + r.name;
        case resource_kind::group:
            return "sluice:group:" + r.name;
        case resource_kind::transactional_id:
            return "sluice:transactional-id:" + r.name;
        case resource_kind::cluster:
            break;
    }
    return "sluice:cluster";
}

result<policy> parse_policy(std::string name, std::string_view json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto e = parser.parse(json.data(), json.size()).get(doc))
        return bad("", fmt::format("the policy is not valid JSON: {}", simdjson::error_message(e)));
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) return bad("", "the policy must be a JSON object");

    policy p;
    p.name = std::move(name);
    p.document = std::string(json);
    std::set<std::string_view> seen;
    std::vector<std::string_view> unknown;
    bool has_statement = false;
    for (auto [key, value] : obj) {
        if (!seen.insert(key).second) return bad("", fmt::format("duplicate key '{}'", key));
        if (key == "Version") {
            std::string_view s;
            if (value.get_string().get(s)) return bad("Version", "must be a string");
        } else if (key == "Statement") {
            has_statement = true;
            simdjson::dom::array arr;
            if (value.get_array().get(arr)) {  // one statement, not in a list
                auto st = parse_statement(value, "Statement");
                if (!st) return st.err();
                p.statements.push_back(std::move(*st));
                continue;
            }
            size_t i = 0;
            for (auto item : arr) {
                auto st = parse_statement(item, fmt::format("Statement[{}]", i++));
                if (!st) return st.err();
                p.statements.push_back(std::move(*st));
            }
            if (p.statements.empty()) return bad("Statement", "must not be an empty list");
        } else {
            unknown.push_back(key);
        }
    }
    if (!unknown.empty())
        return bad("", fmt::format("unknown key{} {} (expected Version, Statement)",
                                   unknown.size() > 1 ? "s" : "", list_keys(unknown)));
    if (!has_statement) return bad("", "missing \"Statement\"");
    return p;
}

// Greedy match that remembers only the last '*': on a mismatch, that star absorbs one
// more character and matching resumes after it. Earlier stars never need revisiting, so
// the cost is O(|pattern| * |text|) at worst, whatever the pattern. Matches bytes: '?'
// is one byte, not one UTF-8 character (topic names are ASCII).
bool glob_match(std::string_view pattern, std::string_view text) {
    size_t p = 0, t = 0;
    size_t star = std::string_view::npos, resume = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = t;
        } else if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
            ++p;
            ++t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool glob_match_any(const std::vector<std::string>& patterns, std::string_view text) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return glob_match(p, text); });
}

decision evaluate(const policy& p, action a, const resource& r) {
    const std::string name = resource_name(r);
    const std::string_view act = action_name(a);
    decision d = decision::no_match;
    for (const auto& st : p.statements) {
        if (!glob_match_any(st.actions, act) || !glob_match_any(st.resources, name)) continue;
        if (st.eff == effect::deny) return decision::deny;
        d = decision::allow;
    }
    return d;
}

}  // namespace sluice::security

#include "security/authorizer.h"

#include <algorithm>
#include <array>
#include <span>
#include <vector>

namespace sluice::security {

namespace {

// The actions whose Allow also grants `a` (itself first), as Kafka's ACL authorizer
// implies Describe from Read/Write/Delete/Alter and DescribeConfigs from AlterConfigs.
// Deny, as in Kafka, applies only to the action asked for.
std::span<const action> granting(const action& a) {
    static constexpr std::array<action, 5> describe = {
        action::describe, action::read, action::write, action::delete_, action::alter};
    static constexpr std::array<action, 2> describe_configs = {action::describe_configs,
                                                               action::alter_configs};
    if (a == action::describe) return describe;
    if (a == action::describe_configs) return describe_configs;
    return {&a, 1};
}

}  // namespace

void authorizer::replace(std::map<std::string, std::vector<policy>> by_user) {
    auto next = std::make_shared<const snapshot>(snapshot{std::move(by_user)});
    std::lock_guard lock(_mu);
    _snap.swap(next);
    // The previous snapshot is released here, after the swap; checks holding it keep it.
}

std::shared_ptr<const authorizer::snapshot> authorizer::current() const {
    std::lock_guard lock(_mu);
    return _snap;
}

bool authorizer::allowed(const principal& p, action a, const resource& r) const {
    // Only the pointer copy happens under the mutex; matching runs on the snapshot.
    auto snap = current();
    switch (decide(*snap, p.user, a, r)) {
        case decision::allow:
            return true;
        case decision::deny:
            return false;
        case decision::no_match:
            break;
    }
    return _mode == authz_mode::permissive;
}

decision authorizer::decide(const snapshot& s, const std::string& user, action a,
                            const resource& r) const {
    // The user's own policies, and those attached to every user (Kafka's User:*).
    std::vector<const std::vector<policy>*> sets;
    for (std::string_view key : {std::string_view(user), every_user})
        if (auto it = s.by_user.find(std::string(key)); it != s.by_user.end())
            sets.push_back(&it->second);
    if (sets.empty()) return decision::no_match;
    const std::string name = resource_name(r);
    const std::string_view asked = action_name(a);
    auto grants = granting(a);
    bool allow = false;
    for (const auto* policies : sets) {
        for (const policy& pol : *policies) {
            for (const statement& st : pol.statements) {
                if (st.eff == effect::deny) {
                    if (glob_match_any(st.actions, asked) && glob_match_any(st.resources, name))
                        return decision::deny;
                } else if (!allow) {
                    bool acts = std::any_of(grants.begin(), grants.end(), [&](action g) {
                        return glob_match_any(st.actions, action_name(g));
                    });
                    allow = acts && glob_match_any(st.resources, name);
                }
            }
        }
    }
    return allow ? decision::allow : decision::no_match;
}

}  // namespace sluice::security

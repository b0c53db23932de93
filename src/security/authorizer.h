#pragma once

// Decides whether a principal may perform an action on a resource, from the policies
// attached to it. Deny wins over Allow; Read, Write, Delete and Alter imply Describe,
// and AlterConfigs implies DescribeConfigs (as Kafka's ACLs do). Without a matching
// statement the mode decides: `required` denies, `permissive` allows.

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "security/policy.h"

namespace sluice::security {

enum class authz_mode : uint8_t { required, permissive };

// A policy attached to this name applies to every principal, ANONYMOUS included:
// Kafka's wildcard principal User:*, which no user can be named (user names are checked).
inline constexpr std::string_view every_user = "*";

// Who is asking. Unauthenticated connections are the user "ANONYMOUS" (Kafka's name).
struct principal {
    std::string user = "ANONYMOUS";
    bool authenticated = false;
    std::string to_string() const { return "User:" + user; }
};

class authorizer {
  public:
    explicit authorizer(authz_mode mode) : _mode(mode) {}

    authz_mode mode() const { return _mode; }
    // Replaces every attachment at once (user -> the policies attached to that user);
    // checks already running finish against the previous set. Thread-safe.
    void replace(std::map<std::string, std::vector<policy>> by_user);

    bool allowed(const principal& p, action a, const resource& r) const;

  private:
    struct snapshot {
        std::map<std::string, std::vector<policy>> by_user;
    };
    std::shared_ptr<const snapshot> current() const;
    decision decide(const snapshot& s, const std::string& user, action a, const resource& r) const;

    authz_mode _mode;
    mutable std::mutex _mu;
    std::shared_ptr<const snapshot> _snap = std::make_shared<snapshot>();  // guarded by _mu
};

}  // namespace sluice::security

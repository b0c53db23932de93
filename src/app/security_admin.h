#pragma once

// Users and identity policies: the operations behind `sluice user` and `sluice policy`
// (docs/security.md), on a security store (catalog/security_store.h). The offline commands run them
// on a stopped broker's catalog; a running broker serves them over HTTP (/v1/users, /v1/policies).

#include <cstdint>
#include <string>
#include <vector>

#include "catalog/security_store.h"
#include "common/result.h"
#include "security/credential.h"

namespace sluice::sql {
class http_server;
}

namespace sluice::app {

struct user_change {
    std::string name;
    std::string password;
    // Empty: both for a new user; for a password change, the mechanisms the user has.
    // A password change sets only these mechanisms' credentials; the others are kept.
    std::vector<security::scram_mechanism> mechanisms;
    int32_t iterations = security::default_iterations;
};

// errc::already_exists for a user with credentials, errc::invalid_argument for an empty
// name or password or iterations out of range.
result<void> add_user(catalog::security_store& cat, const user_change& u);
// errc::not_found for an unknown user.
result<void> change_password(catalog::security_store& cat, const user_change& u);
// Removes the credentials and detaches the user's policies. errc::not_found.
result<void> remove_user(catalog::security_store& cat, const std::string& name);
// {"users":[{"name":"alice","mechanisms":["SCRAM-SHA-256",...],"credentials":
// [{"mechanism":"SCRAM-SHA-256","iterations":4096},...],"iterations":4096}]}; the last
// "iterations" is the first credential's (kept for older readers).
std::string users_json(const catalog::security_store& cat);

// Attaches a policy to a user that exists (has credentials), to ANONYMOUS, or with
// `external` to any principal name (a certificate's common name). errc::not_found for
// another name.
result<void> attach_policy(catalog::security_store& cat, const std::string& policy,
                           const std::string& user, bool external);

// Validates the document (security::parse_policy) before storing it.
result<void> put_policy(catalog::security_store& cat, const std::string& name,
                        const std::string& document);
// {"policies":[{"name":...,"users":[...],"document":{...}}]}
std::string policies_json(const catalog::security_store& cat);

// The HTTP routes (KafkaAlter on sluice:cluster to change, KafkaDescribe to read).
void add_security_routes(sql::http_server& server, catalog::security_store& cat);

}  // namespace sluice::app

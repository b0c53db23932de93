#include "sql/password_check.h"

#include <algorithm>

namespace sluice::sql {

std::string check_password(const security::credential_source& source, const std::string& user,
                           std::string_view password) {
    const auto creds = source.credentials(user);
    if (creds.empty()) {
        // Derive keys anyway: answering an unknown user faster would name the known ones.
        static const security::scram_credential decoy = security::make_credential(
            security::scram_mechanism::sha256, security::random_bytes(16));
        (void)security::verify_password(decoy, password);
        return "no such user";
    }
    const bool ok = std::any_of(creds.begin(), creds.end(), [&](const auto& c) {
        return security::verify_password(c, password);
    });
    return ok ? std::string() : "wrong password";
}

}  // namespace sluice::sql

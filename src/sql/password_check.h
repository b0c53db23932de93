#pragma once

// Password logins of the SQL endpoints (PostgreSQL's cleartext password over TLS, HTTP
// Basic over HTTPS): the password is checked against the user's stored SCRAM
// credentials, as a Kafka SASL/PLAIN login is, so no password is ever stored.

#include <string>
#include <string_view>

#include "security/credential.h"

namespace sluice::sql {

// Empty when `password` derives one of `user`'s credentials; otherwise why not, for the
// log (clients get one message whatever the reason, so that they cannot tell an unknown
// user from a wrong password). An unknown user costs the same key derivation as a known
// one, for the same reason.
std::string check_password(const security::credential_source& source, const std::string& user,
                           std::string_view password);

}  // namespace sluice::sql

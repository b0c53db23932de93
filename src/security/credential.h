#pragma once

// Salted SCRAM credentials (RFC 5802, RFC 7677): what the broker keeps instead of a
// password. PLAIN logins are verified against them too, so no password is ever stored.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/base64.h"

namespace sluice::security {

enum class scram_mechanism : int8_t { sha256 = 1, sha512 = 2 };  // Kafka's ScramMechanism ids

// "SCRAM-SHA-256" / "SCRAM-SHA-512".
std::string_view mechanism_name(scram_mechanism m);
std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name);
// Kafka's bounds on iterations (AlterUserScramCredentials refuses others).
constexpr int32_t min_iterations = 4096;
constexpr int32_t max_iterations = 16384;
constexpr int32_t default_iterations = 4096;

struct scram_credential {
    scram_mechanism mechanism = scram_mechanism::sha256;
    std::string salt;  // raw bytes
    int32_t iterations = default_iterations;
    std::string stored_key;  // H(HMAC(SaltedPassword, "Client Key")), raw
    std::string server_key;  // HMAC(SaltedPassword, "Server Key"), raw
};

// A fresh random salt (32 bytes) and the keys derived from the password.
scram_credential make_credential(scram_mechanism m, std::string_view password,
                                 int32_t iterations = default_iterations);
// From a salted password computed by the client (AlterUserScramCredentials sends one).
scram_credential credential_from_salted(scram_mechanism m, std::string salt,
                                        std::string_view salted_password, int32_t iterations);
// Whether the password derives this credential's keys; compares in constant time.
bool verify_password(const scram_credential& c, std::string_view password);

// Building blocks of RFC 5802, shared by the exchanges and their tests. Raw bytes in and
// out; an OpenSSL failure (out of memory, no entropy) throws std::runtime_error.
std::string scram_hash(scram_mechanism m, std::string_view data);  // H()
std::string scram_hmac(scram_mechanism m, std::string_view key, std::string_view data);
std::string scram_salted_password(scram_mechanism m, std::string_view password,
                                  std::string_view salt, int32_t iterations);  // Hi()
std::string random_bytes(size_t n);
// Length and contents compared without early exit.
bool constant_time_equal(std::string_view a, std::string_view b);
using ::sluice::base64_decode;
using ::sluice::base64_encode;

// Where the exchanges find a user's credentials (the catalog, through the broker).
// Thread-safe implementations; an unknown user has none.
class credential_source {
  public:
    virtual ~credential_source() = default;
    virtual std::vector<scram_credential> credentials(const std::string& user) const = 0;
};

}  // namespace sluice::security

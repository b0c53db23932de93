#include "security/credential.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <array>
#include <climits>
#include <stdexcept>

namespace sluice::security {

namespace {

// RFC 7677 recommends at least 16 bytes of salt; Kafka's ScramFormatter uses 32.
constexpr size_t salt_bytes = 32;

const EVP_MD* digest_of(scram_mechanism m) {
    return m == scram_mechanism::sha512 ? EVP_sha512() : EVP_sha256();
}

[[noreturn]] void openssl_failed(const char* what) {
    throw std::runtime_error(std::string("OpenSSL ") + what + " failed");
}

int checked_int(size_t n, const char* what) {
    if (n > static_cast<size_t>(INT_MAX)) throw std::length_error(what);
    return static_cast<int>(n);
}

// Everything derived from a salted password (RFC 5802 section 3).
scram_credential derive(scram_mechanism m, std::string salt, std::string_view salted,
                        int32_t iterations) {
    scram_credential c;
    c.mechanism = m;
    c.salt = std::move(salt);
    c.iterations = iterations;
    c.stored_key = scram_hash(m, scram_hmac(m, salted, "Client Key"));
    c.server_key = scram_hmac(m, salted, "Server Key");
    return c;
}

}  // namespace

std::string_view mechanism_name(scram_mechanism m) {
    return m == scram_mechanism::sha512 ? "SCRAM-SHA-512" : "SCRAM-SHA-256";
}

std::optional<scram_mechanism> parse_scram_mechanism(std::string_view name) {
    if (name == "SCRAM-SHA-256") return scram_mechanism::sha256;
    if (name == "SCRAM-SHA-512") return scram_mechanism::sha512;
    return std::nullopt;
}

std::string scram_hash(scram_mechanism m, std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned int len = 0;
    if (EVP_Digest(data.data(), data.size(), out.data(), &len, digest_of(m), nullptr) != 1)
        openssl_failed("EVP_Digest");
    return {reinterpret_cast<const char*>(out.data()), len};
}

std::string scram_hmac(scram_mechanism m, std::string_view key, std::string_view data) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> out{};
    unsigned int len = 0;
    if (HMAC(digest_of(m), key.data(), checked_int(key.size(), "HMAC key too long"),
             reinterpret_cast<const unsigned char*>(data.data()), data.size(), out.data(),
             &len) == nullptr)
        openssl_failed("HMAC");
    return {reinterpret_cast<const char*>(out.data()), len};
}

// Passwords are taken as raw UTF-8 bytes, without SASLprep (RFC 4013): Kafka's Java
// client does the same, so a non-ASCII password hashes alike on both sides.
std::string scram_salted_password(scram_mechanism m, std::string_view password,
                                  std::string_view salt, int32_t iterations) {
    if (iterations < 1) throw std::invalid_argument("SCRAM iterations must be positive");
    const EVP_MD* md = digest_of(m);
    std::string out(static_cast<size_t>(EVP_MD_get_size(md)), '\0');
    if (PKCS5_PBKDF2_HMAC(password.data(), checked_int(password.size(), "password too long"),
                          reinterpret_cast<const unsigned char*>(salt.data()),
                          checked_int(salt.size(), "salt too long"), iterations, md,
                          checked_int(out.size(), "digest"),
                          reinterpret_cast<unsigned char*>(out.data())) != 1)
        openssl_failed("PKCS5_PBKDF2_HMAC");
    return out;
}

std::string random_bytes(size_t n) {
    std::string out(n, '\0');
    if (n > 0 && RAND_bytes(reinterpret_cast<unsigned char*>(out.data()),
                            checked_int(n, "too many random bytes")) != 1)
        openssl_failed("RAND_bytes");
    return out;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
    // The lengths are public (digest sizes); only the contents need constant time.
    if (a.size() != b.size()) return false;
    return a.empty() || CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

scram_credential make_credential(scram_mechanism m, std::string_view password, int32_t iterations) {
    std::string salt = random_bytes(salt_bytes);
    std::string salted = scram_salted_password(m, password, salt, iterations);
    return derive(m, std::move(salt), salted, iterations);
}

scram_credential credential_from_salted(scram_mechanism m, std::string salt,
                                        std::string_view salted_password, int32_t iterations) {
    return derive(m, std::move(salt), salted_password, iterations);
}

bool verify_password(const scram_credential& c, std::string_view password) {
    if (c.iterations < 1) return false;  // a damaged record never verifies
    std::string salted = scram_salted_password(c.mechanism, password, c.salt, c.iterations);
    std::string stored = scram_hash(c.mechanism, scram_hmac(c.mechanism, salted, "Client Key"));
    return constant_time_equal(stored, c.stored_key);
}

}  // namespace sluice::security

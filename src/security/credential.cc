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

namespace {

constexpr std::string_view b64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

}  // namespace

std::string base64_encode(std::string_view raw) {
    std::string out;
    out.reserve((raw.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= raw.size(); i += 3) {
        uint32_t v = (uint32_t(uint8_t(raw[i])) << 16) | (uint32_t(uint8_t(raw[i + 1])) << 8) |
                     uint32_t(uint8_t(raw[i + 2]));
        for (int shift = 18; shift >= 0; shift -= 6) out += b64_alphabet[(v >> shift) & 0x3f];
    }
    size_t rest = raw.size() - i;
    if (rest > 0) {
        uint32_t v = uint32_t(uint8_t(raw[i])) << 16;
        if (rest == 2) v |= uint32_t(uint8_t(raw[i + 1])) << 8;
        out += b64_alphabet[(v >> 18) & 0x3f];
        out += b64_alphabet[(v >> 12) & 0x3f];
        out += rest == 2 ? b64_alphabet[(v >> 6) & 0x3f] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        bool last = i + 4 == text.size();
        size_t pad = 0;
        if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) {
            int d = k < 4 - pad ? b64_value(text[i + k]) : 0;
            if (d < 0) return std::nullopt;
            v = (v << 6) | uint32_t(d);
        }
        out += char((v >> 16) & 0xff);
        if (pad < 2) out += char((v >> 8) & 0xff);
        if (pad < 1) out += char(v & 0xff);
        // Canonical form only: the bits dropped by padding must be zero.
        if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    }
    return out;
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

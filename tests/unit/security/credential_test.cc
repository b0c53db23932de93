// SCRAM credentials and the primitives they are built from.

#include <gtest/gtest.h>

#include "security/credential.h"

namespace sluice::security {
namespace {

std::string hex(std::string_view raw) {
    static constexpr std::string_view digits = "0123456789abcdef";
    std::string out;
    for (unsigned char ch : raw) {
        out += digits[ch >> 4];
        out += digits[ch & 0xf];
    }
    return out;
}

TEST(credential, mechanism_names_round_trip) {
    EXPECT_EQ(mechanism_name(scram_mechanism::sha256), "SCRAM-SHA-256");
    EXPECT_EQ(mechanism_name(scram_mechanism::sha512), "SCRAM-SHA-512");
    EXPECT_EQ(parse_scram_mechanism("SCRAM-SHA-256"), scram_mechanism::sha256);
    EXPECT_EQ(parse_scram_mechanism("SCRAM-SHA-512"), scram_mechanism::sha512);
    EXPECT_EQ(parse_scram_mechanism("scram-sha-256"), std::nullopt);
    EXPECT_EQ(parse_scram_mechanism("PLAIN"), std::nullopt);
}

TEST(credential, make_credential_has_fresh_salt_and_digest_sized_keys) {
    auto a = make_credential(scram_mechanism::sha256, "secret");
    auto b = make_credential(scram_mechanism::sha256, "secret");
    auto c = make_credential(scram_mechanism::sha512, "secret", 8192);
    EXPECT_EQ(a.salt.size(), 32u);
    EXPECT_NE(a.salt, b.salt);
    EXPECT_NE(a.stored_key, b.stored_key);  // same password, different salt
    EXPECT_EQ(a.iterations, default_iterations);
    EXPECT_EQ(a.stored_key.size(), 32u);
    EXPECT_EQ(a.server_key.size(), 32u);
    EXPECT_EQ(c.mechanism, scram_mechanism::sha512);
    EXPECT_EQ(c.iterations, 8192);
    EXPECT_EQ(c.stored_key.size(), 64u);
    EXPECT_EQ(c.server_key.size(), 64u);
}

TEST(credential, verify_password_accepts_only_the_password) {
    for (auto m : {scram_mechanism::sha256, scram_mechanism::sha512}) {
        auto c = make_credential(m, "correct horse");
        EXPECT_TRUE(verify_password(c, "correct horse"));
        EXPECT_FALSE(verify_password(c, "correct hors"));
        EXPECT_FALSE(verify_password(c, "correct horsf"));
        EXPECT_FALSE(verify_password(c, ""));
    }
    auto damaged = make_credential(scram_mechanism::sha256, "x");
    damaged.iterations = 0;
    EXPECT_FALSE(verify_password(damaged, "x"));
}

TEST(credential, non_ascii_passwords_are_raw_utf8_bytes) {
    auto c = make_credential(scram_mechanism::sha256, "p\xc3\xa4ss");  // "päss"
    EXPECT_TRUE(verify_password(c, "p\xc3\xa4ss"));
    EXPECT_FALSE(verify_password(c, "pass"));
}

TEST(credential, from_salted_matches_make_credential) {
    auto made = make_credential(scram_mechanism::sha512, "pw", 4096);
    std::string salted = scram_salted_password(scram_mechanism::sha512, "pw", made.salt, 4096);
    auto from = credential_from_salted(scram_mechanism::sha512, made.salt, salted, 4096);
    EXPECT_EQ(from.mechanism, made.mechanism);
    EXPECT_EQ(from.salt, made.salt);
    EXPECT_EQ(from.iterations, made.iterations);
    EXPECT_EQ(from.stored_key, made.stored_key);
    EXPECT_EQ(from.server_key, made.server_key);
    EXPECT_TRUE(verify_password(from, "pw"));
}

TEST(credential, rfc7677_salted_password_and_keys) {
    // RFC 7677 section 3: "pencil", salt W22ZaJ0SNY7soEsUEjb6gQ==, 4096 iterations.
    auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
    ASSERT_TRUE(salt);
    auto made = credential_from_salted(
        scram_mechanism::sha256, *salt,
        scram_salted_password(scram_mechanism::sha256, "pencil", *salt, 4096), 4096);
    EXPECT_TRUE(verify_password(made, "pencil"));
    EXPECT_FALSE(verify_password(made, "pencil "));
}

TEST(credential, hmac_and_hash_match_published_vectors) {
    // RFC 4231 test case 2.
    EXPECT_EQ(hex(scram_hmac(scram_mechanism::sha256, "Jefe", "what do ya want for nothing?")),
              "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    // FIPS 180-2 "abc".
    EXPECT_EQ(hex(scram_hash(scram_mechanism::sha256, "abc")),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    EXPECT_EQ(scram_hash(scram_mechanism::sha512, "abc").size(), 64u);
}

TEST(credential, constant_time_equal_compares_contents_and_length) {
    EXPECT_TRUE(constant_time_equal("", ""));
    EXPECT_TRUE(constant_time_equal("abc", "abc"));
    EXPECT_FALSE(constant_time_equal("abc", "abd"));
    EXPECT_FALSE(constant_time_equal("abc", "abcd"));
    EXPECT_EQ(random_bytes(16).size(), 16u);
    EXPECT_NE(random_bytes(16), random_bytes(16));
}

TEST(credential, base64_round_trips_rfc4648_vectors) {
    const std::pair<std::string, std::string> vectors[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (const auto& [raw, text] : vectors) {
        EXPECT_EQ(base64_encode(raw), text);
        EXPECT_EQ(base64_decode(text), raw);
    }
    std::string all;
    for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
    EXPECT_EQ(base64_decode(base64_encode(all)), all);
}

TEST(credential, base64_decode_is_strict) {
    EXPECT_EQ(base64_decode("Zg="), std::nullopt);       // length not a multiple of 4
    EXPECT_EQ(base64_decode("Z==="), std::nullopt);      // too much padding
    EXPECT_EQ(base64_decode("Zg==Zg=="), std::nullopt);  // padding in the middle
    EXPECT_EQ(base64_decode("Zm9v!A=="), std::nullopt);  // stray character
    EXPECT_EQ(base64_decode("Zh=="), std::nullopt);      // non-zero bits under padding
    EXPECT_EQ(base64_decode("Zm 9"), std::nullopt);
}

}  // namespace
}  // namespace sluice::security

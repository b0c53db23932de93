// SASL exchanges: PLAIN and SCRAM, server against our own client and against RFC 7677.

#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "security/sasl.h"

namespace sluice::security {
namespace {

using outcome = sasl_server::step_result::outcome;
constexpr auto sha256 = scram_mechanism::sha256;
constexpr auto sha512 = scram_mechanism::sha512;

class map_source : public credential_source {
  public:
    void add(const std::string& user, scram_mechanism m, std::string_view password) {
        _users[user].push_back(make_credential(m, password));
    }
    std::vector<scram_credential> credentials(const std::string& user) const override {
        auto it = _users.find(user);
        return it == _users.end() ? std::vector<scram_credential>{} : it->second;
    }

  private:
    std::map<std::string, std::vector<scram_credential>> _users;
};

map_source& users() {
    static map_source s = [] {
        map_source src;
        src.add("alice", sha256, "alice-secret");
        src.add("alice", sha512, "alice-secret");
        src.add("carol", sha512, "carol-secret");  // SCRAM-SHA-512 only
        src.add("a,b=c", sha256, "odd");
        src.add("dave", sha256, "dave-256");  // a different password per mechanism
        src.add("dave", sha512, "dave-512");
        return src;
    }();
    return s;
}

std::string field(std::string_view msg, char key) {
    std::string prefix = std::string(1, key) + "=";
    size_t start = 0;
    while (start <= msg.size()) {
        size_t comma = msg.find(',', start);
        std::string_view attr = msg.substr(start, comma - start);
        if (attr.starts_with(prefix)) return std::string(attr.substr(2));
        if (comma == msg.npos) break;
        start = comma + 1;
    }
    return {};
}

struct exchange {
    sasl_server::step_result first, final;
    bool client_verified = false;
    std::string user;
};

exchange run_scram(scram_mechanism m, const std::string& user, const std::string& password,
                   std::string default_user = {}) {
    auto server = make_sasl_server(mechanism_name(m), users(), std::move(default_user));
    scram_client client(m, user, password);
    exchange ex;
    ex.first = server->step(client.client_first());
    if (ex.first.result != outcome::challenge) return ex;
    ex.final = server->step(client.client_final(ex.first.response));
    ex.client_verified = client.verify_server_final(ex.final.response);
    ex.user = server->user();
    return ex;
}

sasl_server::step_result first_only(std::string_view msg, std::string default_user = {}) {
    auto server = make_sasl_server("SCRAM-SHA-256", users(), std::move(default_user));
    return server->step(msg);
}

TEST(sasl, offers_plain_and_scram) {
    std::vector<std::string_view> got(supported_mechanisms().begin(), supported_mechanisms().end());
    EXPECT_EQ(got, (std::vector<std::string_view>{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}));
    EXPECT_EQ(make_sasl_server("GSSAPI", users()), nullptr);
    EXPECT_EQ(make_sasl_server("OAUTHBEARER", users()), nullptr);
    EXPECT_NE(make_sasl_server("PLAIN", users()), nullptr);
}

TEST(scram, full_exchange_succeeds_for_both_mechanisms) {
    for (auto m : {sha256, sha512}) {
        auto ex = run_scram(m, "alice", "alice-secret");
        EXPECT_EQ(ex.first.result, outcome::challenge);
        EXPECT_EQ(field(ex.first.response, 'i'), "4096");
        EXPECT_EQ(ex.final.result, outcome::success) << ex.final.reason;
        EXPECT_TRUE(ex.final.response.starts_with("v=")) << ex.final.response;
        EXPECT_TRUE(ex.client_verified);
        EXPECT_EQ(ex.user, "alice");
        EXPECT_EQ(ex.final.reason, "");
    }
}

TEST(scram, each_mechanism_checks_its_own_credential) {
    EXPECT_EQ(run_scram(sha256, "dave", "dave-256").final.result, outcome::success);
    EXPECT_EQ(run_scram(sha512, "dave", "dave-512").final.result, outcome::success);
    EXPECT_EQ(run_scram(sha256, "dave", "dave-512").final.result, outcome::failure);
}

TEST(scram, client_rejects_a_forged_server_signature) {
    auto server = make_sasl_server("SCRAM-SHA-256", users());
    scram_client client(sha256, "alice", "alice-secret");
    auto first = server->step(client.client_first());
    auto final = server->step(client.client_final(first.response));
    ASSERT_EQ(final.result, outcome::success);
    std::string forged = final.response;
    forged[2] = forged[2] == 'A' ? 'B' : 'A';
    EXPECT_FALSE(client.verify_server_final(forged));
    EXPECT_FALSE(client.verify_server_final("e=other-error"));
    EXPECT_TRUE(client.verify_server_final(final.response));
}

TEST(scram, wrong_password_fails_at_the_proof) {
    auto ex = run_scram(sha256, "alice", "wrong");
    EXPECT_EQ(ex.first.result, outcome::challenge);
    EXPECT_EQ(ex.final.result, outcome::failure);
    EXPECT_EQ(ex.final.reason, "wrong password for user 'alice'");
    EXPECT_EQ(ex.final.response, "");
    EXPECT_FALSE(ex.client_verified);
    EXPECT_EQ(ex.user, "");
}

TEST(scram, unknown_user_looks_like_a_wrong_password_to_the_client) {
    auto unknown = run_scram(sha256, "bob", "whatever");
    auto wrong = run_scram(sha256, "alice", "whatever");
    // The challenge has the same shape: a nonce, a 32-byte salt, the default iterations.
    ASSERT_EQ(unknown.first.result, outcome::challenge);
    EXPECT_EQ(field(unknown.first.response, 's').size(), field(wrong.first.response, 's').size());
    EXPECT_EQ(field(unknown.first.response, 'i'), field(wrong.first.response, 'i'));
    EXPECT_EQ(field(unknown.first.response, 'r').size(), field(wrong.first.response, 'r').size());
    // It fails only at the final step, with the same client-visible answer.
    EXPECT_EQ(unknown.final.result, outcome::failure);
    EXPECT_EQ(unknown.final.response, wrong.final.response);
    EXPECT_EQ(unknown.final.reason, "unknown user 'bob' for SCRAM-SHA-256");
    // A second attempt sees the same salt, as it would for a real user.
    auto again = run_scram(sha256, "bob", "other");
    EXPECT_EQ(field(again.first.response, 's'), field(unknown.first.response, 's'));
    auto other = run_scram(sha256, "bobby", "other");
    EXPECT_NE(field(other.first.response, 's'), field(unknown.first.response, 's'));
}

TEST(scram, user_without_a_credential_for_the_mechanism_fails_saying_which) {
    EXPECT_EQ(run_scram(sha512, "carol", "carol-secret").final.result, outcome::success);
    auto ex = run_scram(sha256, "carol", "carol-secret");
    auto wrong = run_scram(sha256, "alice", "whatever");
    EXPECT_EQ(ex.first.result, outcome::challenge);
    EXPECT_EQ(ex.final.result, outcome::failure);
    // The client sees what a wrong password gets; the log says the user exists.
    EXPECT_EQ(ex.final.response, wrong.final.response);
    EXPECT_EQ(ex.final.reason,
              "user 'carol' has no SCRAM-SHA-256 credential (it has SCRAM-SHA-512)");
}

TEST(scram, escaped_user_names_are_decoded) {
    auto ex = run_scram(sha256, "a,b=c", "odd");
    EXPECT_EQ(ex.final.result, outcome::success) << ex.final.reason;
    EXPECT_EQ(ex.user, "a,b=c");
}

TEST(scram, empty_user_name_means_the_default_user) {
    auto ex = run_scram(sha256, "", "alice-secret", "alice");
    EXPECT_EQ(ex.final.result, outcome::success) << ex.final.reason;
    EXPECT_EQ(ex.user, "alice");
    auto none = first_only("n,,n=,r=abc");
    EXPECT_EQ(none.result, outcome::failure);
    EXPECT_EQ(none.reason, "malformed client-first message: empty user name");
}

TEST(scram, tampered_nonce_fails) {
    auto server = make_sasl_server("SCRAM-SHA-256", users());
    scram_client client(sha256, "alice", "alice-secret");
    auto first = server->step(client.client_first());
    std::string final = client.client_final(first.response);
    size_t r = final.find(",r=") + 3;
    final[r + 5] = final[r + 5] == 'x' ? 'y' : 'x';
    auto res = server->step(final);
    EXPECT_EQ(res.result, outcome::failure);
    EXPECT_EQ(res.reason, "nonce mismatch for user 'alice'");
    EXPECT_EQ(server->user(), "");
}

TEST(scram, channel_binding_is_refused) {
    auto res = first_only("p=tls-unique,,n=alice,r=abc");
    EXPECT_EQ(res.result, outcome::failure);
    EXPECT_EQ(res.reason, "channel binding 'tls-unique' is not supported");
}

TEST(scram, y_flag_is_accepted_and_must_be_echoed) {
    auto server = make_sasl_server("SCRAM-SHA-256", users());
    scram_client client(sha256, "alice", "alice-secret");
    std::string first = client.client_first();
    first[0] = 'y';
    auto challenge = server->step(first);
    ASSERT_EQ(challenge.result, outcome::challenge);
    // Our client echoes "n,,": the server notices the binding data does not match.
    auto res = server->step(client.client_final(challenge.response));
    EXPECT_EQ(res.result, outcome::failure);
    EXPECT_EQ(res.reason,
              "channel binding data 'n,,' differs from the client-first GS2 header 'y,,'");
}

TEST(scram, delegation_tokens_are_refused_and_other_extensions_ignored) {
    auto token = first_only("n,,n=alice,r=abc,tokenauth=true");
    EXPECT_EQ(token.result, outcome::failure);
    EXPECT_EQ(token.reason, "delegation tokens are not supported");
    EXPECT_EQ(first_only("n,,n=alice,r=abc,tokenauth=TRUE").reason,
              "delegation tokens are not supported");
    auto other = first_only("n,,n=alice,r=abc,traceid=42");
    EXPECT_EQ(other.result, outcome::challenge);
    EXPECT_TRUE(other.response.starts_with("r=abc")) << other.response;
}

TEST(scram, authzid_must_be_the_user) {
    EXPECT_EQ(first_only("n,a=alice,n=alice,r=abc").result, outcome::challenge);
    auto res = first_only("n,a=mallory,n=alice,r=abc");
    EXPECT_EQ(res.result, outcome::failure);
    EXPECT_EQ(res.reason, "authorization id 'mallory' differs from user 'alice'");
}

TEST(scram, malformed_client_first_messages_fail_with_a_reason) {
    const std::pair<std::string, std::string> cases[] = {
        {"", "no GS2 header"},
        {"n,,", "expected n=<user> after the GS2 header"},
        {"n,", "no GS2 header"},
        {"x,,n=alice,r=abc", "channel binding flag 'x' is not n, y or p="},
        {"n,b=alice,n=alice,r=abc", "expected a=<authzid> in the GS2 header"},
        {"n,,n=alice", "expected r=<nonce> after the user name"},
        {"n,,r=abc,n=alice", "expected n=<user> after the GS2 header"},
        {"n,,n=al=2Xice,r=abc", "bad '=' escape in the user name"},
        {"n,,n=alice=,r=abc", "bad '=' escape in the user name"},
        {"n,a=x=,n=alice,r=abc", "bad '=' escape in the authorization id"},
        {"n,,n=alice,r=", "empty or unprintable nonce"},
        {"n,,n=alice,r=ab\x01", "empty or unprintable nonce"},
        {"n,,n=alice,r=abc,junk", "extension 'junk' is not key=value"},
        {std::string("n,,n=ali\0ce,r=abc", 17), "NUL byte"},
    };
    for (const auto& [msg, why] : cases) {
        auto res = first_only(msg);
        EXPECT_EQ(res.result, outcome::failure) << msg;
        EXPECT_EQ(res.reason, "malformed client-first message: " + why) << msg;
        EXPECT_EQ(res.response, "");
    }
    EXPECT_EQ(first_only("n,,m=ext,n=alice,r=abc").reason,
              "mandatory SCRAM extension (m=) not supported");
}

TEST(scram, malformed_client_final_messages_fail_with_a_reason) {
    auto reason_for = [](const std::function<std::string(const std::string&)>& make_final) {
        auto server = make_sasl_server("SCRAM-SHA-256", users());
        scram_client client(sha256, "alice", "alice-secret");
        auto first = server->step(client.client_first());
        std::string nonce = field(first.response, 'r');
        auto res = server->step(make_final(nonce));
        EXPECT_EQ(res.result, outcome::failure);
        return res.reason;
    };
    EXPECT_EQ(reason_for([](const std::string& n) { return "c=biws,r=" + n; }),
              "malformed client-final message: no p=<proof>");
    EXPECT_EQ(reason_for([](const std::string& n) { return "r=" + n + ",p=AAAA"; }),
              "malformed client-final message: expected c=<binding>,r=<nonce>");
    EXPECT_EQ(reason_for([](const std::string& n) { return "c=b!ws,r=" + n + ",p=AAAA"; }),
              "malformed client-final message: c= is not base64");
    EXPECT_EQ(reason_for([](const std::string& n) { return "c=biws,r=" + n + ",p=A*AA"; }),
              "malformed client-final message: p= is not base64");
    EXPECT_EQ(reason_for([](const std::string& n) { return "c=biws,r=" + n + ",p=AAAA"; }),
              "malformed client-final message: proof has 3 bytes, expected 32");
    EXPECT_EQ(reason_for([](const std::string& n) {
                  return "c=biws,r=" + n + ",p=" + base64_encode(std::string(32, 'x'));
              }),
              "wrong password for user 'alice'");
}

TEST(scram, exchange_is_over_after_success_or_failure) {
    auto server = make_sasl_server("SCRAM-SHA-256", users());
    scram_client client(sha256, "alice", "alice-secret");
    auto first = server->step(client.client_first());
    std::string final = client.client_final(first.response);
    ASSERT_EQ(server->step(final).result, outcome::success);
    auto again = server->step(final);
    EXPECT_EQ(again.result, outcome::failure);
    EXPECT_EQ(again.reason, "SCRAM-SHA-256 exchange already finished");
    EXPECT_EQ(server->user(), "alice");

    auto failed = make_sasl_server("SCRAM-SHA-256", users());
    EXPECT_EQ(failed->step("garbage").result, outcome::failure);
    EXPECT_EQ(failed->step(client.client_first()).result, outcome::failure);
}

TEST(scram, client_rejects_malformed_server_first) {
    scram_client client(sha256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
    EXPECT_EQ(client.client_final("r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
              "");  // before client_first()
    client.client_first();
    const char* bad[] = {
        "",
        "r=someoneelse,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",           // not our nonce
        "r=rOprNGfwEbeRWgbNEkqO,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096",  // not extended
        "r=rOprNGfwEbeRWgbNEkqOxyz,s=!!,i=4096",
        "r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4x",
        "r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1",  // too weak
        "r=rOprNGfwEbeRWgbNEkqOxyz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=99999999",
        "s=W22ZaJ0SNY7soEsUEjb6gQ==,r=rOprNGfwEbeRWgbNEkqOxyz,i=4096",
    };
    for (const char* msg : bad) EXPECT_EQ(client.client_final(msg), "") << msg;
    EXPECT_FALSE(client.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

// RFC 7677 section 3.
constexpr std::string_view rfc_nonce = "rOprNGfwEbeRWgbNEkqO";
constexpr std::string_view rfc_server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
constexpr std::string_view rfc_final_without_proof =
    "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
constexpr std::string_view rfc_proof = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
constexpr std::string_view rfc_server_final = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

TEST(scram, client_reproduces_rfc7677) {
    scram_client client(sha256, "user", "pencil", std::string(rfc_nonce));
    EXPECT_EQ(client.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
    EXPECT_EQ(client.client_final(rfc_server_first),
              std::string(rfc_final_without_proof) + ",p=" + std::string(rfc_proof));
    EXPECT_TRUE(client.verify_server_final(rfc_server_final));
    EXPECT_FALSE(client.verify_server_final("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

TEST(scram, server_keys_reproduce_rfc7677) {
    // What the server stores for "pencil", then the server's side of the computation.
    std::string salt = *base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
    auto cred = credential_from_salted(sha256, salt,
                                       scram_salted_password(sha256, "pencil", salt, 4096), 4096);
    std::string auth = "n=user,r=rOprNGfwEbeRWgbNEkqO," + std::string(rfc_server_first) + "," +
                       std::string(rfc_final_without_proof);
    std::string proof = *base64_decode(rfc_proof);
    std::string signature = scram_hmac(sha256, cred.stored_key, auth);
    std::string client_key(proof.size(), '\0');
    for (size_t i = 0; i < proof.size(); ++i) client_key[i] = char(proof[i] ^ signature[i]);
    EXPECT_EQ(scram_hash(sha256, client_key), cred.stored_key);
    EXPECT_EQ("v=" + base64_encode(scram_hmac(sha256, cred.server_key, auth)), rfc_server_final);
}

// PLAIN: authzid NUL user NUL password.
sasl_server::step_result plain(std::string_view msg, std::string* user = nullptr) {
    auto server = make_sasl_server("PLAIN", users());
    auto res = server->step(msg);
    if (user) *user = server->user();
    return res;
}

std::string plain_msg(std::string_view authzid, std::string_view user, std::string_view pw) {
    std::string m(authzid);
    m += '\0';
    m += user;
    m += '\0';
    m += pw;
    return m;
}

TEST(plain, right_password_succeeds) {
    std::string user;
    auto res = plain(plain_msg("", "alice", "alice-secret"), &user);
    EXPECT_EQ(res.result, outcome::success) << res.reason;
    EXPECT_EQ(res.response, "");
    EXPECT_EQ(user, "alice");
    EXPECT_EQ(plain(plain_msg("alice", "alice", "alice-secret")).result, outcome::success);
}

TEST(plain, any_of_the_users_credentials_verifies) {
    EXPECT_EQ(plain(plain_msg("", "dave", "dave-256")).result, outcome::success);
    EXPECT_EQ(plain(plain_msg("", "dave", "dave-512")).result, outcome::success);
    EXPECT_EQ(plain(plain_msg("", "carol", "carol-secret")).result, outcome::success);
}

TEST(plain, wrong_password_and_unknown_user_fail_alike) {
    std::string user;
    auto wrong = plain(plain_msg("", "alice", "nope"), &user);
    EXPECT_EQ(wrong.result, outcome::failure);
    EXPECT_EQ(wrong.reason, "wrong password for user 'alice'");
    EXPECT_EQ(user, "");
    auto unknown = plain(plain_msg("", "bob", "nope"));
    EXPECT_EQ(unknown.result, outcome::failure);
    EXPECT_EQ(unknown.reason, "unknown user 'bob'");
    EXPECT_EQ(unknown.response, wrong.response);
}

TEST(plain, authzid_must_be_the_user) {
    auto res = plain(plain_msg("admin", "alice", "alice-secret"));
    EXPECT_EQ(res.result, outcome::failure);
    EXPECT_EQ(res.reason, "authorization id 'admin' differs from user 'alice'");
}

TEST(plain, malformed_messages_fail) {
    EXPECT_EQ(plain("alice").reason,
              "malformed PLAIN message: expected authzid NUL user NUL password");
    EXPECT_EQ(plain(std::string("\0alice", 6)).reason,
              "malformed PLAIN message: expected authzid NUL user NUL password");
    EXPECT_EQ(plain("").result, outcome::failure);
    EXPECT_EQ(plain(plain_msg("", "", "x")).reason, "malformed PLAIN message: empty user name");
    EXPECT_EQ(plain(plain_msg("", "alice", std::string("a\0b", 3))).reason,
              "malformed PLAIN message: more than two NUL separators");
}

TEST(plain, control_characters_in_names_are_escaped_for_the_log) {
    auto res = plain(plain_msg("", "bob\nINFO forged", "x"));
    EXPECT_EQ(res.reason, "unknown user 'bob\\x0aINFO forged'");
}

TEST(plain, exchange_is_single_step) {
    auto server = make_sasl_server("PLAIN", users());
    ASSERT_EQ(server->step(plain_msg("", "alice", "alice-secret")).result, outcome::success);
    auto again = server->step(plain_msg("", "alice", "alice-secret"));
    EXPECT_EQ(again.result, outcome::failure);
    EXPECT_EQ(again.reason, "SASL/PLAIN exchange already finished");
}

}  // namespace
}  // namespace sluice::security

// Logins on the PostgreSQL front end when the broker requires authentication:
// SCRAM-SHA-256 in plain text, the password itself over TLS only, 28P01 for a failed
// login whatever the reason; and sessions run as the user who logged in.

#include <cstring>

#include "pg_test_util.h"
#include "security/sasl.h"
#include "sql/sql_security_util.h"

namespace sluice::sql::pg::test {
namespace {

using sluice::sql::test::certs;
using sluice::sql::test::fake_gate;

class pg_auth : public ::testing::Test {
  protected:
    void SetUp() override {
        gate.add_user("alice", "wonderland");
        start(nullptr);
    }
    void TearDown() override {
        server.reset();
        eng.reset();
        if (logs) logs->close();
    }

    void start(std::shared_ptr<net::tls_context> tls, bool require_login = true) {
        server.reset();
        eng.reset();
        if (!require_login) {
            open_gate = std::make_unique<fake_gate>(false);
        }
        engine_options eo;
        eo.data_dir = dir.path;
        eo.gate = active_gate();
        auto e = sql::test::open_duck_test_engine(eo, logs);
        ASSERT_TRUE(e.ok()) << e.error().message;
        eng = std::move(*e);
        pg_options po;
        po.tls = std::move(tls);
        po.gate = active_gate();
        auto s = pg_server::start({"127.0.0.1", 0}, *eng, std::move(po));
        ASSERT_TRUE(s.ok()) << s.err().message;
        server = std::move(*s);
    }
    const fake_gate* active_gate() const { return open_gate ? open_gate.get() : &gate; }

    conn_ptr connect(const std::string& user, const std::string& password,
                     const std::string& sslmode = "disable") {
        std::string ci = "host=127.0.0.1 port=" + std::to_string(server->address().port) +
                         " dbname=sluice user=" + user + " sslmode=" + sslmode +
                         " connect_timeout=5";
        if (!password.empty()) ci += " password=" + password;
        if (sslmode == "verify-full") ci += " sslrootcert=" + certs().ca();
        return conn_ptr(PQconnectdb(ci.c_str()));
    }

    // A startup packet for `user`, sent on a raw connection.
    static std::string startup_packet(const std::string& user) {
        std::string body;
        raw_client::put32(body, 196608);
        body += raw_client::cstr("user") + raw_client::cstr(user) + raw_client::cstr("database") +
                raw_client::cstr("sluice") + std::string(1, '\0');
        std::string pkt;
        raw_client::put32(pkt, static_cast<uint32_t>(body.size() + 4));
        return pkt + body;
    }
    static int32_t auth_code(const backend_msg& m) {
        return m.type == 'R' && m.body.size() >= 4
                   ? static_cast<int32_t>(raw_client::be32(m.body.data()))
                   : -1;
    }

    // A SCRAM-SHA-256 exchange by hand; the last message the server sent.
    std::optional<backend_msg> scram_by_hand(const std::string& user, const std::string& password) {
        raw_client c(server->address().port);
        EXPECT_TRUE(c.connected);
        c.send(startup_packet(user));
        auto offer = c.read();
        if (!offer || auth_code(*offer) != 10) return offer;
        EXPECT_NE(offer->body.find("SCRAM-SHA-256"), std::string::npos);
        security::scram_client scram(security::scram_mechanism::sha256, "", password);
        const std::string first = scram.client_first();
        std::string init = raw_client::cstr("SCRAM-SHA-256");
        raw_client::put32(init, static_cast<uint32_t>(first.size()));
        c.send(raw_client::msg('p', init + first));
        auto server_first = c.read();
        if (!server_first || auth_code(*server_first) != 11) return server_first;
        c.send(raw_client::msg('p', scram.client_final(server_first->body.substr(4))));
        auto final_msg = c.read();
        if (!final_msg || auth_code(*final_msg) != 12) return final_msg;
        EXPECT_TRUE(scram.verify_server_final(final_msg->body.substr(4)));
        return c.read();  // AuthenticationOk
    }

    temp_dir dir;
    fake_gate gate;
    std::unique_ptr<fake_gate> open_gate;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<engine> eng;
    std::unique_ptr<pg_server> server;
};

TEST_F(pg_auth, scram_login_with_libpq) {
    auto c = connect("alice", "wonderland");
    ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
    auto r = exec(c.get(), "SELECT 6 * 7");
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "42");
}

TEST_F(pg_auth, a_failed_login_says_the_same_whatever_the_reason) {
    for (const auto& [user, password] :
         {std::pair{"alice", "looking-glass"}, std::pair{"mallory", "wonderland"}}) {
        auto c = connect(user, password);
        EXPECT_EQ(PQstatus(c.get()), CONNECTION_BAD);
        EXPECT_NE(
            std::strstr(
                PQerrorMessage(c.get()),
                ("password authentication failed for user \"" + std::string(user) + "\"").c_str()),
            nullptr)
            << PQerrorMessage(c.get());
    }
    // Without a password libpq gives up by itself.
    EXPECT_EQ(PQstatus(connect("alice", "").get()), CONNECTION_BAD);
}

TEST_F(pg_auth, scram_exchange_on_the_wire) {
    auto ok = scram_by_hand("alice", "wonderland");
    ASSERT_TRUE(ok);
    EXPECT_EQ(auth_code(*ok), 0);
    auto bad = scram_by_hand("alice", "looking-glass");
    ASSERT_TRUE(bad);
    ASSERT_EQ(bad->type, 'E');
    EXPECT_EQ(raw_client::error_field(bad->body, 'C'), "28P01");
    EXPECT_EQ(raw_client::error_field(bad->body, 'S'), "FATAL");
    EXPECT_EQ(raw_client::error_field(bad->body, 'M'),
              "password authentication failed for user \"alice\"");
}

TEST_F(pg_auth, cleartext_is_not_taken_without_tls) {
    raw_client c(server->address().port);
    ASSERT_TRUE(c.connected);
    c.send(startup_packet("alice"));
    auto offer = c.read();
    ASSERT_TRUE(offer);
    EXPECT_EQ(auth_code(*offer), 10) << "SASL, not a cleartext password (3)";
    // A password sent anyway is no SASL message: refused, and no AuthenticationOk.
    c.send(raw_client::msg('p', raw_client::cstr("wonderland")));
    auto answer = c.read();
    ASSERT_TRUE(answer);
    EXPECT_EQ(answer->type, 'E');
    EXPECT_EQ(raw_client::error_field(answer->body, 'S'), "FATAL");
    EXPECT_TRUE(c.closed_by_server());
}

TEST_F(pg_auth, password_over_tls) {
    start(certs().server_context());
    for (const char* mode : {"require", "verify-full"}) {
        auto c = connect("alice", "wonderland", mode);
        ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << mode << ": " << PQerrorMessage(c.get());
        EXPECT_NE(PQsslInUse(c.get()), 0);
        auto r = exec(c.get(), "SELECT 'over tls'");
        EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "over tls");
    }
    auto bad = connect("alice", "looking-glass", "require");
    EXPECT_EQ(PQstatus(bad.get()), CONNECTION_BAD);
    EXPECT_NE(std::strstr(PQerrorMessage(bad.get()), "password authentication failed"), nullptr)
        << PQerrorMessage(bad.get());
    // The same server still takes SCRAM from clients that stay in plain text.
    auto plain = connect("alice", "wonderland", "disable");
    EXPECT_EQ(PQstatus(plain.get()), CONNECTION_OK) << PQerrorMessage(plain.get());
    EXPECT_EQ(PQsslInUse(plain.get()), 0);
}

TEST_F(pg_auth, bytes_sent_before_the_tls_handshake_are_refused) {
    start(certs().server_context());
    raw_client c(server->address().port);
    ASSERT_TRUE(c.connected);
    std::string ssl_request;
    raw_client::put32(ssl_request, 8);
    raw_client::put32(ssl_request, 80877103);
    // The startup packet rides along in plain text, before the server's 'S'.
    c.send(ssl_request + startup_packet("alice"));
    auto m = c.read();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->type, 'E');
    EXPECT_EQ(raw_client::error_field(m->body, 'C'), "08P01");
}

TEST_F(pg_auth, no_login_when_the_gate_does_not_require_one) {
    start(nullptr, /*require_login=*/false);
    auto c = connect("anyone", "");
    EXPECT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
}

}  // namespace
}  // namespace sluice::sql::pg::test

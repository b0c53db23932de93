// HTTPS and Basic authentication on the HTTP server, through the client that
// `sluice sql` uses (sql_client) and through the raw test client, and the parsing of
// the command-line tools' --server, --auth and --tls-ca.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "sql/http/http_server.h"
#include "sql/http/sql_client.h"
#include "sql/sql_security_util.h"
#include "../sql/duck_test_engine.h"
#include "sql_http/test_client.h"

namespace sluice::sql {
namespace {

using sluice::sql::test::certs;
using sluice::sql::test::fake_gate;
using sluice::testing::test_conn;

class HttpAuthTest : public ::testing::Test {
  protected:
    void SetUp() override {
        gate.add_user("alice", "wonderland");
        char tmpl[] = "/tmp/sql-http-auth-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        _dir = tmpl;
        auto e = test::open_duck_test_engine({.data_dir = _dir, .gate = &gate}, _logs);
        ASSERT_TRUE(e) << e.error().message;
        _eng = std::move(*e);
    }
    void TearDown() override {
        if (_srv) _srv->stop();
        _srv.reset();
        _eng.reset();
        if (_logs) _logs->close();
        std::filesystem::remove_all(_dir);
    }

    void start(bool https, std::vector<std::string> anonymous = {"/v1/health"},
               std::shared_ptr<net::tls_context> tls = nullptr) {
        http_options o;
        o.gate = &gate;
        o.anonymous_paths = std::move(anonymous);
        if (https) o.tls = tls ? tls : certs().server_context();
        auto s = http_server::start({"127.0.0.1", 0}, *_eng, std::move(o));
        ASSERT_TRUE(s) << s.err().message;
        _srv = std::move(*s);
        _srv->add_route("GET", "/whoami",
                        [](const http::http_request& req, http::http_response& r) {
                            r.send(200, "text/plain", req.principal.to_string());
                        });
    }

    http::client_options https_as(const std::string& user, const std::string& password) const {
        http::client_options o;
        o.tls = true;
        o.tls_ca_file = certs().ca();
        o.auth_user = user;
        o.auth_password = password;
        return o;
    }

    http::http_reply call(const std::string& method, const std::string& target,
                          const std::string& body, const http::client_options& o) {
        auto r = http::http_call(_srv->address(), method, target, body, o);
        if (auto* e = std::get_if<http::client_error>(&r)) {
            ADD_FAILURE() << e->message;
            return {};
        }
        return std::get<http::http_reply>(r);
    }

    fake_gate gate;
    std::string _dir;
    std::unique_ptr<log::log_manager> _logs;
    std::unique_ptr<engine> _eng;
    std::unique_ptr<http_server> _srv;
};

TEST_F(HttpAuthTest, BasicOverHttpsSetsThePrincipal) {
    start(true);
    auto r = call("GET", "/whoami", "", https_as("alice", "wonderland"));
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "User:alice");
    r = call("POST", "/v1/sql", "SELECT 40 + 2 AS n", https_as("alice", "wonderland"));
    EXPECT_EQ(r.status, 200) << r.body;
    EXPECT_NE(r.body.find("\n[42]\n"), std::string::npos) << r.body;
}

TEST_F(HttpAuthTest, RunSqlOverHttps) {
    start(true);
    std::string out;
    http::writer_sink sink(http::result_format::csv, out);
    http::client_request req;
    req.sql = "SELECT 'tls' AS via";
    auto e = http::run_sql(_srv->address(), req, sink, https_as("alice", "wonderland"));
    EXPECT_FALSE(e) << e->message;
    EXPECT_EQ(out, "via\r\ntls\r\n");
    // The server's certificate must verify: the system's CAs do not know ours.
    auto o = https_as("alice", "wonderland");
    o.tls_ca_file.clear();
    e = http::run_sql(_srv->address(), req, sink, o);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->where, http::client_error::origin::connect) << e->message;
}

TEST_F(HttpAuthTest, ClientCertificateForAServerThatRequiresOne) {
    net::tls_settings s;
    s.cert_file = certs().cert();
    s.key_file = certs().key();
    s.client_ca_file = certs().ca();
    s.client_auth = net::tls_settings::client_auth_mode::required;
    auto ctx = net::tls_context::create_server(s);
    ASSERT_TRUE(ctx) << ctx.err().message;
    start(true, {"/v1/health"}, *ctx);
    auto o = https_as("alice", "wonderland");
    auto refused = http::http_call(_srv->address(), "GET", "/whoami", "", o);
    ASSERT_TRUE(std::holds_alternative<http::client_error>(refused));
    // The CA signed the server's certificate: it serves as a client's too.
    o.tls_cert_file = certs().cert();
    o.tls_key_file = certs().key();
    auto r = call("GET", "/whoami", "", o);
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "User:alice");
}

TEST_F(HttpAuthTest, WrongOrMissingCredentialsAre401) {
    start(true);
    for (const auto& o : {https_as("alice", "looking-glass"), https_as("mallory", "wonderland"),
                          https_as("", "")}) {
        auto r = call("POST", "/v1/sql", "SELECT 1", o);
        EXPECT_EQ(r.status, 401) << r.body;
        EXPECT_NE(r.body.find("\"kind\":\"unauthorized\""), std::string::npos) << r.body;
    }
    std::string out;
    http::writer_sink sink(http::result_format::csv, out);
    http::client_request req;
    req.sql = "SELECT 1";
    auto e = http::run_sql(_srv->address(), req, sink, https_as("alice", "nope"));
    ASSERT_TRUE(e);
    EXPECT_EQ(e->http_status, 401);
    EXPECT_EQ(e->message, "invalid user name or password");
    // Health needs no login.
    EXPECT_EQ(call("GET", "/v1/health", "", https_as("", "")).status, 200);
}

TEST_F(HttpAuthTest, PlainHttpIsRefusedWithAHintAndAChallenge) {
    start(false);
    test_conn c(_srv->address().port);
    ASSERT_TRUE(c.connected());
    ASSERT_TRUE(
        c.request("POST", "/v1/sql", "SELECT 1",
                  "Authorization: " + http::basic_authorization("alice", "wonderland") + "\r\n"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->header("www-authenticate"), "Basic realm=\"sluice\"");
    EXPECT_NE(r->body.find("https://"), std::string::npos) << r->body;
    // The client refuses to send a password in plain text in the first place.
    http::client_options o;
    o.auth_user = "alice";
    o.auth_password = "wonderland";
    auto call_result = http::http_call(_srv->address(), "GET", "/whoami", "", o);
    EXPECT_TRUE(std::holds_alternative<http::client_error>(call_result));
}

TEST_F(HttpAuthTest, AnonymousPrefixesAndNoChallengeForScripts) {
    start(false, {"/ui/*"});
    auto page = [](const http::http_request& req, http::http_response& r) {
        r.send(200, "text/plain", req.principal.to_string());
    };
    _srv->add_route("GET", "/ui/*", page);
    _srv->add_route("GET", "/uix", page);
    test_conn c(_srv->address().port);
    ASSERT_TRUE(c.connected());
    // Under the prefix: no credentials asked, as ANONYMOUS.
    ASSERT_TRUE(c.request("GET", "/ui/app.js", ""));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "User:ANONYMOUS");
    // A path that only starts like it is not under it; only GET and HEAD are anonymous.
    ASSERT_TRUE(c.request("GET", "/uix", ""));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->header("www-authenticate"), "Basic realm=\"sluice\"");
    ASSERT_TRUE(c.request("POST", "/ui/app.js", ""));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    // A script (X-Requested-With) gets its 401 without the browser's challenge.
    ASSERT_TRUE(c.request("POST", "/v1/sql", "SELECT 1", "X-Requested-With: sluice-console\r\n"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401);
    EXPECT_EQ(r->header("www-authenticate"), "");
}

TEST_F(HttpAuthTest, BasicCredentialsRoundTrip) {
    auto v = http::basic_authorization("alice", "pass:with:colons");
    EXPECT_EQ(v, "Basic YWxpY2U6cGFzczp3aXRoOmNvbG9ucw==");
    auto c = http::parse_basic_authorization(v);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->user, "alice");
    EXPECT_EQ(c->password, "pass:with:colons");
    EXPECT_TRUE(http::parse_basic_authorization("basic  YWxpY2U6eA=="));
    EXPECT_FALSE(http::parse_basic_authorization("Bearer YWxpY2U6eA=="));
    EXPECT_FALSE(http::parse_basic_authorization("Basic not*base64"));
    EXPECT_FALSE(http::parse_basic_authorization("Basic YWxpY2U="));  // "alice": no ':'
}

TEST_F(HttpAuthTest, NotAuthorizedIs403) {
    EXPECT_EQ(http::status_for(failure::not_authorized), 403);
    EXPECT_EQ(http::status_for(failure::read_only), 400);
}

TEST(ServerFlags, SchemesAuthAndCa) {
    ::unsetenv(http::password_env);
    auto t = http::parse_server_flags("127.0.0.1:8080", "", "");
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ(t->address.port, 8080);
    EXPECT_FALSE(t->opts.tls);
    t = http::parse_server_flags("http://localhost:80/", "", "");
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ(t->address.host, "localhost");
    EXPECT_FALSE(t->opts.tls);
    t = http::parse_server_flags("https://[::1]:8443", "", "/etc/ca.pem");
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ(t->address.host, "::1");
    EXPECT_TRUE(t->opts.tls);
    EXPECT_EQ(t->opts.tls_ca_file, "/etc/ca.pem");

    EXPECT_FALSE(http::parse_server_flags("ftp://h:1", "", ""));
    EXPECT_FALSE(http::parse_server_flags("h:1", "", "/etc/ca.pem"));   // a CA without TLS
    EXPECT_FALSE(http::parse_server_flags("http://h:1", "alice", ""));  // a password in clear
    auto no_password = http::parse_server_flags("https://h:1", "alice", "");
    ASSERT_FALSE(no_password);
    EXPECT_NE(no_password.err().message.find("SLUICE_PASSWORD"), std::string::npos);
    ::setenv(http::password_env, "wonderland", 1);
    t = http::parse_server_flags("https://h:1", "alice", "");
    ::unsetenv(http::password_env);
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ(t->opts.auth_user, "alice");
    EXPECT_EQ(t->opts.auth_password, "wonderland");

    t = http::parse_server_flags("https://h:1", "", "", "/c.pem", "/k.pem");
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ(t->opts.tls_cert_file, "/c.pem");
    EXPECT_EQ(t->opts.tls_key_file, "/k.pem");
    EXPECT_FALSE(http::parse_server_flags("http://h:1", "", "", "/c.pem", "/k.pem"));
    EXPECT_FALSE(http::parse_server_flags("https://h:1", "", "", "/c.pem", ""));
}

}  // namespace
}  // namespace sluice::sql

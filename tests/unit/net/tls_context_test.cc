// tls_context: loading, validation and the words of its errors; and what one
// tls_session does with a write.

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net_test_support.h"

namespace sluice::net {
namespace {

using namespace testing;
using auth = tls_settings::client_auth_mode;

std::string create_error(const tls_settings& s) {
    auto r = tls_context::create_server(s);
    return r ? std::string("<created>") : r.err().message;
}

TEST(TlsContext, CreatesServerAndClientContexts) {
    auto srv = tls_context::create_server(pki().server_settings(auth::required));
    ASSERT_TRUE(srv) << srv.err().message;
    EXPECT_TRUE((*srv)->is_server());
    auto cli =
        tls_context::create_client(pki().cert("ca"), pki().cert("client"), pki().key("client"));
    ASSERT_TRUE(cli) << cli.err().message;
    EXPECT_FALSE((*cli)->is_server());
    auto system_store = tls_context::create_client("");
    EXPECT_TRUE(system_store) << system_store.err().message;
}

TEST(TlsContext, MissingCertificateNamesTheFile) {
    auto s = pki().server_settings();
    s.cert_file = pki().path("nope.pem");
    EXPECT_EQ(create_error(s),
              "cannot read certificate " + s.cert_file + ": No such file or directory");
}

TEST(TlsContext, GarbageCertificateNamesTheFile) {
    auto s = pki().server_settings();
    s.cert_file = pki().path("garbage.pem");
    write_file(s.cert_file, "hello\n");
    EXPECT_EQ(create_error(s).rfind("cannot read certificate " + s.cert_file + ": ", 0), 0u)
        << create_error(s);
}

TEST(TlsContext, KeyOfAnotherCertificateIsAMismatch) {
    auto s = pki().server_settings();
    s.key_file = pki().key("server2");
    EXPECT_EQ(create_error(s), "key " + s.key_file + " does not match certificate " + s.cert_file);
}

TEST(TlsContext, EncryptedKeyIsRefusedWithoutPrompting) {
    auto s = pki().server_settings();
    s.key_file = pki().path("encrypted.key");
    std::string cmd = "openssl pkey -in " + pki().key("server1") +
                      " -aes256 -passout pass:x -out " + s.key_file + " >/dev/null 2>&1";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
    EXPECT_EQ(create_error(s),
              "cannot read key " + s.key_file + ": it is encrypted; store it without a passphrase");
}

TEST(TlsContext, ClientAuthNeedsACaFile) {
    auto s = pki().server_settings(auth::required);
    s.client_ca_file.clear();
    EXPECT_EQ(create_error(s), "client authentication needs a client CA file");
    s.client_ca_file = pki().path("missing-ca.pem");
    EXPECT_EQ(create_error(s),
              "cannot read client CA file " + s.client_ca_file + ": No such file or directory");
}

TEST(TlsContext, ServerNeedsCertificateAndKey) {
    tls_settings s;
    EXPECT_EQ(create_error(s), "a TLS server needs a certificate file and a key file");
}

TEST(TlsContext, SessionsNeedTheRightRole) {
    auto cli = must(tls_context::create_client(pki().cert("ca")));
    auto srv = must(tls_context::create_server(pki().server_settings()));
    EXPECT_FALSE(tls_session::accept(*cli, -1));
    EXPECT_FALSE(tls_session::connect(*srv, -1, "localhost"));
    EXPECT_FALSE(tls_session::connect(*cli, -1, ""));
}

// Both ends of a TLS session over a non-blocking socket pair, handshaken in one thread.
struct session_pair {
    int fds[2] = {-1, -1};
    std::unique_ptr<tls_session> server, client;
    explicit session_pair(const tls_context& srv, const tls_context& cli) {
        if (::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0) throw std::runtime_error("socketpair");
        for (int fd : fds) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
        auto s = tls_session::accept(srv, fds[0]);
        auto c = tls_session::connect(cli, fds[1], "localhost");
        if (!s || !c) throw std::runtime_error("cannot start the TLS sessions");
        server = std::move(*s);
        client = std::move(*c);
        for (int i = 0; i < 100 && !(server->handshake_done() && client->handshake_done()); ++i) {
            (void)client->handshake();
            (void)server->handshake();
        }
    }
    ~session_pair() {
        server.reset();
        client.reset();
        for (int fd : fds) ::close(fd);
    }
};

// A write of several records is taken whole in one call (OpenSSL's partial-write mode
// stops after each record; the session goes on, so the records leave together), and
// the peer reads back the same bytes.
TEST(TlsSession, AWriteOfManyRecordsIsTakenWhole) {
    auto srv = must(tls_context::create_server(pki().server_settings()));
    auto cli = must(tls_context::create_client(pki().cert("ca")));
    session_pair pair(*srv, *cli);
    ASSERT_TRUE(pair.server->handshake_done());
    ASSERT_TRUE(pair.client->handshake_done());
    std::string sent(64 * 1024 + 100, '\0');
    for (size_t i = 0; i < sent.size(); ++i) sent[i] = static_cast<char>(i * 131 % 251);
    size_t n = 0;
    ASSERT_EQ(pair.server->write(sent.data(), sent.size(), n), tls_session::status::ok);
    EXPECT_EQ(n, sent.size());
    std::string got;
    char buf[16384];
    for (int i = 0; i < 1000 && got.size() < sent.size(); ++i) {
        if (pair.server->has_unflushed()) (void)pair.server->flush();
        size_t r = 0;
        if (pair.client->read(buf, sizeof buf, r) == tls_session::status::ok) got.append(buf, r);
    }
    ASSERT_EQ(got.size(), sent.size());
    EXPECT_TRUE(got == sent) << "the bytes read back differ from those written";
}

}  // namespace
}  // namespace sluice::net

// net::connection over TLS (and unchanged without it), driven by blocking clients.

#include <openssl/ssl.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <chrono>
#include <random>
#include <thread>

#include "net_test_support.h"

namespace sluice::net {
namespace {

using namespace testing;
using auth = tls_settings::client_auth_mode;

TEST(ConnectionTls, EchoesFramesOverTls) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    auto& s = **c;
    EXPECT_TRUE(s.is_tls());
    EXPECT_EQ(s.peer_common_name(), "sluice-server-1");
    EXPECT_EQ(ask(s, "hello"), "hello");
    EXPECT_EQ(ask(s, "TLS"), "yes");
    EXPECT_EQ(ask(s, ""), "");
    std::string big(3 * 1024 * 1024 + 7, 'x');  // many records, several reads
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + i % 26);
    EXPECT_EQ(ask(s, big), big);
    EXPECT_EQ(ask(s, "CN"), "-");  // no client certificate was asked for
}

TEST(ConnectionTls, ServerNameLocalhostMatchesTheSan) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto c = connect_tls(srv.address(), *trusting_client(), "localhost");
    ASSERT_TRUE(c) << c.err().message;
    EXPECT_EQ(ask(**c, "by name"), "by name");
}

TEST(ConnectionTls, WrongServerNameFailsVerification) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto c = connect_tls(srv.address(), *trusting_client(), "other.example");
    ASSERT_FALSE(c);
    EXPECT_NE(c.err().message.find("certificate verify failed"), std::string::npos)
        << c.err().message;
}

TEST(ConnectionTls, PlaintextPathUnchanged) {
    frame_server srv(nullptr);
    auto s = connect_plain(srv.address());
    EXPECT_FALSE(s->is_tls());
    EXPECT_EQ(ask(*s, "plain"), "plain");
    EXPECT_EQ(ask(*s, "TLS"), "no");
    EXPECT_EQ(ask(*s, "CN"), "-");
}

// Output is written at the end of the loop's iteration: what one handler queues arrives
// whole and in order, and a close right after a send still delivers it.
TEST(ConnectionTls, RepliesQueuedTogetherArriveInOrderAndBeforeAClose) {
    for (bool tls : {false, true}) {
        SCOPED_TRACE(tls ? "TLS" : "plaintext");
        frame_server srv(tls ? must(tls_context::create_server(pki().server_settings())) : nullptr);
        auto c = tls ? connect_tls(srv.address(), *trusting_client())
                     : result<std::unique_ptr<stream_socket>>(connect_plain(srv.address()));
        ASSERT_TRUE(c) << c.err().message;
        auto& s = **c;
        ASSERT_TRUE(write_frame(s, "MANY"));
        EXPECT_EQ(read_frame(s), "1");
        EXPECT_EQ(read_frame(s), "2");
        EXPECT_EQ(read_frame(s), "3");
        EXPECT_EQ(ask(s, "after"), "after");
        EXPECT_EQ(ask(s, "BYE"), "bye");
        EXPECT_EQ(read_frame(s), std::nullopt);  // then the end of the stream
    }
}

// A temporary file with a known pattern, the source of send_file.
struct pattern_file {
    explicit pattern_file(size_t size) : path(pki().path("slice-" + std::to_string(size))) {
        std::mt19937 rng(42);
        data.resize(size);
        for (auto& ch : data) ch = static_cast<char>(rng());
        write_file(path, data);
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    ~pattern_file() { ::close(fd); }
    pattern_file(const pattern_file&) = delete;
    pattern_file& operator=(const pattern_file&) = delete;
    file_slice slice(int64_t offset, size_t size) const { return {nullptr, fd, offset, size}; }

    std::string path;
    std::string data;
    int fd = -1;
};

void expect_file_frames(stream_socket& s, const pattern_file& f, int64_t off, size_t size) {
    // Two file frames back to back, then an echo: the order must hold.
    ASSERT_TRUE(write_frame(s, "FILE"));
    ASSERT_TRUE(write_frame(s, "FILE"));
    ASSERT_TRUE(write_frame(s, "after"));
    for (int i = 0; i < 2; ++i) {
        auto got = read_frame(s);
        ASSERT_TRUE(got);
        ASSERT_EQ(got->size(), size);
        EXPECT_TRUE(*got == f.data.substr(static_cast<size_t>(off), size)) << "frame " << i;
    }
    EXPECT_EQ(read_frame(s), "after");
}

TEST(ConnectionTls, SendFileOverTlsArrivesIntact) {
    pattern_file f(5 * 1024 * 1024);
    const int64_t off = 12345;  // not aligned to the chunk size
    const size_t size = 4 * 1024 * 1024 + 777;
    frame_server srv(must(tls_context::create_server(pki().server_settings())), f.slice(off, size));
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    expect_file_frames(**c, f, off, size);
}

TEST(ConnectionTls, SendFilePlaintextStillWorks) {
    pattern_file f(5 * 1024 * 1024);
    const int64_t off = 4096;
    const size_t size = 4 * 1024 * 1024 + 1;
    frame_server srv(nullptr, f.slice(off, size));
    auto s = connect_plain(srv.address());
    expect_file_frames(*s, f, off, size);
}

TEST(ConnectionTls, ManySmallPipelinedFramesWithPauseAndResume) {
    // The server pauses after every frame, so most frames wait inside OpenSSL's read
    // buffer where epoll cannot see them; only resume_reading() brings them out.
    frame_server srv(must(tls_context::create_server(pki().server_settings())), {}, true);
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    auto& s = **c;
    constexpr int n = 5000;
    std::string burst;
    for (int i = 0; i < n; ++i) burst += frame("m" + std::to_string(i));
    ASSERT_TRUE(s.write_all(burst));  // one write: frames share records
    for (int i = 0; i < n; ++i) {
        auto got = read_frame(s);
        ASSERT_TRUE(got) << "frame " << i;
        ASSERT_EQ(*got, "m" + std::to_string(i));
    }
}

// A large frame that trickles in as many small writes (librdkafka over TLS sends one
// record per message value) with a stall part way: the server waits for the rest of
// the frame before it wakes up (SO_RCVLOWAT) and delivers it intact, and the small
// frame after it still gets its answer, so the mark came back down. A frame far larger
// than the socket buffer must still arrive: epoll wakes when the window fills.
void expect_trickled_frames_arrive(stream_socket& s) {
    std::string big(1024 * 1024 + 13, '\0');
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>('a' + (i * 7) % 26);
    const std::string f = frame(big);
    const std::string_view v(f);
    constexpr size_t first = 300 * 1024;
    ASSERT_TRUE(s.write_all(v.substr(0, first)));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (size_t pos = first; pos < v.size(); pos += 1100)
        ASSERT_TRUE(s.write_all(v.substr(pos, 1100)));
    auto got = read_frame(s);
    ASSERT_TRUE(got) << "no answer to the trickled frame";
    EXPECT_EQ(got->size(), big.size());
    EXPECT_TRUE(*got == big) << "the trickled frame came back changed";
    EXPECT_EQ(ask(s, "small"), "small") << "the frame after a large one got no answer";

    std::string huge(20 * 1024 * 1024, 'h');  // beyond the low-water cap and the socket buffer
    huge.back() = 'z';
    auto echoed = ask(s, huge);
    ASSERT_TRUE(echoed) << "no answer to a 20 MiB frame";
    EXPECT_TRUE(*echoed == huge);
    EXPECT_EQ(ask(s, "after"), "after");
}

TEST(ConnectionTls, TrickledLargeFrameThenSmallOne) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    expect_trickled_frames_arrive(**c);
}

TEST(ConnectionTls, TrickledLargeFrameThenSmallOnePlaintext) {
    frame_server srv(nullptr);
    auto s = connect_plain(srv.address());
    expect_trickled_frames_arrive(*s);
}

// CPU time of the whole process (the server's loop thread included), in ms.
double process_cpu_ms() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    auto ms = [](const timeval& t) { return t.tv_sec * 1000.0 + t.tv_usec / 1000.0; };
    return ms(ru.ru_utime) + ms(ru.ru_stime);
}

// The client half-closes while the server has paused reading: the server must neither
// spin on the half-close meanwhile nor miss it once reading resumes.
void expect_half_close_while_paused_is_quiet(stream_socket& s) {
    ASSERT_EQ(ask(s, "PAUSE"), "paused");
    ASSERT_EQ(::shutdown(s.fd(), SHUT_WR), 0);
    const double before = process_cpu_ms();
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    const double used = process_cpu_ms() - before;
    EXPECT_LT(used, 150.0) << "the paused connection spun on the half-close for " << used
                           << " ms of CPU in 400 ms";
    // Reading resumes after 500 ms, finds the end of the stream and closes.
    EXPECT_FALSE(read_frame(s)) << "the server answered after the client's half-close";
}

TEST(ConnectionTls, HalfCloseWhilePausedDoesNotSpin) {
    frame_server srv(nullptr);
    auto s = connect_plain(srv.address());
    expect_half_close_while_paused_is_quiet(*s);
}

TEST(ConnectionTls, HalfCloseWhilePausedDoesNotSpinOverTls) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    expect_half_close_while_paused_is_quiet(**c);
}

TEST(ConnectionTls, ManyClientsAtOnce) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto ctx = trusting_client();
    std::vector<std::thread> threads;
    threads.reserve(8);
    std::atomic<int> ok{0};
    for (int t = 0; t < 8; ++t) {
        threads.emplace_back([&, t] {
            auto c = connect_tls(srv.address(), *ctx);
            if (!c) return;
            for (int i = 0; i < 200; ++i) {
                std::string msg = std::to_string(t) + ":" + std::to_string(i);
                if (ask(**c, msg) != msg) return;
            }
            ++ok;
        });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(ok.load(), 8);
}

TEST(ConnectionTls, ClientAuthRequiredRejectsMissingAndUntrustedCertificates) {
    frame_server srv(must(tls_context::create_server(pki().server_settings(auth::required))));
    {
        log_capture log;
        // TLS 1.3 clients finish their side before the server checks: the failure
        // shows on the first read at the latest.
        auto c = connect_tls(srv.address(), *trusting_client());
        EXPECT_TRUE(!c || !ask(**c, "no cert"));
        EXPECT_NE(log.wait_for("client sent no certificate")
                      .find("TLS handshake failed: client sent no certificate"),
                  std::string::npos);
    }
    {
        log_capture log;
        auto rogue = must(
            tls_context::create_client(pki().cert("ca"), pki().cert("rogue"), pki().key("rogue")));
        auto c = connect_tls(srv.address(), *rogue);
        EXPECT_TRUE(!c || !ask(**c, "rogue"));
        EXPECT_NE(log.wait_for("certificate verify failed").find("certificate verify failed: "),
                  std::string::npos);
    }
    // The server keeps serving clients that do present a good certificate.
    auto c = connect_tls(srv.address(), *trusting_client("client"));
    ASSERT_TRUE(c) << c.err().message;
    EXPECT_EQ(ask(**c, "with cert"), "with cert");
    EXPECT_EQ(ask(**c, "CN"), "client-alice");
}

TEST(ConnectionTls, ClientAuthRequestedIsOptional) {
    frame_server srv(must(tls_context::create_server(pki().server_settings(auth::requested))));
    auto anon = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(anon) << anon.err().message;
    EXPECT_EQ(ask(**anon, "anon"), "anon");
    EXPECT_EQ(ask(**anon, "CN"), "-");

    auto alice = connect_tls(srv.address(), *trusting_client("client"));
    ASSERT_TRUE(alice) << alice.err().message;
    EXPECT_EQ(ask(**alice, "CN"), "client-alice");

    // A certificate that is sent must still verify.
    auto rogue =
        must(tls_context::create_client(pki().cert("ca"), pki().cert("rogue"), pki().key("rogue")));
    auto r = connect_tls(srv.address(), *rogue);
    EXPECT_TRUE(!r || !ask(**r, "rogue"));
}

TEST(ConnectionTls, PlaintextClientIsToldApartInTheLog) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    log_capture log;
    auto s = connect_plain(srv.address());
    EXPECT_FALSE(ask(*s, "plaintext request"));
    EXPECT_NE(log.wait_for("plaintext").find("peer spoke plaintext to a TLS listener"),
              std::string::npos);
    // Still serving.
    auto c = connect_tls(srv.address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    EXPECT_EQ(ask(**c, "ok"), "ok");
}

TEST(ConnectionTls, TlsClientToPlaintextListenerFails) {
    frame_server srv(nullptr);
    auto c = connect_tls(srv.address(), *trusting_client());
    EXPECT_FALSE(c);
}

// A raw OpenSSL client limited to one protocol version; the handshake result and the
// negotiated cipher.
struct raw_result {
    bool ok = false;
    std::string cipher;
    std::string echoed;
};

raw_result raw_handshake(const host_port& addr, int version, const char* ciphers) {
    raw_result out;
    auto s = connect_plain(addr);
    SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
    SSL_CTX_set_security_level(ctx, 0);  // lets this client offer TLS 1.1 at all
    SSL_CTX_set_min_proto_version(ctx, version);
    SSL_CTX_set_max_proto_version(ctx, version);
    if (ciphers != nullptr) SSL_CTX_set_cipher_list(ctx, ciphers);
    SSL_CTX_load_verify_locations(ctx, pki().cert("ca").c_str(), nullptr);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, s->fd());
    if (SSL_connect(ssl) == 1) {
        out.ok = true;
        out.cipher = SSL_get_cipher_name(ssl);
        std::string req = frame("raw");
        SSL_write(ssl, req.data(), static_cast<int>(req.size()));
        char buf[64];
        int n = SSL_read(ssl, buf, sizeof buf);
        if (n > 4) out.echoed.assign(buf + 4, static_cast<size_t>(n) - 4);
    }
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    return out;
}

TEST(ConnectionTls, Tls11ClientIsRefused) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    log_capture log;
    auto r = raw_handshake(srv.address(), TLS1_1_VERSION, "DEFAULT:@SECLEVEL=0");
    EXPECT_FALSE(r.ok);
    EXPECT_NE(log.wait_for("TLS 1.2 or 1.3").find("TLS handshake failed: peer does not speak"),
              std::string::npos);
}

TEST(ConnectionTls, Tls12UsesModernCiphersOnly) {
    frame_server srv(must(tls_context::create_server(pki().server_settings())));
    auto r = raw_handshake(srv.address(), TLS1_2_VERSION, nullptr);
    ASSERT_TRUE(r.ok);
    EXPECT_EQ(r.cipher.rfind("ECDHE-", 0), 0u) << r.cipher;
    EXPECT_TRUE(r.cipher.find("GCM") != std::string::npos ||
                r.cipher.find("CHACHA20") != std::string::npos)
        << r.cipher;
    EXPECT_EQ(r.echoed, "raw");
    // A client with only CBC suites finds nothing in common.
    log_capture log;
    auto cbc = raw_handshake(srv.address(), TLS1_2_VERSION, "ECDHE-ECDSA-AES128-SHA");
    EXPECT_FALSE(cbc.ok);
    EXPECT_NE(log.wait_for("no cipher suite").find("no cipher suite in common"), std::string::npos);
}

TEST(ConnectionTls, ReloadServesNewCertificateAndKeepsOpenConnections) {
    const auto& p = pki();
    tls_settings s = p.server_settings();
    s.cert_file = p.path("live.pem");
    s.key_file = p.path("live.key");
    write_file(s.cert_file, read_file(p.cert("server1")));
    write_file(s.key_file, read_file(p.key("server1")));
    auto ctx = must(tls_context::create_server(s));
    frame_server srv(ctx);
    auto client = trusting_client();

    auto old_conn = connect_tls(srv.address(), *client);
    ASSERT_TRUE(old_conn) << old_conn.err().message;
    EXPECT_EQ((*old_conn)->peer_common_name(), "sluice-server-1");
    EXPECT_EQ(ask(**old_conn, "before"), "before");

    auto unchanged = ctx->reload_if_changed();
    ASSERT_TRUE(unchanged);
    EXPECT_FALSE(*unchanged);

    // Replace both files, as a certificate renewal would.
    write_file(s.cert_file + ".tmp", read_file(p.cert("server2")));
    write_file(s.key_file + ".tmp", read_file(p.key("server2")));
    std::filesystem::rename(s.cert_file + ".tmp", s.cert_file);
    std::filesystem::rename(s.key_file + ".tmp", s.key_file);
    auto changed = ctx->reload_if_changed();
    ASSERT_TRUE(changed) << changed.err().message;
    EXPECT_TRUE(*changed);

    auto new_conn = connect_tls(srv.address(), *client);
    ASSERT_TRUE(new_conn) << new_conn.err().message;
    EXPECT_EQ((*new_conn)->peer_common_name(), "sluice-server-2");
    EXPECT_EQ(ask(**new_conn, "new"), "new");
    EXPECT_EQ(ask(**old_conn, "old still works"), "old still works");

    // A broken key: the error names the file and the current certificate stays.
    write_file(s.key_file, "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n");
    auto broken = ctx->reload();
    ASSERT_FALSE(broken);
    EXPECT_NE(broken.err().message.find("cannot read key " + s.key_file), std::string::npos)
        << broken.err().message;
    // The failed attempt is not retried until a file changes again.
    auto again = ctx->reload_if_changed();
    ASSERT_TRUE(again);
    EXPECT_FALSE(*again);
    // A key of the other certificate: named as a mismatch.
    write_file(s.key_file, read_file(p.key("server1")));
    auto mismatch = ctx->reload_if_changed();
    ASSERT_FALSE(mismatch);
    EXPECT_NE(mismatch.err().message.find("key " + s.key_file + " does not match certificate " +
                                          s.cert_file),
              std::string::npos)
        << mismatch.err().message;

    auto after = connect_tls(srv.address(), *client);
    ASSERT_TRUE(after) << after.err().message;
    EXPECT_EQ((*after)->peer_common_name(), "sluice-server-2");
    EXPECT_EQ(ask(**after, "after"), "after");
}

}  // namespace
}  // namespace sluice::net

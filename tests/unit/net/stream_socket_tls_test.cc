// stream_socket and blocking_server with TLS started on the socket (as HTTPS and the
// PostgreSQL wire after SSLRequest do).

#include <poll.h>

#include "net_test_support.h"

namespace sluice::net {
namespace {

using namespace testing;
using auth = tls_settings::client_auth_mode;

std::unique_ptr<blocking_server> start_server(blocking_server::handler h) {
    blocking_server::options o;
    o.address = {"127.0.0.1", 0};
    o.name = "test";
    auto s = blocking_server::start(std::move(o), std::move(h));
    if (!s) throw std::runtime_error(s.err().message);
    return std::move(*s);
}

// Starts TLS, then answers frames as frame_server does until the client goes.
blocking_server::handler tls_echo(const std::shared_ptr<tls_context>& ctx,
                                  const std::shared_ptr<std::promise<std::string>>& handshake) {
    return [ctx, handshake](stream_socket& s) {
        auto r = s.start_tls_server(*ctx);
        handshake->set_value(r ? "ok" : r.err().message);
        if (!r) return;
        while (auto f = read_frame(s)) {
            std::string answer = *f == "CN" ? s.peer_common_name().value_or("-") : *f;
            if (!write_frame(s, answer)) return;
        }
    };
}

TEST(StreamSocketTls, RoundTripThroughBlockingServer) {
    auto ctx = must(tls_context::create_server(pki().server_settings(auth::requested)));
    auto done = std::make_shared<std::promise<std::string>>();
    auto fut = done->get_future();
    auto srv = start_server(tls_echo(ctx, done));
    auto c = connect_tls(srv->address(), *trusting_client("client"), "localhost");
    ASSERT_TRUE(c) << c.err().message;
    EXPECT_EQ(fut.get(), "ok");
    EXPECT_TRUE((*c)->is_tls());
    EXPECT_EQ((*c)->peer_common_name(), "sluice-server-1");
    EXPECT_EQ(ask(**c, "select 1"), "select 1");
    EXPECT_EQ(ask(**c, "CN"), "client-alice");
    std::string big(1 << 20, 'q');
    EXPECT_EQ(ask(**c, big), big);
}

TEST(StreamSocketTls, HandshakeErrorsAreReturnedInPlainWords) {
    auto ctx = must(tls_context::create_server(pki().server_settings(auth::required)));
    {
        auto done = std::make_shared<std::promise<std::string>>();
        auto fut = done->get_future();
        auto srv = start_server(tls_echo(ctx, done));
        auto c = connect_tls(srv->address(), *trusting_client());
        EXPECT_TRUE(!c || !ask(**c, "x"));
        EXPECT_EQ(fut.get(), "TLS handshake failed: client sent no certificate");
    }
    {
        auto done = std::make_shared<std::promise<std::string>>();
        auto fut = done->get_future();
        auto srv = start_server(tls_echo(ctx, done));
        auto s = connect_plain(srv->address());
        write_frame(*s, "plaintext");
        EXPECT_EQ(fut.get(), "peer spoke plaintext to a TLS listener");
    }
    {
        // The client side names the problem too: a server certificate from a CA it
        // does not trust (the server sends its root along, hence "self-signed").
        auto done = std::make_shared<std::promise<std::string>>();
        auto srv = start_server(tls_echo(ctx, done));
        auto stranger = must(tls_context::create_client(pki().cert("rogue")));
        auto c = connect_tls(srv->address(), *stranger);
        ASSERT_FALSE(c);
        EXPECT_EQ(c.err().message,
                  "TLS handshake failed: certificate verify failed: self-signed certificate in "
                  "certificate chain");
    }
}

TEST(StreamSocketTls, StopUnblocksATlsRead) {
    auto ctx = must(tls_context::create_server(pki().server_settings()));
    auto read_result = std::make_shared<std::promise<size_t>>();
    auto fut = read_result->get_future();
    auto srv = start_server([ctx, read_result](stream_socket& s) {
        if (!s.start_tls_server(*ctx)) return;
        char buf[16];
        read_result->set_value(s.read_some(buf, sizeof buf));  // blocks: the client is silent
    });
    auto c = connect_tls(srv->address(), *trusting_client());
    ASSERT_TRUE(c) << c.err().message;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    auto t0 = std::chrono::steady_clock::now();
    srv->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
    ASSERT_EQ(fut.wait_for(std::chrono::seconds(0)), std::future_status::ready);
    EXPECT_EQ(fut.get(), 0u);
}

TEST(StreamSocketTls, PeerClosedCountsBytesInsideOpenSsl) {
    auto ctx = must(tls_context::create_server(pki().server_settings()));
    struct seen {
        std::string first, second;
        bool closed_with_pending = true, closed_at_end = false;
    };
    auto out = std::make_shared<std::promise<seen>>();
    auto fut = out->get_future();
    auto srv = start_server([ctx, out](stream_socket& s) {
        seen r;
        if (!s.start_tls_server(*ctx)) return;
        r.first = read_frame(s).value_or("?");
        // Wait until the client's FIN is visible on the socket.
        pollfd pfd{s.fd(), POLLRDHUP, 0};
        ::poll(&pfd, 1, 2000);
        r.closed_with_pending = s.peer_closed();  // the second frame is still unread
        r.second = read_frame(s).value_or("?");
        char b;
        s.read_some(&b, 1);  // consumes close_notify
        r.closed_at_end = s.peer_closed();
        out->set_value(r);
    });
    {
        auto c = connect_tls(srv->address(), *trusting_client());
        ASSERT_TRUE(c) << c.err().message;
        ASSERT_TRUE((*c)->write_all(frame("one") + frame("two")));  // one TLS record
    }  // closes: close_notify, then FIN
    auto r = fut.get();
    EXPECT_EQ(r.first, "one");
    EXPECT_FALSE(r.closed_with_pending);
    EXPECT_EQ(r.second, "two");
    EXPECT_TRUE(r.closed_at_end);
}

TEST(StreamSocketTls, ConnectFailsClearly) {
    // A port with no listener: bind one, note the port, close it.
    auto bs = open_listen_socket({"127.0.0.1", 0}, false);
    ASSERT_TRUE(bs);
    int port = bs->address.port;
    ::close(bs->fd);
    auto r = stream_socket::connect({"127.0.0.1", port}, 1000);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().message,
              "cannot connect to 127.0.0.1:" + std::to_string(port) + ": Connection refused");
}

}  // namespace
}  // namespace sluice::net

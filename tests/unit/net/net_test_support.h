#pragma once

// Shared by the net tests: a throwaway PKI made with the openssl command line, an
// event-loop frame server, a blocking frame client and a capture of log lines.

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>

#include <gtest/gtest.h>

#include "common/endian.h"
#include "common/types.h"
#include "net/blocking_server.h"
#include "net/connection.h"
#include "net/event_loop.h"
#include "net/listener.h"
#include "net/tls.h"

namespace sluice::net::testing {

inline void write_file(const std::string& path, const std::string& data) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Keys and certificates made fresh for each test process (never committed):
//   ca            the CA that signs server and client certificates
//   server1/2     CN sluice-server-1/2, SAN IP:127.0.0.1 and DNS:localhost
//   client        CN client-alice, signed by ca
//   rogue         CN rogue, self-signed (untrusted)
class test_pki {
  public:
    test_pki() {
        char tmpl[] = "/tmp/sluice-net-test-XXXXXX";
        const char* d = ::mkdtemp(tmpl);
        if (d == nullptr) throw std::runtime_error("mkdtemp failed");
        dir = d;
        write_file(path("ca.ext"),
                   "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n");
        write_file(path("server.ext"),
                   "basicConstraints=CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n"
                   "extendedKeyUsage=serverAuth\n");
        write_file(path("client.ext"), "basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n");
        run("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
            " -subj /CN=sluice-test-ca -keyout " +
            path("ca.key") + " -out " + path("ca.pem") +
            " -addext basicConstraints=critical,CA:TRUE"
            " -addext keyUsage=critical,keyCertSign,cRLSign");
        issue("server1", "sluice-server-1", "server.ext", 1001);
        issue("server2", "sluice-server-2", "server.ext", 1002);
        issue("client", "client-alice", "client.ext", 2001);
        run("req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2"
            " -subj /CN=rogue -keyout " +
            path("rogue.key") + " -out " + path("rogue.pem"));
    }
    ~test_pki() {
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
    test_pki(const test_pki&) = delete;
    test_pki& operator=(const test_pki&) = delete;

    std::string path(const std::string& name) const { return dir + "/" + name; }
    std::string cert(const std::string& who) const { return path(who + ".pem"); }
    std::string key(const std::string& who) const { return path(who + ".key"); }

    tls_settings server_settings(
        tls_settings::client_auth_mode auth = tls_settings::client_auth_mode::none) const {
        tls_settings s;
        s.cert_file = cert("server1");
        s.key_file = key("server1");
        s.client_ca_file = cert("ca");
        s.client_auth = auth;
        return s;
    }

    std::string dir;

  private:
    static void run(const std::string& args) {
        std::string cmd = "openssl " + args + " >/dev/null 2>&1";
        if (std::system(cmd.c_str()) != 0) throw std::runtime_error("failed: " + cmd);
    }
    void issue(const std::string& who, const std::string& cn, const std::string& ext, int serial) {
        run("req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj /CN=" + cn +
            " -keyout " + key(who) + " -out " + path(who + ".csr"));
        run("x509 -req -days 2 -in " + path(who + ".csr") + " -CA " + cert("ca") + " -CAkey " +
            key("ca") + " -set_serial " + std::to_string(serial) + " -extfile " + path(ext) +
            " -out " + cert(who));
    }
};

inline const test_pki& pki() {
    static test_pki p;
    return p;
}

inline std::shared_ptr<tls_context> must(result<std::shared_ptr<tls_context>> r) {
    if (!r) throw std::runtime_error(r.err().message);
    return std::move(r).value();
}

inline std::shared_ptr<tls_context> trusting_client(const std::string& who = {}) {
    const auto& p = pki();
    return who.empty() ? must(tls_context::create_client(p.cert("ca")))
                       : must(tls_context::create_client(p.cert("ca"), p.cert(who), p.key(who)));
}

// An event-loop server of length-prefixed frames on 127.0.0.1. It answers
//   "FILE" with one frame whose payload is `file` (sent with send_file),
//   "CN"   with the client's verified common name, or "-",
//   "TLS"  with "yes" or "no",
//   "MANY" with the frames "1", "2" and "3", queued by one handler,
//   "BYE"  with "bye", then closes the connection in the same handler,
// and echoes every other frame.
class frame_server {
  public:
    explicit frame_server(std::shared_ptr<tls_context> tls, file_slice file = {},
                          bool pause_each_frame = false)
        : _tls(std::move(tls)),
          _file(std::move(file)),
          _pause(pause_each_frame),
          _listener(_loop, [this](int fd, std::string peer) { accept(fd, std::move(peer)); }) {
        auto addr = _listener.open({"127.0.0.1", 0});
        if (!addr) throw std::runtime_error(addr.err().message);
        _port = addr->port;
        _thread = std::thread([this] { _loop.run(); });
    }
    ~frame_server() {
        _loop.stop();
        _thread.join();
        _conns.clear();
    }
    frame_server(const frame_server&) = delete;
    frame_server& operator=(const frame_server&) = delete;

    int port() const { return _port; }
    host_port address() const { return {"127.0.0.1", _port}; }

  private:
    void accept(int fd, std::string peer) {
        connection::callbacks cb;
        cb.on_frame = [this](const std::shared_ptr<connection>& c, bytes_view f) {
            on_frame(c, f);
        };
        cb.on_close = [this](const std::shared_ptr<connection>& c) { _conns.erase(c->id()); };
        auto c =
            std::make_shared<connection>(_loop, fd, std::move(peer), 64 << 20, std::move(cb), _tls);
        _conns.emplace(c->id(), c);
        c->start();
    }

    static void reply(const std::shared_ptr<connection>& c, std::string_view s) {
        bytes out(4 + s.size());
        store_be<int32_t>(out.data(), static_cast<int32_t>(s.size()));
        std::copy(s.begin(), s.end(), out.begin() + 4);
        c->send(std::move(out));
    }

    void on_frame(const std::shared_ptr<connection>& c, bytes_view f) {
        std::string_view s(reinterpret_cast<const char*>(f.data()), f.size());
        if (s == "FILE") {
            bytes head(4);
            store_be<int32_t>(head.data(), static_cast<int32_t>(_file.size));
            c->send(std::move(head));
            c->send_file(_file);
        } else if (s == "CN") {
            reply(c, c->peer_common_name().value_or("-"));
        } else if (s == "TLS") {
            reply(c, c->is_tls() ? "yes" : "no");
        } else if (s == "MANY") {
            for (const char* r : {"1", "2", "3"}) reply(c, r);
        } else if (s == "BYE") {
            reply(c, "bye");
            c->close("the client said BYE");
            return;
        } else if (s == "PAUSE") {
            // Reading stops for half a second (as under back-pressure).
            reply(c, "paused");
            c->pause_reading();
            _loop.add_timer(std::chrono::milliseconds(500), [c] { c->resume_reading(); });
            return;
        } else {
            reply(c, s);
        }
        if (_pause) {
            // Reading stops after each frame and resumes a moment later, so that
            // records already inside OpenSSL must be drained by resume_reading().
            c->pause_reading();
            _loop.add_timer(std::chrono::milliseconds(0), [c] { c->resume_reading(); });
        }
    }

    std::shared_ptr<tls_context> _tls;
    file_slice _file;
    bool _pause;
    event_loop _loop;
    listener _listener;
    int _port = 0;
    std::unordered_map<uint64_t, std::shared_ptr<connection>> _conns;  // loop thread only
    std::thread _thread;
};

inline void set_read_timeout(stream_socket& s, int ms) {
    timeval tv{ms / 1000, (ms % 1000) * 1000};
    setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

// A plaintext client connection with a 5 s read timeout, so a broken server fails the
// test instead of hanging it.
inline std::unique_ptr<stream_socket> connect_plain(const host_port& addr) {
    auto s = stream_socket::connect(addr, 2000);
    if (!s) throw std::runtime_error(s.err().message);
    set_read_timeout(**s, 5000);
    return std::move(*s);
}

// A TLS client connection; the error of the handshake when it fails.
inline result<std::unique_ptr<stream_socket>> connect_tls(const host_port& addr,
                                                          const tls_context& ctx,
                                                          const std::string& name = "127.0.0.1") {
    auto s = connect_plain(addr);
    if (auto r = s->start_tls_client(ctx, name); !r) return r.err();
    return s;
}

inline std::string frame(std::string_view payload) {
    std::string out(4, '\0');
    store_be<int32_t>(reinterpret_cast<uint8_t*>(out.data()), static_cast<int32_t>(payload.size()));
    out.append(payload);
    return out;
}

inline bool write_frame(stream_socket& s, std::string_view payload) {
    return s.write_all(frame(payload));
}

inline std::optional<std::string> read_frame(stream_socket& s) {
    uint8_t len[4];
    if (!s.read_exact(len, 4)) return std::nullopt;
    std::string out(static_cast<size_t>(load_be<int32_t>(len)), '\0');
    if (!out.empty() && !s.read_exact(out.data(), out.size())) return std::nullopt;
    return out;
}

// One frame out, its answer back.
inline std::optional<std::string> ask(stream_socket& s, std::string_view payload) {
    if (!write_frame(s, payload)) return std::nullopt;
    return read_frame(s);
}

// Redirects stderr (where log lines go) to a file while alive.
class log_capture {
  public:
    log_capture() : _path(pki().path("log-" + std::to_string(++_n))) {
        std::fflush(stderr);
        _saved = ::dup(2);
        int fd = ::open(_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ::dup2(fd, 2);
        ::close(fd);
    }
    ~log_capture() {
        std::fflush(stderr);
        ::dup2(_saved, 2);
        ::close(_saved);
    }
    log_capture(const log_capture&) = delete;
    log_capture& operator=(const log_capture&) = delete;

    // Waits up to 5 s for a line containing `text`; returns the whole log.
    std::string wait_for(const std::string& text) const {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        std::string log;
        do {
            std::fflush(stderr);
            log = read_file(_path);
            if (log.find(text) != std::string::npos) return log;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        } while (std::chrono::steady_clock::now() < until);
        return log;
    }

  private:
    static inline int _n = 0;
    std::string _path;
    int _saved = -1;
};

}  // namespace sluice::net::testing

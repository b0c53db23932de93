#pragma once

// A deliberately separate, tiny HTTP/1.1 client over a raw socket for the server tests:
// it sends any bytes (garbage included) and parses responses on its own, so that the
// server is not checked against its own parser.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>

namespace sluice::testing {

struct http_reply {
    int status = 0;
    std::map<std::string, std::string> headers;  // lower-case names, last one wins
    std::string body;                            // de-chunked
    bool chunked = false;
    std::string header(const std::string& name) const {
        auto it = headers.find(name);
        return it == headers.end() ? std::string() : it->second;
    }
};

class test_conn {
  public:
    explicit test_conn(int port, int timeout_ms = 10000) {
        _fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        setsockopt(_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(_fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        _connected = ::connect(_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ~test_conn() { close(); }
    test_conn(const test_conn&) = delete;
    test_conn& operator=(const test_conn&) = delete;

    bool connected() const { return _connected; }
    void close() {
        if (_fd >= 0) ::close(_fd);
        _fd = -1;
    }
    // Closes with RST rather than FIN (SO_LINGER 0).
    void reset() {
        linger l{1, 0};
        setsockopt(_fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        close();
    }

    bool send(const std::string& data) {
        size_t off = 0;
        while (off < data.size()) {
            ssize_t n = ::send(_fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
            if (n <= 0) return false;
            off += static_cast<size_t>(n);
        }
        return true;
    }

    // A request with Host and Content-Length.
    bool request(const std::string& method, const std::string& target, const std::string& body = {},
                 const std::string& extra_headers = {}) {
        std::string r = method + " " + target + " HTTP/1.1\r\nHost: test\r\n" + extra_headers;
        if (!body.empty() || method == "POST")
            r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
        return send(r + "\r\n" + body);
    }

    // `head_only` for the answer to a HEAD request (no body, whatever the headers say).
    std::optional<http_reply> read_reply(bool head_only = false) {
        http_reply rep;
        while (_buf.find("\r\n\r\n") == std::string::npos)
            if (!fill()) return std::nullopt;
        size_t end = _buf.find("\r\n\r\n");
        std::string head = _buf.substr(0, end);
        _buf.erase(0, end + 4);
        if (head.size() < 12 || head.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
        rep.status = std::atoi(head.substr(9, 3).c_str());
        size_t pos = head.find("\r\n");
        while (pos != std::string::npos) {
            size_t next = head.find("\r\n", pos + 2);
            std::string line = head.substr(
                pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
            auto colon = line.find(':');
            if (colon != std::string::npos) {
                std::string k = line.substr(0, colon);
                for (auto& c : k)
                    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
                std::string v = line.substr(colon + 1);
                while (!v.empty() && v.front() == ' ') v.erase(0, 1);
                rep.headers[k] = v;
            }
            pos = next;
        }
        if (rep.status == 100) return read_reply(head_only);
        if (head_only) return rep;
        if (rep.header("transfer-encoding") == "chunked") {
            rep.chunked = true;
            for (;;) {
                std::string line;
                if (!read_line(line)) return std::nullopt;
                size_t size = std::strtoul(line.c_str(), nullptr, 16);
                if (size == 0) {
                    if (!read_line(line)) return std::nullopt;  // no trailers expected
                    break;
                }
                if (!read_n(rep.body, size)) return std::nullopt;
                if (!read_line(line) || !line.empty()) return std::nullopt;
            }
        } else if (!rep.header("content-length").empty()) {
            if (!read_n(rep.body, std::stoul(rep.header("content-length")))) return std::nullopt;
        } else {
            while (fill()) {
            }
            rep.body = std::move(_buf);
            _buf.clear();
        }
        return rep;
    }

    // Whether the server closes the connection within `ms` (reading and dropping bytes).
    bool closed_within(int ms) {
        auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
        while (std::chrono::steady_clock::now() < until) {
            pollfd p{_fd, POLLIN, 0};
            if (::poll(&p, 1, 50) > 0) {
                char b[4096];
                ssize_t n = ::recv(_fd, b, sizeof b, 0);
                if (n <= 0) return true;
            }
        }
        return false;
    }

  private:
    bool fill() {
        char b[16384];
        ssize_t n = ::recv(_fd, b, sizeof b, 0);
        if (n <= 0) return false;
        _buf.append(b, static_cast<size_t>(n));
        return true;
    }
    bool read_line(std::string& line) {
        size_t p;
        while ((p = _buf.find("\r\n")) == std::string::npos)
            if (!fill()) return false;
        line = _buf.substr(0, p);
        _buf.erase(0, p + 2);
        return true;
    }
    bool read_n(std::string& out, size_t n) {
        while (_buf.size() < n)
            if (!fill()) return false;
        out.append(_buf, 0, n);
        _buf.erase(0, n);
        return true;
    }

    int _fd = -1;
    bool _connected = false;
    std::string _buf;
};

}  // namespace sluice::testing

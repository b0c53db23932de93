#include "app/admin_client.h"

#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/endian.h"

namespace sluice::app {

admin_client::~admin_client() {
    if (_fd >= 0) ::close(_fd);
}

result<void> admin_client::connect(const net::host_port& addr, int timeout_ms) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    std::string port = std::to_string(addr.port);
    if (int rc = getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res); rc != 0)
        return {errc::invalid_argument, "cannot resolve " + addr.host + ": " + gai_strerror(rc)};
    std::string err = "no address";
    for (auto* ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
        if (fd < 0) continue;
        timeval tv{timeout_ms / 1000, (timeout_ms % 1000) * 1000};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (::connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            _fd = fd;
            freeaddrinfo(res);
            return {};
        }
        err = std::strerror(errno);
        ::close(fd);
    }
    freeaddrinfo(res);
    return {errc::io_error, "cannot connect to " + addr.to_string() + ": " + err};
}

namespace {
bool read_full(int fd, uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t r = ::recv(fd, p, n, 0);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            return false;
        }
        p += r;
        n -= static_cast<size_t>(r);
    }
    return true;
}
}  // namespace

result<bytes> admin_client::round_trip(bytes frame, protocol::api_key key, int16_t version) {
    if (_fd < 0) return {errc::io_error, "not connected"};
    store_be<int32_t>(frame.data(), static_cast<int32_t>(frame.size() - 4));
    size_t off = 0;
    while (off < frame.size()) {
        ssize_t n = ::send(_fd, frame.data() + off, frame.size() - off, MSG_NOSIGNAL);
        if (n <= 0) return {errc::io_error, std::string("send: ") + std::strerror(errno)};
        off += static_cast<size_t>(n);
    }
    uint8_t size_buf[4];
    if (!read_full(_fd, size_buf, 4))
        return {errc::io_error, "the broker closed the connection or timed out"};
    auto size = load_be<int32_t>(size_buf);
    if (size < 4) return {errc::corrupt, "response too short"};
    bytes resp(static_cast<size_t>(size));
    if (!read_full(_fd, resp.data(), resp.size())) return {errc::io_error, "short response"};
    protocol::reader r(resp);
    int32_t corr = r.fixed<int32_t>();
    if (corr != _correlation) return {errc::corrupt, "response correlation id does not match"};
    if (protocol::response_header_has_tags(static_cast<int16_t>(key), version)) {
        uint32_t n = r.uvarint();
        for (uint32_t i = 0; i < n && r.ok(); ++i) {
            r.uvarint();
            r.raw(r.uvarint());
        }
    }
    if (!r.ok()) return {errc::corrupt, "malformed response header"};
    return bytes(resp.begin() + static_cast<ptrdiff_t>(r.position()), resp.end());
}

}  // namespace sluice::app

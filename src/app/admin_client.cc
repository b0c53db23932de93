#include "app/admin_client.h"

#include <cerrno>
#include <cstring>

#include "common/endian.h"

namespace sluice::app {

admin_client::admin_client() = default;
admin_client::~admin_client() = default;

result<void> admin_client::connect(const net::host_port& addr, int timeout_ms) {
    auto sock = net::stream_socket::connect(addr, timeout_ms);
    if (!sock) return sock.err();
    // The same bound for every answer: a broker that stops responding fails the command.
    (*sock)->set_read_timeout(std::chrono::milliseconds(timeout_ms));
    (*sock)->set_write_timeout(std::chrono::milliseconds(timeout_ms));
    _sock = std::move(*sock);
    return {};
}

result<bytes> admin_client::round_trip(bytes frame, protocol::api_key key, int16_t version) {
    if (!_sock) return {errc::io_error, "not connected"};
    store_be<int32_t>(frame.data(), static_cast<int32_t>(frame.size() - 4));
    if (!_sock->write_all(frame.data(), frame.size()))
        return {errc::io_error, std::string("send: ") + std::strerror(errno)};
    uint8_t size_buf[4];
    if (!_sock->read_exact(size_buf, 4))
        return {errc::io_error, "the broker closed the connection or timed out"};
    auto size = load_be<int32_t>(size_buf);
    if (size < 4) return {errc::corrupt, "response too short"};
    bytes resp(static_cast<size_t>(size));
    if (!_sock->read_exact(resp.data(), resp.size())) return {errc::io_error, "short response"};
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

#include "net/connection.h"

#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/endian.h"
#include "common/logging.h"

namespace sluice::net {
namespace {
std::atomic<uint64_t> g_next_id{1};
constexpr size_t read_chunk = 256 * 1024;
constexpr int max_iov = 64;
}  // namespace

connection::connection(event_loop& loop, int fd, std::string peer, size_t max_frame_bytes,
                       callbacks cb)
    : _loop(loop),
      _fd(fd),
      _peer(std::move(peer)),
      _max_frame(max_frame_bytes),
      _cb(std::move(cb)),
      _id(g_next_id++) {}

connection::~connection() {
    if (_fd >= 0) ::close(_fd);
}

void connection::start() { _loop.watch(_fd, EPOLLIN | EPOLLRDHUP, this); }

void connection::update_interest() {
    if (_fd < 0) return;
    uint32_t ev = EPOLLRDHUP;
    if (!_paused) ev |= EPOLLIN;
    if (_want_write) ev |= EPOLLOUT;
    _loop.modify(_fd, ev, this);
}

void connection::pause_reading() {
    if (_paused) return;
    _paused = true;
    update_interest();
}

void connection::resume_reading() {
    if (!_paused || _fd < 0) return;
    _paused = false;
    update_interest();
    // Frames may already sit in the buffer from before the pause.
    auto self = shared_from_this();
    _loop.post([self] {
        if (!self->closed() && !self->_paused) self->parse_frames();
    });
}

void connection::on_io(uint32_t events) {
    auto self = shared_from_this();  // callbacks may drop the last outside reference
    if (events & (EPOLLERR | EPOLLHUP)) {
        close("socket error or hang-up");
        return;
    }
    if (events & EPOLLOUT) do_write();
    if ((events & (EPOLLIN | EPOLLRDHUP)) && !_paused && _fd >= 0) do_read();
}

void connection::do_read() {
    for (;;) {
        if (_in.size() - _in_start < read_chunk) {
            // Compact before growing so the buffer does not creep.
            if (_in_start > 0) {
                _in.erase(_in.begin(), _in.begin() + static_cast<ptrdiff_t>(_in_start));
                _in_start = 0;
            }
        }
        size_t have = _in.size();
        _in.resize(have + read_chunk);
        ssize_t n = ::recv(_fd, _in.data() + have, read_chunk, 0);
        if (n > 0) {
            _in.resize(have + static_cast<size_t>(n));
            parse_frames();
            if (_fd < 0 || _paused) return;
            if (static_cast<size_t>(n) < read_chunk) return;
            continue;
        }
        _in.resize(have);
        if (n == 0) {
            close("peer closed the connection");
            return;
        }
        if (errno == EAGAIN || errno == EWOULDBLOCK) return;
        if (errno == EINTR) continue;
        close(std::string("read error: ") + std::strerror(errno));
        return;
    }
}

void connection::parse_frames() {
    auto self = shared_from_this();
    while (_fd >= 0 && !_paused) {
        size_t avail = _in.size() - _in_start;
        if (avail < 4) break;
        auto size = load_be<int32_t>(_in.data() + _in_start);
        if (size < 0 || static_cast<size_t>(size) > _max_frame) {
            close("frame size " + std::to_string(size) + " outside 0.." +
                  std::to_string(_max_frame));
            return;
        }
        if (avail < 4 + static_cast<size_t>(size)) break;
        bytes_view frame(_in.data() + _in_start + 4, static_cast<size_t>(size));
        _in_start += 4 + static_cast<size_t>(size);
        _cb.on_frame(self, frame);
    }
    if (_in_start == _in.size()) {
        _in.clear();
        _in_start = 0;
    }
}

void connection::send(bytes data) {
    if (_fd < 0 || data.empty()) return;
    _queued += data.size();
    _out.push_back({std::move(data), {}});
    if (!_want_write) do_write();
}

void connection::send_file(file_slice slice) {
    if (_fd < 0 || slice.size == 0) return;
    _queued += slice.size;
    _out.push_back({{}, std::move(slice)});
    if (!_want_write) do_write();
}

// Sends from the front file chunk; false when the socket is full or closed.
bool connection::write_file_chunk() {
    auto& f = _out.front().file;
    off_t off = f.offset + static_cast<off_t>(_out_offset);
    size_t left = f.size - _out_offset;
    ssize_t n = ::sendfile(_fd, f.fd, &off, left);
    if (n < 0) {
        if (errno == EINTR) return true;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return false;
        close(std::string("sendfile error: ") + std::strerror(errno));
        return false;
    }
    if (n == 0) {  // the file is shorter than promised: never expected, never spin
        close("sendfile reached the end of the file early");
        return false;
    }
    _queued -= static_cast<size_t>(n);
    _out_offset += static_cast<size_t>(n);
    if (_out_offset == f.size) {
        _out.pop_front();
        _out_offset = 0;
    }
    return true;
}

void connection::do_write() {
    while (!_out.empty() && _fd >= 0) {
        if (_out.front().data.empty()) {
            if (write_file_chunk()) continue;
            if (_fd < 0) return;
            break;
        }
        iovec iov[max_iov];
        int cnt = 0;
        size_t first_off = _out_offset;
        for (auto it = _out.begin(); it != _out.end() && cnt < max_iov && !it->data.empty();
             ++it, ++cnt) {
            iov[cnt].iov_base = it->data.data() + first_off;
            iov[cnt].iov_len = it->data.size() - first_off;
            first_off = 0;
        }
        msghdr msg{};
        msg.msg_iov = iov;
        msg.msg_iovlen = static_cast<size_t>(cnt);
        ssize_t n = ::sendmsg(_fd, &msg, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            close(std::string("write error: ") + std::strerror(errno));
            return;
        }
        auto left = static_cast<size_t>(n);
        _queued -= left;
        while (left > 0) {
            size_t rest = _out.front().size() - _out_offset;
            if (left >= rest) {
                left -= rest;
                _out.pop_front();
                _out_offset = 0;
            } else {
                _out_offset += left;
                left = 0;
            }
        }
    }
    bool want = !_out.empty();
    if (want != _want_write && _fd >= 0) {
        _want_write = want;
        update_interest();
    }
}

void connection::close(const std::string& reason) {
    if (_fd < 0) return;
    log_debug("net", "connection {} from {} closed: {}", _id, _peer, reason);
    _loop.unwatch(_fd);
    ::close(_fd);
    _fd = -1;
    _out.clear();
    auto self = shared_from_this();
    // Deferred so that a pending epoll event for this handler finds it alive.
    _loop.post([self] {
        if (self->_cb.on_close) self->_cb.on_close(self);
    });
}

}  // namespace sluice::net

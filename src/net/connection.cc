#include "net/connection.h"

#include <sys/epoll.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "common/endian.h"
#include "common/logging.h"
#include "net/log_throttle.h"

namespace sluice::net {
namespace {
std::atomic<uint64_t> g_next_id{1};
constexpr size_t read_chunk = 256 * 1024;
constexpr int max_iov = 64;
// One TLS read event takes at most this much before parsing frames: four full records.
constexpr size_t tls_read_chunk = 64 * 1024;
// The largest plaintext of one TLS record: SSL_read never returns more at once.
constexpr size_t tls_record_bytes = 16 * 1024;
// Plaintext handed to one SSL_write: small queued chunks coalesce up to it and files
// are read (pread) in pieces of it. Four full records; it bounds a TLS connection's
// extra memory whatever the size of a file slice.
constexpr size_t tls_out_capacity = 64 * 1024;
// The rest of a frame that is worth a receive low-water mark (see update_rcvlowat).
constexpr size_t rcvlowat_min = 64 * 1024;
constexpr size_t rcvlowat_max = 8 * 1024 * 1024;
// Ciphertext OpenSSL may hold undecrypted when a read stops: under one full record.
constexpr size_t tls_held_max = 32 * 1024;
// Frames up to one read's size take the request budget ahead of the larger ones waiting
// in line (settle_budget): small requests are served while large ones wait.
constexpr size_t small_frame_max = read_chunk;
// The "request budget spent" line is logged at most this often.
constexpr std::chrono::seconds budget_log_interval{10};
}  // namespace

connection::connection(event_loop& loop, int fd, std::string peer, size_t max_frame_bytes,
                       callbacks cb, std::shared_ptr<tls_context> tls,
                       std::shared_ptr<byte_budget> budget)
    : _loop(loop),
      _fd(fd),
      _peer(std::move(peer)),
      _max_frame(max_frame_bytes),
      _cb(std::move(cb)),
      _id(g_next_id++),
      _budget(std::move(budget)),
      _tls_ctx(std::move(tls)) {}

connection::~connection() {
    drop_budget();
    if (_fd >= 0) ::close(_fd);
}

void connection::start() {
    active();
    if (_idle_timeout.count() > 0) arm_idle_check(_idle_timeout);
    if (_tls_ctx) {
        auto s = tls_session::accept(*_tls_ctx, _fd);
        if (!s) {
            fail(s.err().message);
            return;
        }
        _tls = std::move(*s);
        _tls_interest = EPOLLIN | EPOLLRDHUP;
    }
    _loop.watch(_fd, EPOLLIN | EPOLLRDHUP, this);
}

std::optional<std::string> connection::peer_common_name() const {
    if (!_tls) return std::nullopt;
    return _tls->peer_common_name();
}

void connection::update_interest() {
    if (_fd < 0) return;
    uint32_t ev = 0;
    if (_tls) {
        // OpenSSL decides which readiness it needs: a read may have to write (and a
        // write read) to make progress.
        if (!_tls->handshake_done()) {
            ev |= _handshake_wants_write ? EPOLLOUT : EPOLLIN;
        } else {
            if (!read_stopped() || _write_wants_read) ev |= EPOLLIN;
            if ((_want_write && !_write_wants_read) || _read_wants_write) ev |= EPOLLOUT;
        }
    } else {
        if (!read_stopped()) ev |= EPOLLIN;
        if (_want_write) ev |= EPOLLOUT;
    }
    // A half-close is news only to a reader. Watched while reading is paused, it would
    // be reported by every epoll_wait (level-triggered) with nothing to do about it: a
    // busy loop until reading resumes and finds the end of the stream.
    if (ev & EPOLLIN) ev |= EPOLLRDHUP;
    if (_tls) {
        if (ev == _tls_interest) return;  // TLS updates often; skip needless epoll_ctl
        _tls_interest = ev;
    }
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
        if (self->closed() || self->_paused) return;
        self->parse_frames();
        self->drain_tls_pending();
    });
}

void connection::drain_tls_pending() {
    // Records OpenSSL already holds raise no epoll event: drain them here.
    if (_tls && !closed() && !read_stopped() && _tls->handshake_done() && _tls->has_pending())
        do_tls_read();
    update_rcvlowat();
}

void connection::on_io(uint32_t events) {
    auto self = shared_from_this();  // callbacks may drop the last outside reference
    if (events & (EPOLLERR | EPOLLHUP)) {
        close("socket error or hang-up");
        return;
    }
    if (_tls) {
        on_tls_io(events);
    } else {
        if (events & EPOLLOUT) do_write();
        if ((events & (EPOLLIN | EPOLLRDHUP)) && !read_stopped() && _fd >= 0) do_read();
    }
    update_rcvlowat();
}

// While the rest of a large frame is on its way, wake up only when all of it is there,
// not for every segment: a TLS client that writes one small record per message
// otherwise costs a wake-up, an epoll_wait and a recv every kilobyte or two. The kernel
// caps the mark, and epoll still reports readable when the receive window fills, when
// the peer closes and on errors, so a wrong guess only costs a wake-up. Back to 1
// as soon as no frame is partly read.
void connection::update_rcvlowat() {
    if (_fd < 0) return;
    size_t want = 1;
    const size_t avail = _in.size() - _in_start;
    const bool reading = !read_stopped() && !_write_wants_read && (!_tls || _tls->handshake_done());
    if (reading && avail >= 4) {
        // parse_frames leaves only an incomplete frame of an accepted size.
        const auto size = static_cast<size_t>(load_be<int32_t>(_in.data() + _in_start));
        const size_t rest = 4 + size - avail;
        // Ciphertext is never shorter than its plaintext, but part of the rest may
        // already sit in OpenSSL's buffer rather than in the socket.
        const size_t held = _tls ? tls_held_max : 0;
        if (rest >= held + rcvlowat_min) want = std::min(rest - held, rcvlowat_max);
    }
    // A lower mark than the rest only wakes us early; a higher one must come down.
    if (want == _rcvlowat || (want > 1 && _rcvlowat > 1 && _rcvlowat < want)) return;
    int v = static_cast<int>(want);
    if (::setsockopt(_fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) == 0) _rcvlowat = want;
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
            active();
            if (_budgeted > 0) _last_progress = _last_activity;
            parse_frames();
            if (_fd < 0 || read_stopped()) return;
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
        if (!fits_budget(static_cast<size_t>(size))) return;
        if (avail < 4 + static_cast<size_t>(size)) break;
        std::span<uint8_t> frame(_in.data() + _in_start + 4, static_cast<size_t>(size));
        _in_start += 4 + static_cast<size_t>(size);
        _cb.on_frame(self, frame);
    }
    if (_in_start == _in.size()) {
        _in.clear();
        _in_start = 0;
    }
    settle_budget();
}

void connection::send(bytes data) {
    if (_fd < 0 || data.empty()) return;
    _queued += data.size();
    _out.push_back({std::move(data), {}});
    schedule_flush();
}

void connection::send_file(file_slice slice) {
    if (_fd < 0 || slice.size == 0) return;
    _queued += slice.size;
    _out.push_back({{}, std::move(slice)});
    schedule_flush();
}

void connection::schedule_flush() {
    // A full socket is written again on EPOLLOUT.
    if (_want_write || _flush_pending) return;
    _flush_pending = true;
    _loop.defer_flush(shared_from_this());
}

void connection::on_flush() {
    _flush_pending = false;
    if (_fd < 0 || _want_write) return;
    if (!_tls) {
        do_write();
    } else if (_tls->handshake_done()) {
        do_tls_write();
    }
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
    active();
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
        active();
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
    // What was queued before the close goes out as far as the socket takes it now, as
    // it did when sends wrote at once (a last error response, a drained shutdown).
    if (_flush_pending) {
        on_flush();
        if (_fd < 0) return;
    }
    log_debug("net", "connection {} from {} closed: {}", _id, _peer, reason);
    _loop.unwatch(_fd);
    if (_tls) _tls->close_notify();
    ::close(_fd);
    _fd = -1;
    _out.clear();
    drop_budget();
    if (_idle_timer != 0) _loop.cancel_timer(std::exchange(_idle_timer, 0));
    _tls_out = bytes{};
    _tls_out_pos = _tls_out_len = 0;
    auto self = shared_from_this();
    // Deferred so that a pending epoll event for this handler finds it alive.
    _loop.post([self] {
        if (self->_cb.on_close) self->_cb.on_close(self);
    });
}

void connection::fail(const std::string& reason) {
    log_info("net", "connection {} from {}: {}", _id, _peer, reason);
    close(reason);
}

// --- The request budget -------------------------------------------------------------------

bool connection::fits_budget(size_t size) {
    if (!_budget || 4 + size <= _budget->capacity()) return true;
    // It could never be granted: refused as an oversized frame is, rather than waited for.
    log_warn("net",
             "connection {} from {}: request of {} bytes is larger than the whole request "
             "budget of {} bytes (--queued-max-request-bytes); closing",
             _id, _peer, size, _budget->capacity());
    close("request larger than the request budget");
    return false;
}

// Invariant: a partly read frame (its size known) holds its whole size from the budget
// (_budgeted), or waits for it with reading stopped, its bytes read so far counted in the
// budget's waiting room (_held_waiting); none holds nothing. A frame granted its bytes
// can always be read to its end, so frames waiting on each other cannot deadlock, and
// what waits holds at most one read's worth, all of them together at most the capacity.
void connection::settle_budget() {
    if (!_budget || _fd < 0 || _budget_wait) return;
    size_t want = 0;
    const size_t avail = _in.size() - _in_start;
    if (avail >= 4) want = 4 + static_cast<size_t>(load_be<int32_t>(_in.data() + _in_start));
    if (want == _budgeted) return;  // the same frame is still being read, or none
    // The stall timer stays armed, and finds nothing held when it fires.
    if (_budgeted > 0) _budget->release(std::exchange(_budgeted, 0));
    if (want == 0) {
        // A large frame's buffer goes back rather than staying with an idle connection.
        if (_in.capacity() > 2 * read_chunk && _in.size() - _in_start <= read_chunk) {
            raw_buffer(_in.begin() + static_cast<ptrdiff_t>(_in_start), _in.end()).swap(_in);
            _in_start = 0;
        }
        return;
    }
    // A frame of at most one read's size needs one more read at most: it goes ahead of
    // the larger ones waiting, so that small requests keep their latency.
    if (want <= small_frame_max ? _budget->try_acquire_small(want) : _budget->try_acquire(want))
        return take_budget(want);
    if (!_budget->try_hold_waiting(avail)) {
        static log_throttle full(budget_log_interval);
        if (uint64_t quiet = 0; full.allow(quiet))
            log_warn("net",
                     "request budget spent, and requests waiting for it hold {} bytes already "
                     "read (as much as the budget, {} bytes): connection {} from {} closed ({} "
                     "more such closes since the last line)",
                     _budget->held_waiting(), _budget->capacity(), _id, _peer, quiet);
        close("request budget and its waiting room spent");
        return;
    }
    _held_waiting = avail;
    _budget_wait = true;
    update_interest();
    static log_throttle throttle(budget_log_interval);
    if (uint64_t quiet = 0; throttle.allow(quiet))
        log_warn("net",
                 "request budget spent: {} of {} bytes held by requests being read, {} "
                 "connections waiting; connection {} from {} stops reading until {} bytes "
                 "free ({} more such pauses since the last line)",
                 _budget->used(), _budget->capacity(), _budget->waiting() + 1, _id, _peer, want,
                 quiet);
    std::weak_ptr<connection> weak = shared_from_this();
    _budget_waiter = _budget->wait(want, [weak, want] {
        if (auto self = weak.lock()) self->on_budget_granted(want);
    });
}

void connection::take_budget(size_t frame) {
    _budgeted = frame;
    _last_progress = event_loop::clock::now();
    // One timer per connection at most: a frame taken while it runs is checked when it
    // fires (from _last_progress), so small frames cost no timer each.
    if (_stall_timeout.count() > 0 && _stall_timer == 0) arm_stall_check(_stall_timeout);
    // The whole frame in one allocation, without the copies of growing by doubling.
    if (_in_start > 0) {
        _in.erase(_in.begin(), _in.begin() + static_cast<ptrdiff_t>(_in_start));
        _in_start = 0;
    }
    _in.reserve(frame + read_chunk);
}

void connection::on_budget_granted(size_t frame) {
    _budget_waiter = 0;
    _budget_wait = false;
    _budget->release_waiting(std::exchange(_held_waiting, 0));
    if (_fd < 0) {
        _budget->release(frame);
        return;
    }
    take_budget(frame);
    update_interest();
    // Runs from another connection's release: read on a turn of our own.
    auto self = shared_from_this();
    _loop.post([self] { self->drain_tls_pending(); });
}

void connection::drop_budget() {
    if (!_budget) return;
    cancel_stall_check();
    if (_budget_wait) _budget->cancel(_budget_waiter);
    _budget_wait = false;
    _budget->release_waiting(std::exchange(_held_waiting, 0));
    if (_budgeted > 0) _budget->release(std::exchange(_budgeted, 0));
}

void connection::arm_stall_check(std::chrono::milliseconds delay) {
    std::weak_ptr<connection> weak = weak_from_this();
    _stall_timer = _loop.add_timer(delay, [weak] {
        if (auto self = weak.lock()) self->check_stall();
    });
}

void connection::cancel_stall_check() {
    if (_stall_timer != 0) _loop.cancel_timer(std::exchange(_stall_timer, 0));
}

void connection::check_stall() {
    _stall_timer = 0;
    if (_fd < 0 || _budgeted == 0) return;
    const auto now = event_loop::clock::now();
    // Paused by the session (requests in flight): the wait is ours, not the client's.
    if (_paused) _last_progress = now;
    const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(now - _last_progress);
    if (idle < _stall_timeout) return arm_stall_check(_stall_timeout - idle);
    log_warn("net",
             "connection {} from {}: no bytes of its {}-byte request for {} ms while it holds "
             "that much of the request budget; closing",
             _id, _peer, _budgeted, idle.count());
    close("request stalled while holding the request budget");
}

void connection::arm_idle_check(std::chrono::milliseconds delay) {
    std::weak_ptr<connection> weak = weak_from_this();
    _idle_timer = _loop.add_timer(delay, [weak] {
        if (auto self = weak.lock()) self->check_idle();
    });
}

void connection::check_idle() {
    _idle_timer = 0;
    if (_fd < 0) return;
    const auto idle = std::chrono::duration_cast<std::chrono::milliseconds>(
        event_loop::clock::now() - _last_activity);
    if (idle < _idle_timeout) return arm_idle_check(_idle_timeout - idle);
    log_info("net",
             "connection {} from {}: no bytes read or written for {} ms "
             "(--connections-max-idle-ms); closing",
             _id, _peer, idle.count());
    close("idle");
}

// --- TLS ----------------------------------------------------------------------------------

void connection::on_tls_io(uint32_t events) {
    if (!_tls->handshake_done()) {
        if (!do_handshake()) return;
        // Application data may have come with the client's last handshake flight.
        do_tls_read();
        if (_fd >= 0 && (!_out.empty() || _tls_out_pos < _tls_out_len)) do_tls_write();
        return;
    }
    const bool readable = (events & (EPOLLIN | EPOLLRDHUP)) != 0;
    const bool writable = (events & EPOLLOUT) != 0;
    if ((writable && !_write_wants_read) || (readable && _write_wants_read)) do_tls_write();
    if (_fd < 0 || read_stopped()) return;
    if (readable || (writable && _read_wants_write) || _tls->has_pending()) do_tls_read();
}

// True once the handshake is complete; false while it waits or after it failed (the
// connection is then closed).
bool connection::do_handshake() {
    switch (_tls->handshake()) {
        case tls_session::status::ok:
            log_debug("net", "connection {} from {}: {}", _id, _peer, _tls->description());
            _handshake_wants_write = false;
            update_interest();
            return true;
        case tls_session::status::want_read:
            if (_handshake_wants_write) {
                _handshake_wants_write = false;
                update_interest();
            }
            return false;
        case tls_session::status::want_write:
            if (!_handshake_wants_write) {
                _handshake_wants_write = true;
                update_interest();
            }
            return false;
        case tls_session::status::closed:
        case tls_session::status::failed:
            fail(_tls->error());
            return false;
    }
    return false;
}

void connection::do_tls_read() {
    for (;;) {
        if (_in_start > 0 && _in.size() - _in_start < tls_read_chunk) {
            _in.erase(_in.begin(), _in.begin() + static_cast<ptrdiff_t>(_in_start));
            _in_start = 0;
        }
        size_t got = 0;
        auto st = tls_session::status::ok;
        // SSL_read yields one record at a time; gather what OpenSSL already holds.
        while (got < tls_read_chunk) {
            const size_t have = _in.size();
            _in.resize(have + tls_record_bytes);
            size_t n = 0;
            st = _tls->read(_in.data() + have, tls_record_bytes, n);
            _in.resize(have + (st == tls_session::status::ok ? n : 0));
            if (st != tls_session::status::ok) break;
            got += n;
            if (!_tls->has_pending()) break;
        }
        const bool wants_write = st == tls_session::status::want_write;
        if (wants_write != _read_wants_write) {
            _read_wants_write = wants_write;
            update_interest();
        }
        if (got > 0) {
            active();
            if (_budgeted > 0) _last_progress = _last_activity;
            parse_frames();
            if (_fd < 0 || read_stopped()) return;
        }
        switch (st) {
            case tls_session::status::ok:
                // A full chunk may have left records behind; otherwise OpenSSL holds
                // nothing and epoll reports what the socket still has.
                if (got >= tls_read_chunk || _tls->has_pending()) continue;
                return;
            case tls_session::status::want_read:
            case tls_session::status::want_write:
                return;
            case tls_session::status::closed:
                close(_tls->error());
                return;
            case tls_session::status::failed:
                fail("TLS read failed: " + _tls->error());
                return;
        }
    }
}

// Moves the front of `_out` into `_tls_out`; false when it closed the connection.
bool connection::fill_tls_out() {
    if (_tls_out.size() < tls_out_capacity) _tls_out.resize(tls_out_capacity);
    size_t len = 0;
    while (!_out.empty() && len < tls_out_capacity) {
        auto& c = _out.front();
        size_t take = std::min(tls_out_capacity - len, c.size() - _out_offset);
        if (!c.data.empty()) {
            std::memcpy(_tls_out.data() + len, c.data.data() + _out_offset, take);
        } else {
            ssize_t n = ::pread(c.file.fd, _tls_out.data() + len, take,
                                c.file.offset + static_cast<off_t>(_out_offset));
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) {  // the file is shorter than promised, or unreadable
                fail(n == 0 ? std::string("file slice ended early")
                            : std::string("file read error: ") + std::strerror(errno));
                return false;
            }
            take = static_cast<size_t>(n);
        }
        len += take;
        _out_offset += take;
        if (_out_offset == c.size()) {
            _out.pop_front();
            _out_offset = 0;
        }
    }
    _tls_out_pos = 0;
    _tls_out_len = len;
    return true;
}

void connection::do_tls_write() {
    while (_fd >= 0) {
        if (_tls_out_pos == _tls_out_len && _out.empty()) {
            // Encrypted records may still wait for the socket.
            auto st = _tls->has_unflushed() ? _tls->flush() : tls_session::status::ok;
            if (st == tls_session::status::ok || st == tls_session::status::want_write) break;
            if (st == tls_session::status::closed) {
                close(_tls->error());
            } else {
                fail("TLS write failed: " + _tls->error());
            }
            return;
        }
        if (_tls_out_pos == _tls_out_len && !fill_tls_out()) return;
        size_t n = 0;
        auto st = _tls->write(_tls_out.data() + _tls_out_pos, _tls_out_len - _tls_out_pos, n);
        if (st == tls_session::status::ok) {
            _tls_out_pos += n;
            _queued -= n;
            active();
            _write_wants_read = false;
            if (_tls->has_unflushed()) break;  // the socket is full: wait for EPOLLOUT
            continue;
        }
        if (st == tls_session::status::want_write || st == tls_session::status::want_read) {
            // Retried later with the same bytes (_tls_out is left as it is).
            _write_wants_read = st == tls_session::status::want_read;
            break;
        }
        if (st == tls_session::status::closed) {
            close(_tls->error());
        } else {
            fail("TLS write failed: " + _tls->error());
        }
        return;
    }
    if (_fd < 0) return;
    const bool want = !_out.empty() || _tls_out_pos < _tls_out_len || _tls->has_unflushed();
    if (!want) _write_wants_read = false;
    _want_write = want;
    update_interest();
}

}  // namespace sluice::net

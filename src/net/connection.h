#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/types.h"
#include "net/byte_budget.h"
#include "net/event_loop.h"
#include "net/raw_buffer.h"
#include "net/tls.h"

namespace sluice::net {

// A TCP connection that splits its input into length-prefixed frames (a 4-byte
// big-endian size, then the payload) and writes whole frames back. It knows nothing
// of Kafka beyond that framing.
//
// With a TLS context the handshake runs first and frames flow once it completes; a
// failed handshake closes the connection with a log line saying why. Without one the
// socket is used directly (sendmsg, sendfile).
class connection : public io_handler, public std::enable_shared_from_this<connection> {
  public:
    struct callbacks {
        // The frame is valid only during the call, and the callee may modify it: it is
        // the connection's receive buffer, and discarded after the call.
        std::function<void(const std::shared_ptr<connection>&, std::span<uint8_t> frame)> on_frame;
        std::function<void(const std::shared_ptr<connection>&)> on_close;
    };

    // With a budget, a frame partly read holds its whole size from it: one above one
    // read's size (256 KiB) before it is read further, in line with the others, and one
    // of at most that size ahead of the line (it needs at most one more read). Reading
    // stops while the budget has none to give, and the bytes already read of the frames
    // waiting are bounded by the budget's capacity too; past that, a connection that
    // would wait is closed. A frame larger than the whole budget closes the connection,
    // as one above max_frame_bytes does.
    connection(event_loop& loop, int fd, std::string peer, size_t max_frame_bytes, callbacks cb,
               std::shared_ptr<tls_context> tls = nullptr,
               std::shared_ptr<byte_budget> budget = nullptr);
    ~connection() override;

    void start();
    // With a budget: a frame holding part of it must keep arriving; no bytes of it for
    // this long (while reading is not paused) closes the connection, so that a client
    // stopping mid-request cannot keep its share. 0: no limit.
    void set_budget_stall_timeout(std::chrono::milliseconds t) { _stall_timeout = t; }
    // Kafka's connections.max.idle.ms: no byte read or written for this long closes the
    // connection. 0: never. Before start().
    void set_idle_timeout(std::chrono::milliseconds t) { _idle_timeout = t; }
    // Queue bytes, or a file range sent with sendfile; everything goes out in the order
    // queued, written at the end of the event loop's iteration so that what one
    // iteration queues shares system calls.
    void send(bytes data);
    void send_file(file_slice slice);
    // Closes once; the reason is logged.
    void close(const std::string& reason);
    // Stops reading new frames until resume_reading() (back-pressure).
    void pause_reading();
    void resume_reading();

    bool closed() const { return _fd < 0; }
    const std::string& peer() const { return _peer; }
    uint64_t id() const { return _id; }
    size_t queued_bytes() const { return _queued; }
    bool is_tls() const { return _tls_ctx != nullptr; }
    // The verified client certificate's subject CN; nullopt without TLS or without a
    // verified certificate.
    std::optional<std::string> peer_common_name() const;

    void on_io(uint32_t events) override;
    void on_flush() override;

  private:
    void do_read();
    void do_write();
    void parse_frames();
    void update_interest();
    void update_rcvlowat();
    // TLS counterparts of the above; `_tls` is set.
    void on_tls_io(uint32_t events);
    bool do_handshake();
    void do_tls_read();
    void do_tls_write();
    bool fill_tls_out();
    void fail(const std::string& reason);
    // Queued output is written at the end of the loop iteration (event_loop::defer_flush).
    void schedule_flush();
    // The request budget (see the constructor).
    bool read_stopped() const { return _paused || _budget_wait; }
    bool fits_budget(size_t frame_size);  // false: closed
    void settle_budget();                 // after parsing: hold, wait for or release bytes
    void take_budget(size_t frame);
    void on_budget_granted(size_t frame);
    void drop_budget();
    void drain_tls_pending();
    void arm_stall_check(std::chrono::milliseconds delay);
    void check_stall();
    void cancel_stall_check();
    void arm_idle_check(std::chrono::milliseconds delay);
    void check_idle();
    void active() { _last_activity = event_loop::clock::now(); }

    event_loop& _loop;
    int _fd;
    std::string _peer;
    size_t _max_frame;
    callbacks _cb;
    uint64_t _id;
    // Read straight into its tail (recv, SSL_read), so it grows without zeroing.
    raw_buffer _in;
    size_t _in_start = 0;  // first unparsed byte of _in
    struct chunk {
        bytes data;
        file_slice file;  // used when data is empty
        size_t size() const { return data.empty() ? file.size : data.size(); }
    };
    bool write_file_chunk();

    std::deque<chunk> _out;
    size_t _out_offset = 0;  // bytes of _out.front() already written
    size_t _queued = 0;
    bool _paused = false;
    bool _want_write = false;
    bool _flush_pending = false;  // a defer_flush is due
    size_t _rcvlowat = 1;  // the socket's SO_RCVLOWAT (1 is the kernel's default)
    std::shared_ptr<byte_budget> _budget;
    size_t _budgeted = 0;     // bytes held from _budget for the frame being read
    bool _budget_wait = false;  // reading stopped until _budget grants the frame's bytes
    byte_budget::waiter_id _budget_waiter = 0;
    std::chrono::milliseconds _stall_timeout{0};
    event_loop::timer_id _stall_timer = 0;
    event_loop::clock::time_point _last_progress{};  // of the frame holding budget
    size_t _held_waiting = 0;  // bytes of the frame counted in the budget's waiting room
    std::chrono::milliseconds _idle_timeout{0};
    event_loop::timer_id _idle_timer = 0;
    event_loop::clock::time_point _last_activity{};  // a byte read or written

    // TLS state (unused without a context).
    std::shared_ptr<tls_context> _tls_ctx;
    std::unique_ptr<tls_session> _tls;
    uint32_t _tls_interest = 0;  // the events last given to epoll
    bool _handshake_wants_write = false;
    bool _read_wants_write = false;  // SSL_read needs the socket writable
    bool _write_wants_read = false;  // SSL_write needs the socket readable
    // Plaintext waiting for SSL_write: small queued chunks coalesced, or a piece of a
    // file read with pread. After a blocked write it is retried unchanged, as OpenSSL
    // requires. Invariant: _tls_out_pos <= _tls_out_len <= _tls_out.size().
    bytes _tls_out;
    size_t _tls_out_pos = 0;
    size_t _tls_out_len = 0;
};

}  // namespace sluice::net

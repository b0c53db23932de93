#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "common/types.h"
#include "net/event_loop.h"

namespace sluice::net {

// A TCP connection that splits its input into length-prefixed frames (a 4-byte
// big-endian size, then the payload) and writes whole frames back. It knows nothing
// of Kafka beyond that framing.
class connection : public io_handler, public std::enable_shared_from_this<connection> {
public:
    struct callbacks {
        // The frame is valid only during the call.
        std::function<void(const std::shared_ptr<connection>&, bytes_view frame)> on_frame;
        std::function<void(const std::shared_ptr<connection>&)> on_close;
    };

    connection(event_loop& loop, int fd, std::string peer, size_t max_frame_bytes,
               callbacks cb);
    ~connection() override;

    void start();
    // Queue bytes, or a file range sent with sendfile; everything goes out in the order
    // queued.
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

    void on_io(uint32_t events) override;

private:
    void do_read();
    void do_write();
    void parse_frames();
    void update_interest();

    event_loop& _loop;
    int _fd;
    std::string _peer;
    size_t _max_frame;
    callbacks _cb;
    uint64_t _id;
    bytes _in;
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
};

}  // namespace sluice::net

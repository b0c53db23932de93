#pragma once

#include <deque>
#include <memory>
#include <string>

#include "common/types.h"
#include "net/connection.h"
#include "protocol/wire.h"

namespace sluice::broker {

class broker;

// One client connection at the Kafka level: decodes request headers, dispatches to
// handlers through the API table, and sends responses in request order even when
// handlers finish out of order (acks=-1 produce, long-polling fetch).
class session : public std::enable_shared_from_this<session> {
public:
    session(broker& b, std::shared_ptr<net::connection> conn);

    void on_frame(bytes_view frame);
    // An encoded response: bytes, with file slices to send at given positions.
    struct response {
        bytes head;
        std::vector<protocol::splice> splices;
    };
    // Completes a reply slot; an empty response means "no response" (acks=0).
    void complete(uint64_t slot, response r);
    void close(const std::string& reason);

    bool closed() const { return _conn->closed(); }
    bool idle() const { return _slots.empty(); }
    const std::string& peer() const { return _conn->peer(); }
    const std::string& client_id() const { return _client_id; }

private:
    struct reply_slot {
        bool done = false;
        response frame;
    };
    void send(response& r);
    uint64_t reserve();
    void send_unsupported_version(int16_t key, int16_t version, int32_t correlation_id,
                                  uint64_t slot);

    broker& _broker;
    std::shared_ptr<net::connection> _conn;
    std::deque<reply_slot> _slots;
    uint64_t _head = 0;  // slot number of _slots.front()
    std::string _client_id;
};

}  // namespace sluice::broker

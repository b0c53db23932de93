#pragma once

#include <memory>
#include <span>
#include <string>

#include "broker/config.h"
#include "common/types.h"
#include "protocol/api_key.h"
#include "protocol/serde.h"

namespace sluice::broker {

class broker;
class session;

// A request's bytes after its header. They belong to the connection's receive buffer
// and are gone once the handler returns; until then a handler may patch them in place
// (Produce assigns offsets and times in the batches it appends, without a copy).
using request_body = std::span<uint8_t>;

// What a handler gets besides the decoded request: who asked, and how to answer. Copies
// share the same reply slot; reply exactly once.
struct request_context {
    broker& b;
    std::shared_ptr<session> sess;
    protocol::request_header header;
    uint64_t slot = 0;

    int16_t version() const { return header.api_version; }
    bool flexible() const { return protocol::is_flexible(header.api_key, header.api_version); }
    std::string client() const;

    // Who asks, and what they may do: the action this API needs on a resource of
    // `kind` comes from access_rules(). allowed() logs a denial; allowed_quiet() is for
    // filtering lists (Metadata of all topics, ListGroups).
    const security::principal& principal() const;
    bool allowed(security::resource_kind kind, const std::string& name = {}) const;
    bool allowed_quiet(security::resource_kind kind, const std::string& name = {}) const;
    // CreateTopics and auto-creation: Create on the cluster or on the topic.
    bool may_create_topic(const std::string& name) const;
    // The brokers announced on the listener this request came through.
    const std::vector<advertised_broker>& brokers() const;

    template <typename R>
    void respond(const R& body) const {
        bytes frame = begin_frame();
        std::vector<protocol::splice> splices;
        protocol::encode_message(frame, version(), flexible(), body, &splices);
        int16_t error = 0;  // for metrics, where the answer has a top-level code
        if constexpr (requires { body.error_code; }) error = static_cast<int16_t>(body.error_code);
        finish_frame(std::move(frame), std::move(splices), error);
    }
    // acks=0 produce: the slot is released without a response.
    void respond_none() const;

private:
    bytes begin_frame() const;
    void finish_frame(bytes frame, std::vector<protocol::splice> splices, int16_t error) const;
};

}  // namespace sluice::broker

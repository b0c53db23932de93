#include "broker/request_context.h"

#include "broker/session.h"
#include "common/endian.h"

namespace sluice::broker {

std::string request_context::client() const {
    const auto& id = sess->client_id();
    return id.empty() ? sess->peer() : id + "@" + sess->peer();
}

bytes request_context::begin_frame() const {
    bytes frame(4);  // size, patched in finish_frame
    protocol::writer w(frame);
    w.fixed<int32_t>(header.correlation_id);
    if (protocol::response_header_has_tags(header.api_key, header.api_version)) w.uvarint(0);
    return frame;
}

void request_context::finish_frame(bytes frame, std::vector<protocol::splice> splices) const {
    size_t total = frame.size();
    for (const auto& s : splices) total += s.slice.size;
    store_be<int32_t>(frame.data(), static_cast<int32_t>(total - 4));
    sess->complete(slot, {std::move(frame), std::move(splices)});
}

void request_context::respond_none() const { sess->complete(slot, {}); }

}  // namespace sluice::broker

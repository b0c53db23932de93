#include "broker/session.h"

#include "broker/api_table.h"
#include "broker/broker.h"
#include "common/endian.h"
#include "common/logging.h"
#include "protocol/error_code.h"
#include "protocol/messages/api_versions.h"

namespace sluice::broker {

session::session(broker& b, std::shared_ptr<net::connection> conn)
    : _broker(b), _conn(std::move(conn)) {}

uint64_t session::reserve() {
    _slots.emplace_back();
    if (_slots.size() >= _broker.config().max_in_flight_per_connection) _conn->pause_reading();
    return _head + _slots.size() - 1;
}

void session::send(response& r) {
    size_t from = 0;
    for (auto& s : r.splices) {
        if (s.at > from) _conn->send(bytes(r.head.begin() + static_cast<ptrdiff_t>(from),
                                           r.head.begin() + static_cast<ptrdiff_t>(s.at)));
        _conn->send_file(std::move(s.slice));
        from = s.at;
    }
    if (from == 0) {
        _conn->send(std::move(r.head));
    } else if (from < r.head.size()) {
        _conn->send(bytes(r.head.begin() + static_cast<ptrdiff_t>(from), r.head.end()));
    }
}

void session::complete(uint64_t slot, response r) {
    if (slot < _head || slot - _head >= _slots.size()) return;
    auto& s = _slots[slot - _head];
    s.done = true;
    s.frame = std::move(r);
    while (!_slots.empty() && _slots.front().done) {
        if (!_slots.front().frame.head.empty()) send(_slots.front().frame);
        _slots.pop_front();
        ++_head;
    }
    if (_slots.size() < _broker.config().max_in_flight_per_connection / 2) _conn->resume_reading();
    if (_slots.empty() && _broker.shutting_down()) _broker.check_drained();
}

void session::close(const std::string& reason) { _conn->close(reason); }

void session::on_frame(bytes_view frame) {
    protocol::reader r(frame);
    protocol::request_header h;
    h.api_key = r.fixed<int16_t>();
    h.api_version = r.fixed<int16_t>();
    h.correlation_id = r.fixed<int32_t>();
    if (!r.ok()) {
        log_warn("protocol", "{}: request of {} bytes is too short for a header; closing",
                 peer(), frame.size());
        close("short request header");
        return;
    }
    const api_def* api = find_api(h.api_key);
    if (api == nullptr) {
        log_warn("protocol", "{}: unknown api key {} (version {}); closing the connection", peer(),
                 h.api_key, h.api_version);
        close("unknown api key");
        return;
    }
    uint64_t slot = reserve();
    if (h.api_version < api->min_version || h.api_version > api->max_version) {
        log_warn("protocol", "{}: {} v{} is not supported (v{}-v{}); answering UNSUPPORTED_VERSION",
                 peer(), api->name, h.api_version, api->min_version, api->max_version);
        send_unsupported_version(h.api_key, h.api_version, h.correlation_id, slot);
        return;
    }
    bool flexible = protocol::is_flexible(h.api_key, h.api_version);
    protocol::read_request_header_rest(r, h, flexible);
    if (!r.ok()) {
        log_warn("protocol", "{}: malformed {} v{} request header; closing", peer(), api->name,
                 h.api_version);
        close("malformed request header");
        return;
    }
    if (h.client_id && _client_id != *h.client_id) _client_id = *h.client_id;
    request_context ctx{_broker, shared_from_this(), std::move(h), slot};
    api->handle(ctx, frame.subspan(r.position()));
}

// ApiVersions gets a full v0 answer with the table so the client can pick a version;
// any other API gets its header and the error code alone (the body layout of an
// unknown version cannot be known).
void session::send_unsupported_version(int16_t key, int16_t version, int32_t correlation_id,
                                       uint64_t slot) {
    bytes frame(4);
    protocol::writer w(frame);
    w.fixed<int32_t>(correlation_id);
    auto unsupported = static_cast<int16_t>(protocol::error_code::unsupported_version);
    if (key == static_cast<int16_t>(protocol::api_key::api_versions)) {
        protocol::api_versions_response resp;
        resp.error_code = unsupported;
        for (const auto& a : supported_apis())
            resp.api_keys.push_back({static_cast<int16_t>(a.key), a.min_version, a.max_version});
        protocol::encode_message(frame, 0, false, resp);
    } else {
        if (protocol::response_header_has_tags(key, version)) w.uvarint(0);
        w.fixed<int16_t>(unsupported);
    }
    store_be<int32_t>(frame.data(), static_cast<int32_t>(frame.size() - 4));
    complete(slot, {std::move(frame), {}});
}

}  // namespace sluice::broker

#include "sql/http/http_response.h"

#include "sql/http/result_format.h"

namespace sluice::sql::http {

bool http_response::put(std::string_view data) {
    if (!_ok) return false;
    if (!_write(data)) _ok = false;
    return _ok;
}

bool http_response::send(int status, std::string_view content_type, std::string_view body,
                         const header_list& extra) {
    if (_started) return false;
    header_list headers{{"Content-Type", std::string(content_type)}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    // An HTTP/1.0 client keeps the connection only when told (else it waits for the end).
    if (!_chunked && _keep_alive) headers.emplace_back("Connection", "keep-alive");
    std::string out = response_head(status, headers, body.size(), !_keep_alive);
    if (!_head_only) out.append(body);
    _started = _finished = true;
    return put(out);
}

bool http_response::send_error(int status, std::string_view kind, std::string_view message,
                               std::string_view sqlstate, const header_list& extra) {
    return send(status, "application/json", error_json(kind, sqlstate, message) + "\n", extra);
}

bool http_response::begin_stream(int status, std::string_view content_type,
                                 const header_list& extra) {
    if (_started) return false;
    header_list headers{{"Content-Type", std::string(content_type)}};
    headers.insert(headers.end(), extra.begin(), extra.end());
    _started = true;
    if (!_chunked && !_head_only) _keep_alive = false;  // the connection's end ends the body
    if (!_chunked && _keep_alive) headers.emplace_back("Connection", "keep-alive");
    return put(response_head(status, headers, std::nullopt, !_keep_alive, _chunked));
}

bool http_response::write(std::string_view data) {
    if (!_started || _finished) return false;
    if (data.empty() || _head_only) return _ok;
    if (!_chunked) return put(data);
    std::string chunk;
    chunk.reserve(data.size() + 24);
    append_chunk(chunk, data);
    return put(chunk);
}

bool http_response::end_stream() {
    if (!_started || _finished) return false;
    _finished = true;
    return _chunked && !_head_only ? put(last_chunk) : _ok;
}

}  // namespace sluice::sql::http

#include "sql/http/http_message.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <ctime>
#include <memory>

#include "security/credential.h"

namespace sluice::sql::http {
namespace {

// Bytes asked of the source per read: a few TCP segments.
constexpr size_t fill_size = 16 * 1024;
// A chunk-size line ("<hex>[;extensions]") longer than this is not an honest one.
constexpr size_t max_chunk_line = 1024;

bool is_tchar(char c) {
    // RFC 9110 section 5.6.2: token characters.
    return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("!#$%&'*+-.^_`|~", c);
}

bool is_token(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), is_tchar);
}

std::string lower(std::string_view s) {
    std::string r(s);
    for (char& c : r) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return r;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

read_result fail(int status, std::string message) {
    return {read_result::kind::error, status, std::move(message)};
}

// Parses "name: value" into `headers`; an error message, or empty.
std::string parse_header_line(std::string_view line, header_list& headers) {
    if (line.front() == ' ' || line.front() == '\t') return "obsolete line folding is not accepted";
    auto colon = line.find(':');
    if (colon == std::string_view::npos) return "a header line without ':'";
    auto name = line.substr(0, colon);
    if (!is_token(name)) return "a bad header name (no whitespace before ':')";
    auto value = trim(line.substr(colon + 1));
    for (char c : value) {
        auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t') || u == 0x7f) return "a control character in a header value";
    }
    headers.emplace_back(lower(name), std::string(value));
    return {};
}

// Reads header lines up to the empty one, within `budget` bytes (decremented).
read_result read_header_block(buffered_reader& in, header_list& headers, size_t& budget,
                              size_t max_headers) {
    std::string line;
    for (;;) {
        switch (in.read_line(line, budget >= 2 ? budget - 2 : 0)) {
            case buffered_reader::line_status::end_of_stream:
                return {};
            case buffered_reader::line_status::too_long:
                return fail(431, "the request's headers are larger than the limit");
            case buffered_reader::line_status::ok:
                break;
        }
        budget -= line.size() + 2;
        if (line.empty()) return {read_result::kind::request};
        if (line.find('\n') != std::string::npos) return fail(400, "a bare LF in the headers");
        if (headers.size() >= max_headers) return fail(431, "too many header fields");
        if (auto e = parse_header_line(line, headers); !e.empty()) return fail(400, e);
    }
}

std::optional<std::string_view> find_header(const header_list& headers, std::string_view name) {
    for (const auto& [k, v] : headers)
        if (k == name) return std::string_view(v);
    return std::nullopt;
}

bool has_token(std::string_view list, std::string_view token) {
    while (!list.empty()) {
        auto comma = list.find(',');
        if (iequals(trim(list.substr(0, comma)), token)) return true;
        if (comma == std::string_view::npos) break;
        list.remove_prefix(comma + 1);
    }
    return false;
}

// Decimal digits only, as Content-Length wants them; nullopt when not, or too large.
std::optional<uint64_t> parse_length(std::string_view s) {
    if (s.empty() || s.size() > 18) return std::nullopt;  // 18 digits cannot overflow
    uint64_t v = 0;
    for (char c : s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<uint64_t>(c - '0');
    }
    return v;
}

// "<hex>[;ext]" of a chunk-size line.
std::optional<uint64_t> parse_chunk_size(std::string_view line) {
    auto semi = line.find(';');
    auto hex = trim(line.substr(0, semi));
    if (hex.empty() || hex.size() > 15) return std::nullopt;  // 15 hex digits fit
    uint64_t v = 0;
    for (char c : hex) {
        int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                : (c >= 'a' && c <= 'f')                    ? c - 'a' + 10
                : (c >= 'A' && c <= 'F')                    ? c - 'A' + 10
                                                            : -1;
        if (d < 0) return std::nullopt;
        v = v * 16 + static_cast<uint64_t>(d);
    }
    return v;
}

// Reads a chunked body into `out` (at most `max` bytes decoded). `too_large` is set
// when it would exceed `max`. Returns an error message, empty on success.
std::string read_chunked(buffered_reader& in, std::string& out, size_t max, size_t max_trailers,
                         bool& too_large) {
    std::string line;
    for (;;) {
        if (in.read_line(line, max_chunk_line) != buffered_reader::line_status::ok)
            return "a bad chunk-size line";
        auto size = parse_chunk_size(line);
        if (!size) return "a bad chunk size";
        if (*size == 0) break;
        if (*size > max - out.size()) {
            too_large = true;
            return "the body is larger than the limit";
        }
        if (!in.read_exact(out, static_cast<size_t>(*size))) return "the body ended early";
        if (in.read_line(line, 0) != buffered_reader::line_status::ok)
            return "a chunk not followed by CRLF";
    }
    // Trailer fields: read and dropped.
    header_list trailers;
    size_t budget = max_trailers;
    auto r = read_header_block(in, trailers, budget, 100);
    if (r.what != read_result::kind::request) return "bad trailer fields";
    return {};
}

// Origin-form ("/path?q"), absolute-form ("http://host/path?q") or "*".
bool split_target(http_request& req) {
    std::string_view t = req.target;
    for (std::string_view scheme : {"http://", "https://"}) {
        if (t.size() >= scheme.size() && iequals(t.substr(0, scheme.size()), scheme)) {
            t.remove_prefix(scheme.size());
            auto slash = t.find_first_of("/?");
            t = slash == std::string_view::npos ? std::string_view("/") : t.substr(slash);
            if (t.front() == '?') return false;
            break;
        }
    }
    if (t == "*") {
        req.path = "*";
        return true;
    }
    if (t.empty() || t.front() != '/') return false;
    auto q = t.find('?');
    auto path = percent_decode(t.substr(0, q), false);
    if (!path) return false;
    req.path = std::move(*path);
    req.query = q == std::string_view::npos ? std::string() : std::string(t.substr(q + 1));
    return true;
}

read_result parse_request_line(std::string_view line, http_request& req) {
    auto sp1 = line.find(' ');
    auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos)
        return fail(400, "a malformed request line");
    auto method = line.substr(0, sp1);
    auto target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    auto version = line.substr(sp2 + 1);
    if (!is_token(method)) return fail(400, "a bad method");
    if (target.empty() || std::any_of(target.begin(), target.end(), [](char c) {
            return static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f;
        }))
        return fail(400, "a bad request target");
    if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || version[6] != '.' ||
        !std::isdigit(static_cast<unsigned char>(version[5])) ||
        !std::isdigit(static_cast<unsigned char>(version[7])))
        return fail(400, "a bad HTTP version");
    if (version[5] != '1') return fail(505, "only HTTP/1.0 and HTTP/1.1 are served");
    req.method = std::string(method);
    req.target = std::string(target);
    req.minor_version = version[7] - '0';
    if (!split_target(req)) return fail(400, "a bad request target");
    return {read_result::kind::request};
}

}  // namespace

std::string basic_authorization(std::string_view user, std::string_view password) {
    std::string pair(user);
    pair += ':';
    pair += password;
    return "Basic " + security::base64_encode(pair);
}

std::optional<basic_credentials> parse_basic_authorization(std::string_view value) {
    // The scheme is case-insensitive; then one or more spaces and the token68.
    constexpr std::string_view scheme = "Basic";
    if (value.size() <= scheme.size() || !iequals(value.substr(0, scheme.size()), scheme) ||
        value[scheme.size()] != ' ')
        return std::nullopt;
    value.remove_prefix(scheme.size());
    while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    auto decoded = security::base64_decode(value);
    if (!decoded) return std::nullopt;
    const auto colon = decoded->find(':');
    if (colon == std::string::npos) return std::nullopt;
    return basic_credentials{decoded->substr(0, colon), decoded->substr(colon + 1)};
}

// ---- buffered_reader

bool buffered_reader::fill_more() {
    if (_pos == _buf.size()) {
        _buf.clear();
        _pos = 0;
    } else if (_pos >= fill_size) {
        _buf.erase(0, _pos);
        _pos = 0;
    }
    size_t old = _buf.size();
    _buf.resize(old + fill_size);
    size_t got = _fill ? _fill(_buf.data() + old, fill_size) : 0;
    _buf.resize(old + got);
    return got > 0;
}

buffered_reader::line_status buffered_reader::read_line(std::string& out, size_t max) {
    size_t scanned = _pos;
    for (;;) {
        auto crlf = _buf.find("\r\n", scanned);
        if (crlf != std::string::npos) {
            if (crlf - _pos > max) return line_status::too_long;
            out.assign(_buf, _pos, crlf - _pos);
            _pos = crlf + 2;
            return line_status::ok;
        }
        if (_buf.size() - _pos > max + 1) return line_status::too_long;
        // Rescan from the last byte: it may be the CR of a CRLF split across reads.
        size_t rel = _buf.size() > _pos ? _buf.size() - 1 - _pos : 0;
        if (!fill_more()) return line_status::end_of_stream;
        scanned = _pos + rel;
    }
}

bool buffered_reader::read_exact(std::string& out, size_t n) {
    while (n > 0) {
        if (_pos == _buf.size() && !fill_more()) return false;
        size_t take = std::min(n, _buf.size() - _pos);
        out.append(_buf, _pos, take);
        _pos += take;
        n -= take;
    }
    return true;
}

size_t buffered_reader::read_some(char* buf, size_t n) {
    if (n == 0) return 0;
    if (_pos == _buf.size() && !fill_more()) return 0;
    size_t take = std::min(n, _buf.size() - _pos);
    std::memcpy(buf, _buf.data() + _pos, take);
    _pos += take;
    return take;
}

// ---- requests

std::optional<std::string_view> http_request::header(std::string_view name) const {
    return find_header(headers, name);
}

std::optional<std::vector<std::pair<std::string, std::string>>> http_request::query_params() const {
    std::vector<std::pair<std::string, std::string>> out;
    std::string_view q = query;
    while (!q.empty()) {
        auto amp = q.find('&');
        auto part = q.substr(0, amp);
        q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
        if (part.empty()) continue;
        auto eq = part.find('=');
        auto k = percent_decode(part.substr(0, eq), true);
        auto v = percent_decode(eq == std::string_view::npos ? "" : part.substr(eq + 1), true);
        if (!k || !v) return std::nullopt;
        out.emplace_back(std::move(*k), std::move(*v));
    }
    return out;
}

bool http_request::keep_alive() const {
    auto c = header("connection");
    if (c && has_token(*c, "close")) return false;
    if (minor_version == 0) return c && has_token(*c, "keep-alive");
    return true;
}

read_result read_request_head(buffered_reader& in, http_request& req, const parse_limits& lim) {
    req = http_request{};
    size_t budget = lim.max_head;
    std::string line;
    for (;;) {
        switch (in.read_line(line, budget >= 2 ? budget - 2 : 0)) {
            case buffered_reader::line_status::end_of_stream:
                return {read_result::kind::closed};
            case buffered_reader::line_status::too_long:
                return fail(414, "the request line is longer than the limit");
            case buffered_reader::line_status::ok:
                break;
        }
        budget -= line.size() + 2;
        if (!line.empty()) break;  // empty lines before a request are ignored
    }
    if (line.find('\n') != std::string::npos) return fail(400, "a bare LF in the request line");
    if (auto r = parse_request_line(line, req); r.what != read_result::kind::request) return r;
    auto r = read_header_block(in, req.headers, budget, lim.max_headers);
    if (r.what == read_result::kind::closed) return r;
    if (r.what == read_result::kind::error) return r;
    if (req.minor_version >= 1) {
        size_t hosts = std::count_if(req.headers.begin(), req.headers.end(),
                                     [](const auto& h) { return h.first == "host"; });
        if (hosts != 1) return fail(400, "an HTTP/1.1 request needs exactly one Host header");
    }
    return r;
}

read_result read_request_body(buffered_reader& in, http_request& req, const parse_limits& lim,
                              const std::function<void()>& before_body) {
    size_t n_length = 0, n_te = 0;
    std::string_view length_value, te_value;
    for (const auto& [k, v] : req.headers) {
        if (k == "content-length") {
            ++n_length;
            length_value = v;
        } else if (k == "transfer-encoding") {
            ++n_te;
            te_value = v;
        }
    }
    if (n_length > 0 && n_te > 0)
        return fail(400, "Content-Length and Transfer-Encoding together are refused");
    if (n_length > 1) return fail(400, "more than one Content-Length");
    if (n_te > 1 || (n_te == 1 && !iequals(trim(te_value), "chunked")))
        return fail(501, "only the chunked transfer coding is supported");
    bool chunked = n_te == 1;
    uint64_t length = 0;
    if (n_length == 1) {
        auto l = parse_length(length_value);
        if (!l) return fail(400, "a bad Content-Length");
        length = *l;
        if (length > lim.max_body)
            return fail(413, "the body is larger than the limit of " +
                                 std::to_string(lim.max_body) + " bytes");
    } else if (!chunked && (req.method == "POST" || req.method == "PUT" || req.method == "PATCH")) {
        return fail(411, "a request with a body needs Content-Length or chunked coding");
    }
    bool expect_continue = false;
    if (auto expect = req.header("expect")) {
        if (!iequals(*expect, "100-continue")) return fail(417, "only Expect: 100-continue");
        expect_continue = req.minor_version >= 1;
    }
    if (!chunked && length == 0) return {read_result::kind::request};
    if (expect_continue && before_body) before_body();
    if (!chunked) {
        if (!in.read_exact(req.body, static_cast<size_t>(length)))
            return {read_result::kind::closed};
        return {read_result::kind::request};
    }
    bool too_large = false;
    auto e = read_chunked(in, req.body, lim.max_body, lim.max_head, too_large);
    if (!e.empty()) return fail(too_large ? 413 : 400, e);
    return {read_result::kind::request};
}

// ---- writing responses

const char* reason_phrase(int status) {
    switch (status) {
        case 100:
            return "Continue";
        case 200:
            return "OK";
        case 201:
            return "Created";
        case 204:
            return "No Content";
        case 301:
            return "Moved Permanently";
        case 304:
            return "Not Modified";
        case 400:
            return "Bad Request";
        case 401:
            return "Unauthorized";
        case 403:
            return "Forbidden";
        case 404:
            return "Not Found";
        case 405:
            return "Method Not Allowed";
        case 408:
            return "Request Timeout";
        case 409:
            return "Conflict";
        case 411:
            return "Length Required";
        case 413:
            return "Content Too Large";
        case 414:
            return "URI Too Long";
        case 417:
            return "Expectation Failed";
        case 431:
            return "Request Header Fields Too Large";
        case 500:
            return "Internal Server Error";
        case 501:
            return "Not Implemented";
        case 503:
            return "Service Unavailable";
        case 505:
            return "HTTP Version Not Supported";
        default:
            return "Unknown";
    }
}

std::string response_head(int status, const header_list& headers,
                          std::optional<size_t> content_length, bool close, bool chunked) {
    char date[64];
    std::time_t now = std::time(nullptr);
    std::tm tm{};
    gmtime_r(&now, &tm);
    std::strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    std::string h = "HTTP/1.1 " + std::to_string(status) + " " + reason_phrase(status) + "\r\n";
    h += "Date: ";
    h += date;
    h += "\r\nServer: sluice\r\n";
    for (const auto& [k, v] : headers) {
        h += k;
        h += ": ";
        h += v;
        h += "\r\n";
    }
    if (content_length)
        h += "Content-Length: " + std::to_string(*content_length) + "\r\n";
    else if (chunked)
        h += "Transfer-Encoding: chunked\r\n";
    if (close) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
}

void append_chunk(std::string& out, std::string_view data) {
    if (data.empty()) return;
    char size[32];
    int n = std::snprintf(size, sizeof size, "%zx\r\n", data.size());
    out.append(size, static_cast<size_t>(n));
    out.append(data);
    out.append("\r\n");
}

std::optional<std::string> percent_decode(std::string_view s, bool plus_is_space) {
    auto hex = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= s.size()) return std::nullopt;
            int hi = hex(s[i + 1]), lo = hex(s[i + 2]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

std::string percent_encode(std::string_view s) {
    static const char* digits = "0123456789ABCDEF";
    std::string out;
    for (char c : s) {
        auto u = static_cast<unsigned char>(c);
        if (std::isalnum(u) || c == '-' || c == '_' || c == '.' || c == '~') {
            out.push_back(c);
        } else {
            out.push_back('%');
            out.push_back(digits[u >> 4]);
            out.push_back(digits[u & 15]);
        }
    }
    return out;
}

}  // namespace sluice::sql::http

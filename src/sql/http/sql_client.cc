#include "sql/http/sql_client.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "sql/http/curl_exchange.h"

namespace sluice::sql::http {
namespace {

// An error response's body is a small JSON object; more than this is not one.
constexpr size_t max_error_body = 1 << 20;

// A pull parser for the JSON that /v1/sql writes, reading as it goes.
class json_pull {
  public:
    explicit json_pull(buffered_reader& in) : _in(in) {}

    std::string error;

    int peek() {
        skip_ws();
        return _in.peek();
    }
    bool consume(char c) {
        if (peek() != c) return false;
        _in.get();
        return true;
    }
    bool expect(char c) {
        if (consume(c)) return true;
        return fail(std::string("expected '") + c + "'");
    }
    bool fail(std::string what) {
        if (error.empty()) error = "bad JSON in the response: " + std::move(what);
        return false;
    }

    bool string(std::string& out) {
        out.clear();
        if (!expect('"')) return false;
        for (;;) {
            int c = _in.get();
            if (c < 0) return fail("unterminated string");
            if (c == '"') return true;
            if (c != '\\') {
                out.push_back(static_cast<char>(c));
                continue;
            }
            int e = _in.get();
            switch (e) {
                case '"':
                    out.push_back('"');
                    break;
                case '\\':
                    out.push_back('\\');
                    break;
                case '/':
                    out.push_back('/');
                    break;
                case 'b':
                    out.push_back('\b');
                    break;
                case 'f':
                    out.push_back('\f');
                    break;
                case 'n':
                    out.push_back('\n');
                    break;
                case 'r':
                    out.push_back('\r');
                    break;
                case 't':
                    out.push_back('\t');
                    break;
                case 'u': {
                    uint32_t cp = 0;
                    if (!hex4(cp)) return false;
                    if (cp >= 0xd800 && cp <= 0xdbff && _in.peek() == '\\') {
                        _in.get();
                        uint32_t lo = 0;
                        if (_in.get() != 'u' || !hex4(lo)) return fail("bad surrogate pair");
                        cp = (lo >= 0xdc00 && lo <= 0xdfff)
                                 ? 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00)
                                 : 0xfffd;
                    } else if (cp >= 0xd800 && cp <= 0xdfff) {
                        cp = 0xfffd;  // a lone surrogate
                    }
                    append_utf8(out, cp);
                    break;
                }
                default:
                    return fail("bad escape");
            }
        }
    }

    bool number(value& out) {
        skip_ws();
        std::string text;
        while (text.size() < 64) {
            int c = _in.peek();
            if (c < 0 || !std::strchr("-+0123456789.eE", c)) break;
            text.push_back(static_cast<char>(_in.get()));
        }
        if (text.empty()) return fail("expected a value");
        if (text.find_first_of(".eE") == std::string::npos) {
            int64_t v = 0;
            auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
            if (ec == std::errc() && p == text.data() + text.size()) {
                out = v;
                return true;
            }
        }
        char* end = nullptr;
        double d = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size()) return fail("bad number");
        out = d;
        return true;
    }

    // A result cell: number, string, null, or {"base64": "..."}.
    bool cell(value& out) {
        int c = peek();
        if (c == '"') {
            std::string s;
            if (!string(s)) return false;
            out = std::move(s);
            return true;
        }
        if (c == 'n') {
            out = std::monostate{};
            return literal("null");
        }
        if (c == 't' || c == 'f') {
            out = int64_t{c == 't'};
            return literal(c == 't' ? "true" : "false");
        }
        if (c == '{') {
            _in.get();
            std::string key, text;
            bool have = false;
            if (!consume('}')) {
                do {
                    if (!string(key) || !expect(':')) return false;
                    if (key == "base64") {
                        if (!string(text)) return false;
                        have = true;
                    } else if (!skip_value()) {
                        return false;
                    }
                } while (consume(','));
                if (!expect('}')) return false;
            }
            auto raw = have ? base64_decode(text) : std::nullopt;
            if (!raw) return fail("an object cell without valid base64");
            out = bytes(raw->begin(), raw->end());
            return true;
        }
        return number(out);
    }

    bool literal(std::string_view word) {
        skip_ws();
        for (char w : word)
            if (_in.get() != w) return fail("bad literal");
        return true;
    }

    bool skip_value(int depth = 0) {
        if (depth > 64) return fail("nested too deeply");
        int c = peek();
        if (c == '{' || c == '[') {
            char close = c == '{' ? '}' : ']';
            _in.get();
            if (consume(close)) return true;
            do {
                if (c == '{') {
                    std::string key;
                    if (!string(key) || !expect(':')) return false;
                }
                if (!skip_value(depth + 1)) return false;
            } while (consume(','));
            return expect(close);
        }
        value ignored;
        return cell(ignored);
    }

    // Runs `member` for each key of an object.
    template <typename F>
    bool object(F&& member) {
        if (!expect('{')) return false;
        if (consume('}')) return true;
        std::string key;
        do {
            if (!string(key) || !expect(':')) return false;
            if (!member(key)) return false;
        } while (consume(','));
        return expect('}');
    }

    // Runs `element` for each element of an array.
    template <typename F>
    bool array(F&& element) {
        if (!expect('[')) return false;
        if (consume(']')) return true;
        do {
            if (!element()) return false;
        } while (consume(','));
        return expect(']');
    }

  private:
    void skip_ws() {
        for (int c = _in.peek(); c == ' ' || c == '\n' || c == '\r' || c == '\t'; c = _in.peek())
            _in.get();
    }
    bool hex4(uint32_t& out) {
        for (int i = 0; i < 4; ++i) {
            int c = _in.get();
            int d = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
            if (d < 0) return fail("bad \\u escape");
            out = out << 4 | static_cast<uint32_t>(d);
        }
        return true;
    }
    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
            out.push_back(static_cast<char>(0xc0 | cp >> 6));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        } else if (cp < 0x10000) {
            out.push_back(static_cast<char>(0xe0 | cp >> 12));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        } else {
            out.push_back(static_cast<char>(0xf0 | cp >> 18));
            out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
            out.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
        }
    }

    buffered_reader& _in;
};

client_error transport_error(std::string message) {
    client_error e;
    e.where = client_error::origin::transport;
    e.kind = "transport";
    e.message = std::move(message);
    return e;
}

// {"kind":...,"sqlstate":...,"message":...}
bool parse_error_object(json_pull& j, client_error& e) {
    return j.object([&](const std::string& key) {
        if (key == "kind") return j.string(e.kind);
        if (key == "sqlstate") return j.string(e.sqlstate);
        if (key == "message") return j.string(e.message);
        return j.skip_value();
    });
}

client_error connect_error(std::string message) {
    client_error e;
    e.where = client_error::origin::connect;
    e.kind = "connect";
    e.message = std::move(message);
    return e;
}

exchange_options exchange_options_of(const client_options& o) {
    exchange_options x;
    x.connect_timeout_ms = o.connect_timeout_ms;
    x.read_timeout_ms = o.read_timeout_ms;
    x.tls = o.tls;
    x.tls_ca_file = o.tls_ca_file;
    x.tls_cert_file = o.tls_cert_file;
    x.tls_key_file = o.tls_key_file;
    x.auth_user = o.auth_user;
    x.auth_password = o.auth_password;
    return x;
}

// Sends the request and waits for the answer's head.
std::variant<std::unique_ptr<curl_exchange>, client_error> exchange(
    const net::host_port& server, std::string_view method, std::string_view target,
    std::vector<std::string> headers, std::string body, const client_options& opts) {
    if (!opts.auth_user.empty() && !opts.tls)
        return connect_error("Basic credentials are sent over https:// only");
    headers.emplace_back("Accept: application/json");
    auto x = curl_exchange::start(server, method, target, headers, std::move(body),
                                  exchange_options_of(opts));
    if (auto* f = std::get_if<exchange_failure>(&x)) {
        auto what = server.to_string() + ": " + f->message;
        return f->connecting ? connect_error(what) : transport_error(what);
    }
    return std::get<std::unique_ptr<curl_exchange>>(std::move(x));
}

std::optional<client_error> body_failure(const curl_exchange& x) {
    if (!x.failure()) return std::nullopt;
    return transport_error("reading the answer: " + x.failure()->message);
}

}  // namespace

std::string sql_request_target(const client_request& req) {
    std::string target = "/v1/sql?format=json";
    if (req.timeout_ms) target += "&timeout_ms=" + std::to_string(*req.timeout_ms);
    if (req.max_rows) target += "&max_rows=" + std::to_string(*req.max_rows);
    for (const auto& p : req.params) target += "&param=" + percent_encode(p);
    return target;
}

std::optional<client_error> decode_json_result(buffered_reader& in, result_sink& sink) {
    json_pull j(in);
    std::vector<column> cols;
    std::vector<value> row;
    std::optional<client_error> carried;
    std::optional<int64_t> changes;
    std::string command;
    result_summary summary;
    bool begun = false;
    bool ok = j.object([&](const std::string& key) {
        if (key == "columns") {
            return j.array([&] {
                column c;
                return j.object([&](const std::string& k) {
                    if (k == "name") return j.string(c.name);
                    if (k == "type" && j.peek() == '"') return j.string(c.decl_type);
                    return j.skip_value();
                }) && (cols.push_back(std::move(c)), true);
            });
        }
        if (key == "rows") {
            return j.array([&] {
                if (!begun) sink.begin_rows(cols);
                begun = true;
                row.clear();
                bool r = j.array([&] { return j.cell(row.emplace_back()); });
                if (r) sink.row(row);
                return r;
            });
        }
        if (key == "command") return j.string(command);
        if (key == "changes" || key == "row_count" || key == "elapsed_ms") {
            value v;
            if (!j.number(v)) return false;
            double d =
                v.index() == 1 ? static_cast<double>(std::get<int64_t>(v)) : std::get<double>(v);
            if (key == "changes") changes = static_cast<int64_t>(d);
            if (key == "row_count") summary.row_count = static_cast<uint64_t>(d);
            if (key == "elapsed_ms") summary.elapsed_ms = d;
            return true;
        }
        if (key == "error") {
            client_error e;
            e.http_status = 200;
            if (!parse_error_object(j, e)) return false;
            carried = std::move(e);
            return true;
        }
        return j.skip_value();
    });
    if (!ok) return transport_error(j.error);
    if (carried) return carried;
    if (changes) {
        sink.no_rows(command, *changes);
    } else if (!begun) {
        sink.begin_rows(cols);
    }
    sink.finish(summary);
    return std::nullopt;
}

std::variant<http_reply, client_error> http_call(const net::host_port& server,
                                                 std::string_view method, std::string_view target,
                                                 std::string_view body,
                                                 const client_options& opts) {
    std::vector<std::string> headers;
    if (!body.empty()) headers.emplace_back("Content-Type: application/json");
    auto x = exchange(server, method, target, headers, std::string(body), opts);
    if (auto* e = std::get_if<client_error>(&x)) return std::move(*e);
    auto& in = *std::get<std::unique_ptr<curl_exchange>>(x);
    http_reply reply;
    reply.status = in.status();
    char buf[16384];
    for (size_t n; (n = in.read_some(buf, sizeof buf)) > 0;) reply.body.append(buf, n);
    if (auto e = body_failure(in)) return *e;
    return reply;
}

std::optional<client_error> run_sql(const net::host_port& server, const client_request& req,
                                    result_sink& sink, const client_options& opts) {
    auto x = exchange(server, "POST", sql_request_target(req),
                      {"Content-Type: application/sql"}, req.sql, opts);
    if (auto* e = std::get_if<client_error>(&x)) return std::move(*e);
    auto& in = *std::get<std::unique_ptr<curl_exchange>>(x);
    buffered_reader body([&in](char* buf, size_t n) { return in.read_some(buf, n); });
    if (in.status() != 200) {
        std::string text;
        char buf[4096];
        for (size_t n; text.size() < max_error_body && (n = body.read_some(buf, sizeof buf)) > 0;)
            text.append(buf, n);
        buffered_reader err_in([&text, pos = size_t{0}](char* dst, size_t n) mutable {
            size_t take = std::min(n, text.size() - pos);
            text.copy(dst, take, pos);
            pos += take;
            return take;
        });
        json_pull j(err_in);
        client_error e;
        e.where = client_error::origin::server;
        e.http_status = in.status();
        bool parsed = j.object([&](const std::string& key) {
            return key == "error" ? parse_error_object(j, e) : j.skip_value();
        });
        if (!parsed || e.message.empty()) {
            e.kind = "http";
            e.message = "HTTP " + std::to_string(in.status());
        }
        return e;
    }
    auto e = decode_json_result(body, sink);
    if (auto f = body_failure(in)) return f;
    return e;
}

result<server_target> parse_server_flags(std::string_view server, const std::string& auth_user,
                                         const std::string& tls_ca, const std::string& tls_cert,
                                         const std::string& tls_key) {
    auto bad = [](std::string why) { return error{errc::invalid_argument, std::move(why)}; };
    server_target t;
    std::string_view rest = server;
    if (rest.starts_with("https://")) {
        t.opts.tls = true;
        rest.remove_prefix(8);
    } else if (rest.starts_with("http://")) {
        rest.remove_prefix(7);
    } else if (rest.find("://") != std::string_view::npos) {
        return bad("--server: the scheme must be http:// or https://, in '" + std::string(server) +
                   "'");
    }
    if (rest.ends_with('/')) rest.remove_suffix(1);
    auto addr = net::parse_host_port(std::string(rest));
    if (!addr) return bad("--server: " + addr.err().message);
    t.address = std::move(*addr);
    if (!tls_ca.empty()) {
        if (!t.opts.tls)
            return bad("--tls-ca is for an https:// server: --server https://HOST:PORT");
        t.opts.tls_ca_file = tls_ca;
    }
    if (!tls_cert.empty() || !tls_key.empty()) {
        if (!t.opts.tls)
            return bad("--tls-cert and --tls-key are for an https:// server: --server "
                       "https://HOST:PORT");
        if (tls_cert.empty() || tls_key.empty())
            return bad("--tls-cert and --tls-key go together");
        t.opts.tls_cert_file = tls_cert;
        t.opts.tls_key_file = tls_key;
    }
    if (!auth_user.empty()) {
        if (!t.opts.tls)
            return bad(
                "--auth sends a password, which goes over https:// only: --server "
                "https://HOST:PORT");
        const char* password = std::getenv(password_env);
        if (!password)
            return bad(std::string("--auth ") + auth_user + ": put the password in " +
                       password_env);
        t.opts.auth_user = auth_user;
        t.opts.auth_password = password;
    }
    return t;
}

}  // namespace sluice::sql::http

#include "sql/http/curl_exchange.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>

namespace sluice::sql::http {
namespace {

void global_init() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

bool connect_stage(CURLcode c) {
    switch (c) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_SSL_ISSUER_ERROR:
        case CURLE_SSL_CRL_BADFILE:
        case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
        case CURLE_SSL_INVALIDCERTSTATUS:
            return true;
        default:
            return false;
    }
}

}  // namespace

std::variant<std::unique_ptr<curl_exchange>, exchange_failure> curl_exchange::start(
    const net::host_port& server, std::string_view method, std::string_view target,
    const std::vector<std::string>& headers, std::string body, const exchange_options& opts) {
    global_init();
    std::unique_ptr<curl_exchange> x(new curl_exchange());
    x->_easy = curl_easy_init();
    x->_multi = curl_multi_init();
    if (!x->_easy || !x->_multi) return exchange_failure{true, "libcurl: cannot start"};
    CURL* e = x->_easy;
    const bool v6 = server.host.find(':') != std::string::npos;
    const std::string url = fmt::format("{}://{}:{}{}", opts.tls ? "https" : "http",
                                        v6 ? "[" + server.host + "]" : server.host, server.port,
                                        target);
    curl_easy_setopt(e, CURLOPT_URL, url.c_str());
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_PROXY, "");  // never the environment's proxy
    curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->_error);
    curl_easy_setopt(e, CURLOPT_USERAGENT, "sluice-cli");
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opts.connect_timeout_ms));
    if (opts.read_timeout_ms > 0) {
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                         std::max(1L, static_cast<long>(opts.read_timeout_ms / 1000)));
    }
    if (opts.tls) {
        if (!opts.tls_ca_file.empty())
            curl_easy_setopt(e, CURLOPT_CAINFO, opts.tls_ca_file.c_str());
        if (!opts.tls_cert_file.empty())
            curl_easy_setopt(e, CURLOPT_SSLCERT, opts.tls_cert_file.c_str());
        if (!opts.tls_key_file.empty())
            curl_easy_setopt(e, CURLOPT_SSLKEY, opts.tls_key_file.c_str());
    }
    if (!opts.auth_user.empty()) {
        curl_easy_setopt(e, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
        curl_easy_setopt(e, CURLOPT_USERNAME, opts.auth_user.c_str());
        curl_easy_setopt(e, CURLOPT_PASSWORD, opts.auth_password.c_str());
    }
    x->_body_out = std::move(body);
    if (method == "GET") {
        curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
    } else {
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, x->_body_out.data());
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE,
                         static_cast<curl_off_t>(x->_body_out.size()));
        // libcurl copies the string.
        if (method != "POST")
            curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, std::string(method).c_str());
    }
    // No "Expect: 100-continue" wait on larger bodies: the broker reads them at once.
    x->_headers = curl_slist_append(x->_headers, "Expect:");
    for (const auto& h : headers) x->_headers = curl_slist_append(x->_headers, h.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->_headers);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &curl_exchange::on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, x.get());
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &curl_exchange::on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, x.get());
    curl_multi_add_handle(x->_multi, e);
    while (!x->_head_done && x->pump()) {
    }
    if (!x->_head_done) {
        if (x->_failure) return std::move(*x->_failure);
        return exchange_failure{false, "the server closed the connection without an answer"};
    }
    return x;
}

curl_exchange::~curl_exchange() {
    if (_multi && _easy) curl_multi_remove_handle(_multi, _easy);
    if (_easy) curl_easy_cleanup(_easy);
    if (_multi) curl_multi_cleanup(_multi);
    curl_slist_free_all(_headers);
}

size_t curl_exchange::on_body(char* data, size_t size, size_t n, void* self) {
    auto* x = static_cast<curl_exchange*>(self);
    x->_head_done = true;
    if (x->_pos == x->_buf.size()) {
        x->_buf.clear();
        x->_pos = 0;
    }
    x->_buf.append(data, size * n);
    return size * n;
}

size_t curl_exchange::on_header(char* data, size_t size, size_t n, void* self) {
    auto* x = static_cast<curl_exchange*>(self);
    std::string_view line(data, size * n);
    if (line == "\r\n" || line == "\n") {
        long code = 0;
        curl_easy_getinfo(x->_easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) {  // past 1xx answers
            x->_status = static_cast<int>(code);
            x->_head_done = true;
        }
    }
    return size * n;
}

bool curl_exchange::pump() {
    if (_done) return false;
    int running = 0;
    CURLMcode mc = curl_multi_perform(_multi, &running);
    if (mc == CURLM_OK && running > 0) {
        // Until the socket has something (or a timer is due); libcurl bounds the wait.
        mc = curl_multi_poll(_multi, nullptr, 0, 1000, nullptr);
        if (mc == CURLM_OK) return true;
    }
    _done = true;
    if (mc != CURLM_OK) {
        _failure = exchange_failure{!_head_done, curl_multi_strerror(mc)};
        return false;
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(_multi, &left)) {
        if (m->msg != CURLMSG_DONE || m->data.result == CURLE_OK) continue;
        std::string why = _error[0] ? _error : curl_easy_strerror(m->data.result);
        _failure = exchange_failure{!_head_done && connect_stage(m->data.result), why};
    }
    if (_status == 0 && _head_done) {
        long code = 0;
        curl_easy_getinfo(_easy, CURLINFO_RESPONSE_CODE, &code);
        _status = static_cast<int>(code);
    }
    return false;
}

size_t curl_exchange::read_some(char* buf, size_t n) {
    while (_pos == _buf.size() && pump()) {
    }
    const size_t take = std::min(n, _buf.size() - _pos);
    std::memcpy(buf, _buf.data() + _pos, take);
    _pos += take;
    return take;
}

}  // namespace sluice::sql::http

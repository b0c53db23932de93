// The S3 client of shared mode: libcurl does HTTP and signs every request with AWS
// Signature Version 4 (CURLOPT_AWS_SIGV4); this file builds the URLs, retries what S3
// says to retry, and reads the XML of listings and errors (s3_xml.h).

#include <curl/curl.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "metrics/registry.h"
#include "shared/object_store.h"
#include "shared/s3_xml.h"

namespace sluice::shared {

namespace {

using steady = std::chrono::steady_clock;

// SHA-256 of the body, hex, for x-amz-content-sha256: S3 checks the body against it.
std::string sha256_hex(std::string_view data) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) out += fmt::format("{:02x}", digest[i]);
    return out;
}

// SigV4's URI encoding: every byte but A-Z a-z 0-9 - _ . ~ as %XX (and '/' too unless
// it separates a path). libcurl 7.88 signs the path and query as they are written, so
// they are written already in canonical form (query parameters sorted by name).
std::string uri_encode(std::string_view s, bool keep_slash) {
    std::string out;
    for (unsigned char c : s) {
        if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ||
            (keep_slash && c == '/')) {
            out += static_cast<char>(c);
        } else {
            out += fmt::format("%{:02X}", c);
        }
    }
    return out;
}

struct http_response {
    long status = 0;
    std::map<std::string, std::string> headers;  // names in lower case
    std::string body;
};

struct transfer {
    std::string_view upload;
    size_t uploaded = 0;
    http_response* response = nullptr;
};

size_t on_write(char* data, size_t size, size_t n, void* user) {
    static_cast<transfer*>(user)->response->body.append(data, size * n);
    return size * n;
}

size_t on_read(char* buffer, size_t size, size_t n, void* user) {
    auto* t = static_cast<transfer*>(user);
    size_t len = std::min(size * n, t->upload.size() - t->uploaded);
    std::memcpy(buffer, t->upload.data() + t->uploaded, len);
    t->uploaded += len;
    return len;
}

size_t on_header(char* data, size_t size, size_t n, void* user) {
    std::string_view line(data, size * n);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
        std::string name(line.substr(0, colon));
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return std::tolower(c); });
        std::string_view value = line.substr(colon + 1);
        while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
            value.remove_prefix(1);
        while (!value.empty() &&
               (value.back() == '\r' || value.back() == '\n' || value.back() == ' ')) {
            value.remove_suffix(1);
        }
        static_cast<transfer*>(user)->response->headers[name] = std::string(value);
    }
    return size * n;
}

std::once_flag curl_init_once;

struct request {
    const char* method = "GET";
    std::string path_and_query;  // after the endpoint (path-style) or host (virtual-hosted)
    std::string_view body;       // uploaded for PUT
    std::optional<byte_range> range;
    bool no_body = false;  // HEAD
};

// One attempt's outcome: a response, or a transport error (curl's) with its text.
struct attempt {
    CURLcode curl = CURLE_OK;
    std::string curl_error;
    http_response response;
};

// What GET /metrics shows of the store (docs/operations.md): every attempt, retries
// included, since each is a request the store bills. A series is found under its
// family's lock at each request, which costs nothing next to the request itself.
struct store_series {
    metrics::family<metrics::counter>& requests;
    metrics::counter& sent;
    metrics::counter& received;
};

const store_series& series() {
    static const store_series s{
        metrics::global().counters(
            "sluice_object_store_requests_total",
            "Requests sent to the object store, each attempt counted (retries too), by "
            "operation (PUT, GET, HEAD, DELETE, LIST) and outcome (ok, not_found, "
            "client_error, server_error, no_answer)",
            {"operation", "outcome"}),
        metrics::global().counter_of("sluice_object_store_sent_bytes_total",
                                     "Bytes of object bodies sent to the object store"),
        metrics::global().counter_of("sluice_object_store_received_bytes_total",
                                     "Bytes of response bodies received from the object store"),
    };
    return s;
}

void count_attempt(const request& req, const attempt& a) {
    std::string_view op = req.method;
    if (op == "GET" && req.path_and_query.find("list-type=") != std::string::npos) op = "LIST";
    std::string_view outcome = "no_answer";
    if (a.curl == CURLE_OK) {
        long st = a.response.status;
        outcome = st >= 200 && st < 300 ? "ok"
                  : st == 404           ? "not_found"
                  : st >= 500           ? "server_error"
                                        : "client_error";
    }
    const auto& s = series();
    s.requests.with({std::string(op), std::string(outcome)}).inc();
    s.sent.inc(req.body.size());
    s.received.inc(a.response.body.size());
}

// 500, 502, 503 (SlowDown) and 504 are what S3 asks clients to retry; so is a
// connection that failed or an attempt that timed out.
bool retriable(const attempt& a) {
    if (a.curl != CURLE_OK) {
        switch (a.curl) {
            case CURLE_COULDNT_CONNECT:
            case CURLE_COULDNT_RESOLVE_HOST:
            case CURLE_OPERATION_TIMEDOUT:
            case CURLE_SEND_ERROR:
            case CURLE_RECV_ERROR:
            case CURLE_GOT_NOTHING:
            case CURLE_PARTIAL_FILE:
            case CURLE_SSL_CONNECT_ERROR:
                return true;
            default:
                return false;
        }
    }
    long s = a.response.status;
    // 429: stores that throttle as HTTP does (Google Cloud Storage's XML API); 400
    // RequestTimeout: S3 closed an upload that stalled.
    return s == 429 || s == 500 || s == 502 || s == 503 || s == 504 ||
           (s == 400 && s3_xml::first_text(a.response.body, "Code") == "RequestTimeout");
}

// "503 SlowDown (Please reduce your request rate.)" from an S3 error body.
std::string describe_status(const http_response& r) {
    std::string code = s3_xml::first_text(r.body, "Code");
    std::string message = s3_xml::first_text(r.body, "Message");
    std::string out = std::to_string(r.status);
    if (!code.empty()) out += " " + code;
    if (!message.empty()) out += " (" + message + ")";
    return out;
}

class s3_object_store final : public object_store {
  public:
    explicit s3_object_store(s3_config config) : _config(std::move(config)) {
        std::call_once(curl_init_once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
        while (!_config.endpoint.empty() && _config.endpoint.back() == '/')
            _config.endpoint.pop_back();
        _sigv4 = "aws:amz:" + _config.region + ":s3";
        _userpwd = _config.access_key + ":" + _config.secret_key;
        if (_config.path_style) {
            _base = _config.endpoint + "/" + uri_encode(_config.bucket, false);
        } else {
            size_t scheme = _config.endpoint.find("://");
            size_t host_at = scheme == std::string::npos ? 0 : scheme + 3;
            _base = _config.endpoint.substr(0, host_at) + _config.bucket + "." +
                    _config.endpoint.substr(host_at);
        }
    }

    ~s3_object_store() override {
        for (CURL* h : _idle) curl_easy_cleanup(h);
    }

    s3_object_store(const s3_object_store&) = delete;
    s3_object_store& operator=(const s3_object_store&) = delete;

    result<void> put(std::string_view key, std::string_view data) override {
        request req{"PUT", object_path(key), data, {}, false};
        auto r = call(req, "PUT " + std::string(key));
        if (!r) return r.err();
        return {};
    }

    result<std::string> get(std::string_view key, std::optional<byte_range> range) override {
        if (range && range->length == 0) return std::string();
        request req{"GET", object_path(key), {}, range, false};
        auto r = call(req, "GET " + std::string(key));
        if (!r) return r.err();
        if (range && r->status == 200) {  // a server that ignored Range sent it all
            if (range->offset >= r->body.size()) {
                return error{
                    errc::out_of_range,
                    fmt::format("{}: GET {}: range starts at {} past the object's {} bytes",
                                describe(), key, range->offset, r->body.size())};
            }
            return r->body.substr(range->offset, range->length);
        }
        return std::move(r->body);
    }

    result<object_info> head(std::string_view key) override {
        request req{"HEAD", object_path(key), {}, {}, true};
        auto r = call(req, "HEAD " + std::string(key));
        if (!r) return r.err();
        object_info info;
        info.key = std::string(key);
        const std::string& len = r->headers["content-length"];
        std::from_chars(len.data(), len.data() + len.size(), info.size);
        info.etag = unquote(r->headers["etag"]);
        return info;
    }

    result<void> remove(std::string_view key) override {
        request req{"DELETE", object_path(key), {}, {}, false};
        auto r = call(req, "DELETE " + std::string(key));
        if (!r && r.code() != errc::not_found) return r.err();  // absent: already gone
        return {};
    }

    result<std::vector<object_info>> list(std::string_view prefix) override {
        std::vector<object_info> out;
        std::string token;
        std::string full_prefix = _config.prefix + std::string(prefix);
        do {
            // Parameters in name order: libcurl 7.88 signs the query as written.
            std::string query = "?";
            if (!token.empty()) query += "continuation-token=" + uri_encode(token, false) + "&";
            query += "list-type=2&max-keys=" + std::to_string(_config.list_page_size);
            query += "&prefix=" + uri_encode(full_prefix, false);
            // Path-style: ENDPOINT/BUCKET?...; virtual-hosted: BUCKET.HOST/?...
            request req{"GET", (_config.path_style ? "" : "/") + query, {}, {}, false};
            auto r = call(req, "LIST " + std::string(prefix));
            if (!r) return r.err();
            for (std::string_view c : s3_xml::elements(r->body, "Contents")) {
                object_info info;
                std::string key = s3_xml::first_text(c, "Key");
                if (key.compare(0, _config.prefix.size(), _config.prefix) != 0) continue;
                info.key = key.substr(_config.prefix.size());
                std::string size = s3_xml::first_text(c, "Size");
                std::from_chars(size.data(), size.data() + size.size(), info.size);
                info.etag = unquote(s3_xml::first_text(c, "ETag"));
                info.last_modified_ms =
                    s3_xml::parse_time_ms(s3_xml::first_text(c, "LastModified"));
                out.push_back(std::move(info));
            }
            token = s3_xml::first_text(r->body, "IsTruncated") == "true"
                        ? s3_xml::first_text(r->body, "NextContinuationToken")
                        : std::string();
        } while (!token.empty());
        return out;
    }

    std::string describe() const override {
        return fmt::format("s3://{}/{} at {}", _config.bucket, _config.prefix, _config.endpoint);
    }

  private:
    static std::string unquote(std::string s) {
        if (s.size() >= 2 && s.front() == '"' && s.back() == '"') return s.substr(1, s.size() - 2);
        return s;
    }

    std::string object_path(std::string_view key) const {
        return "/" + uri_encode(_config.prefix + std::string(key), true);
    }

    CURL* checkout() {
        {
            std::lock_guard lock(_mu);
            if (!_idle.empty()) {
                CURL* h = _idle.back();
                _idle.pop_back();
                return h;
            }
        }
        return curl_easy_init();
    }

    void checkin(CURL* h) {
        std::lock_guard lock(_mu);
        _idle.push_back(h);
    }

    attempt perform(const request& req, std::chrono::milliseconds timeout) {
        attempt a;
        CURL* h = checkout();
        if (h == nullptr) {
            a.curl = CURLE_FAILED_INIT;
            a.curl_error = "curl_easy_init failed";
            return a;
        }
        curl_easy_reset(h);  // keeps the connection cache; forgets the last request's options
        transfer t{req.body, 0, &a.response};
        std::string url = _base + req.path_and_query;
        char errbuf[CURL_ERROR_SIZE] = {0};
        curl_slist* headers = nullptr;
        std::string hash =
            "x-amz-content-sha256: " +
            (_config.sign_payload || req.body.empty() ? sha256_hex(req.body) : "UNSIGNED-PAYLOAD");
        headers = curl_slist_append(headers, hash.c_str());
        headers = curl_slist_append(headers, "Expect:");  // no 100-continue round trip
        std::string range;
        if (req.range) {
            range = fmt::format("Range: bytes={}-{}", req.range->offset,
                                req.range->offset + req.range->length - 1);
            headers = curl_slist_append(headers, range.c_str());
        }
        curl_easy_setopt(h, CURLOPT_URL, url.c_str());
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, _sigv4.c_str());
        curl_easy_setopt(h, CURLOPT_USERPWD, _userpwd.c_str());
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
                         static_cast<long>(_config.connect_timeout.count()));
        curl_easy_setopt(h, CURLOPT_TIMEOUT_MS,
                         static_cast<long>(std::max<int64_t>(1, timeout.count())));
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &t);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, &t);
        if (std::string_view(req.method) == "PUT") {
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &t);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
        } else if (req.no_body) {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else if (std::string_view(req.method) != "GET") {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, req.method);
        }
        a.curl = curl_easy_perform(h);
        if (a.curl == CURLE_OK) {
            curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &a.response.status);
        } else {
            a.curl_error = errbuf[0] != 0 ? errbuf : curl_easy_strerror(a.curl);
        }
        count_attempt(req, a);
        curl_slist_free_all(headers);
        if (a.curl == CURLE_OK) {
            checkin(h);
        } else {
            curl_easy_cleanup(h);  // a broken connection is not reused
        }
        return a;
    }

    // Runs `req` until it succeeds, fails for good, or the retry deadline passes.
    result<http_response> call(const request& req, const std::string& what) {
        auto start = steady::now();
        auto deadline = start + _config.retry_deadline;
        auto backoff = _config.backoff_initial;
        thread_local std::minstd_rand rng(std::random_device{}());
        for (int attempts = 1;; ++attempts) {
            auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
            attempt a = perform(req, std::min(_config.request_timeout,
                                              std::max(left, std::chrono::milliseconds(1))));
            if (a.curl == CURLE_OK && a.response.status >= 200 && a.response.status < 300) {
                return std::move(a.response);
            }
            std::string failure = a.curl != CURLE_OK ? std::string("no answer: ") + a.curl_error
                                                     : describe_status(a.response);
            if (a.curl == CURLE_OK && a.response.status == 404) {
                return error{errc::not_found, fmt::format("{}: {}: {}", describe(), what, failure)};
            }
            if (a.curl == CURLE_OK && a.response.status == 416) {
                return error{errc::out_of_range,
                             fmt::format("{}: {}: {}", describe(), what, failure)};
            }
            auto elapsed =
                std::chrono::duration_cast<std::chrono::milliseconds>(steady::now() - start);
            if (!retriable(a)) {
                return error{errc::io_error, fmt::format("{}: {}: {}", describe(), what, failure)};
            }
            // Full jitter (a random wait up to the backoff), so that many clients that
            // were throttled together do not come back together.
            auto wait = std::chrono::milliseconds(
                std::uniform_int_distribution<int64_t>(backoff.count() / 2, backoff.count())(rng));
            if (steady::now() + wait >= deadline) {
                return error{
                    errc::timed_out,
                    fmt::format(
                        "{}: {}: gave up after {} attempts in {} ms (retry deadline {} ms); "
                        "last: {}",
                        describe(), what, attempts, elapsed.count(), _config.retry_deadline.count(),
                        failure)};
            }
            std::this_thread::sleep_for(wait);
            backoff = std::min(backoff * 2, _config.backoff_max);
        }
    }

    s3_config _config;
    std::string _sigv4;
    std::string _userpwd;
    std::string _base;  // scheme://host[:port][/bucket]
    std::mutex _mu;
    std::vector<CURL*> _idle;
};

}  // namespace

result<void> parse_s3_url(std::string_view url, s3_config& config) {
    constexpr std::string_view scheme = "s3://";
    if (url.substr(0, scheme.size()) != scheme) {
        return error{errc::invalid_config,
                     fmt::format("'{}' is not an s3://BUCKET/PREFIX URL", url)};
    }
    url.remove_prefix(scheme.size());
    size_t slash = url.find('/');
    config.bucket = std::string(url.substr(0, slash));
    config.prefix =
        slash == std::string_view::npos ? std::string() : std::string(url.substr(slash + 1));
    if (config.bucket.empty()) return error{errc::invalid_config, "the s3:// URL names no bucket"};
    if (!config.prefix.empty() && config.prefix.back() != '/') config.prefix += '/';
    return {};
}

result<std::unique_ptr<object_store>> make_s3_object_store(s3_config config) {
    if (config.endpoint.empty()) return error{errc::invalid_config, "no S3 endpoint given"};
    if (config.endpoint.rfind("http://", 0) != 0 && config.endpoint.rfind("https://", 0) != 0) {
        return error{
            errc::invalid_config,
            fmt::format("S3 endpoint '{}' must start with http:// or https://", config.endpoint)};
    }
    if (config.bucket.empty()) return error{errc::invalid_config, "no S3 bucket given"};
    if (config.access_key.empty() || config.secret_key.empty()) {
        return error{errc::invalid_config, "no S3 access key and secret given"};
    }
    if (config.list_page_size < 1 || config.list_page_size > 1000) {
        return error{errc::invalid_config, "the S3 list page size must be within 1..1000"};
    }
    return std::unique_ptr<object_store>(new s3_object_store(std::move(config)));
}

}  // namespace sluice::shared

#pragma once

// The object store of shared mode (docs/shared-mode.md): whole objects written once,
// read whole or by byte range, listed by prefix and deleted. Keys are relative to the
// store's prefix; implementations add it. Errors are values: not_found for an absent
// key, out_of_range for a range past the end, io_error for a failure the store reported
// or a connection that could not be made, timed_out when retries ran out of time.

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sluice::shared {

struct object_info {
    std::string key;  // relative to the store's prefix
    uint64_t size = 0;
    std::string etag;  // as the store gives it, without quotes
    // When the store wrote it, by the store's clock, ms since the epoch (LIST only; -1 when
    // the store did not say). The cleanup of objects left by crashed uploads judges age by it.
    int64_t last_modified_ms = -1;
};

// `length` bytes from `offset`; a range reaching past the end is cut at the end.
struct byte_range {
    uint64_t offset = 0;
    uint64_t length = 0;
};

class object_store {
  public:
    virtual ~object_store() = default;
    // Writes the whole object (replacing one with the same key).
    virtual result<void> put(std::string_view key, std::string_view data) = 0;
    virtual result<std::string> get(std::string_view key, std::optional<byte_range> range = {}) = 0;
    virtual result<object_info> head(std::string_view key) = 0;
    // Deleting an absent key succeeds (as on S3).
    virtual result<void> remove(std::string_view key) = 0;
    // Every object whose key starts with `prefix`, in key order (all pages).
    virtual result<std::vector<object_info>> list(std::string_view prefix) = 0;
    // Where the store is, for messages ("s3://bucket/prefix at http://host:port").
    virtual std::string describe() const = 0;
};

// Settings of the S3 client (s3_object_store.cc).
struct s3_config {
    std::string endpoint;  // "http://127.0.0.1:9000" or "https://s3.eu-west-1.amazonaws.com"
    std::string region = "us-east-1";
    std::string bucket;
    std::string prefix;  // "" or "a/b/": prepended to every key
    std::string access_key;
    std::string secret_key;
    // Path-style URLs (ENDPOINT/BUCKET/KEY), as local servers need; otherwise
    // virtual-hosted style (BUCKET.HOST/KEY), as AWS prefers.
    bool path_style = true;
    std::chrono::milliseconds connect_timeout{2000};
    // One attempt of one request (an 8 MB PUT at 10 MB/s takes under a second).
    std::chrono::milliseconds request_timeout{30000};
    // All attempts of one call: a request failing with a retriable error (429, 500, 502,
    // 503 SlowDown, 504, 400 RequestTimeout, a connection error, a timed out attempt) is
    // tried again after a backoff until this much time has passed since the call began.
    std::chrono::milliseconds retry_deadline{30000};
    std::chrono::milliseconds backoff_initial{50};
    std::chrono::milliseconds backoff_max{2000};
    // Sign the body's SHA-256 (x-amz-content-sha256), so that the store checks what it
    // received; false sends UNSIGNED-PAYLOAD, as AWS's SDKs do over HTTPS, where TLS
    // protects the body, and saves hashing it on both sides.
    bool sign_payload = true;
    // ListObjectsV2 page size (S3's maximum is 1000).
    int list_page_size = 1000;
};

// Reads "s3://BUCKET/PREFIX" into bucket and prefix (a prefix gets a trailing '/').
result<void> parse_s3_url(std::string_view url, s3_config& config);

// An S3-compatible client on libcurl, signing with AWS Signature Version 4
// (CURLOPT_AWS_SIGV4). Safe to use from several threads (a pool of connections).
result<std::unique_ptr<object_store>> make_s3_object_store(s3_config config);

// Objects as files under a local directory (a test double for other parts of shared
// mode; not a production store). Writes go to a temporary file renamed into place.
result<std::unique_ptr<object_store>> make_local_object_store(std::string directory);

}  // namespace sluice::shared

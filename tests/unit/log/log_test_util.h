#pragma once

// Shared helpers of the log tests: a temporary data directory, and appends that go
// through protocol::validate_batches exactly as the broker's produce path does.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "log/log_manager.h"
#include "protocol/record_batch.h"
#include "support/batch_builder.h"

namespace sluice::log::test {

namespace fs = std::filesystem;

struct temp_dir {
    temp_dir() {
        std::string tmpl = (fs::temp_directory_path() / "sluice-log-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path path;
};

inline result<append_info> append(partition_log& p, bytes payload, timestamp_ms now = 1000) {
    auto v = protocol::validate_batches(payload, {});
    if (!v) return v.err();
    return p.append(std::span<uint8_t>(payload), *v, now);
}

// Blocks until when_durable reports (5 s at most: the flusher runs continuously).
inline result<void> wait_durable(log_manager& m, partition_log* p, offset_t last) {
    auto done = std::make_shared<std::promise<result<void>>>();
    auto fut = done->get_future();
    m.when_durable(p, last, [done](result<void> r) { done->set_value(std::move(r)); });
    if (fut.wait_for(std::chrono::seconds(5)) != std::future_status::ready)
        return {errc::timed_out, "when_durable did not report"};
    return fut.get();
}

// Appends and waits until durable, so reads see the data.
inline append_info append_durable(log_manager& m, partition_log* p, bytes payload,
                                  timestamp_ms now = 1000) {
    auto r = append(*p, std::move(payload), now);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
    if (!r.ok()) return {};
    auto d = wait_durable(m, p, r->last_offset);
    EXPECT_TRUE(d.ok()) << (d.ok() ? "" : d.err().message);
    return *r;
}

// Splits read data back into batch headers.
inline std::vector<protocol::batch_header> batches_of(bytes_view data) {
    std::vector<protocol::batch_header> out;
    size_t pos = 0;
    while (pos < data.size()) {
        auto h = protocol::read_batch_header(data.subspan(pos));
        if (!h) break;
        out.push_back(*h);
        pos += h->size_bytes();
    }
    return out;
}

// A base time for tests that set record or append times (ms since the epoch).
constexpr timestamp_ms t0 = 1'000'000;

// A segment size that one 3-record batch with 40-byte values (about 250 bytes) fills:
// every append after a segment's first rolls it.
constexpr int64_t one_batch_segments = 300;

// A keyed record at `ts`; without a value it is a tombstone.
inline sluice::testing::test_record kv(std::string k, std::optional<std::string> v,
                                       timestamp_ms ts) {
    return {std::move(k), std::move(v), ts, {}};
}

inline fs::path partition_dir(const fs::path& data_dir, const std::string& topic, int p) {
    return data_dir / "logs" / (topic + "-" + std::to_string(p));
}

// A log manager over a temporary directory with one single-partition topic "t"
// (retention off unless a test sets cfg), restartable cleanly or as after a crash.
class one_partition_log : public ::testing::Test {
  protected:
    void SetUp() override { cfg.retention_ms = -1; }

    void open(size_t max_open_files = 16) {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, max_open_files});
        // Declared first, as the broker does from its catalog.
        mgr->add_topic("t", 1, cfg);
        auto r = mgr->open();
        ASSERT_TRUE(r.ok()) << r.err().message;
        summary = *r;
    }
    // A restart; `clean` false is what kill -9 leaves (no clean-shutdown marker).
    void reopen(bool clean) {
        mgr->close();
        mgr.reset();
        if (!clean) fs::remove(dir.path / "logs" / ".clean-shutdown");
        open();
    }
    partition_log* p() { return mgr->get("t", 0); }
    fs::path part() const { return partition_dir(dir.path, "t", 0); }

    temp_dir dir;
    log_config cfg;
    std::unique_ptr<log_manager> mgr;
    log_manager::open_summary summary;
};

}  // namespace sluice::log::test

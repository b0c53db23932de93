#pragma once

// The compaction tests' fixture (compaction_test.cc, compaction_lag_test.cc): one
// compacted topic "t" with one partition, appends, passes at a given time, and reads
// of every record as a consumer sees them.

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "log_test_util.h"

namespace sluice::log::test {

using sluice::testing::build_batch;
using sluice::testing::test_record;

struct rec {
    offset_t offset;
    std::string key;
    std::string value;  // "<null>" for a tombstone
    bool operator==(const rec&) const = default;
};

inline std::ostream& operator<<(std::ostream& os, const rec& r) {
    return os << r.offset << ":" << r.key << "=" << r.value;
}

inline std::string str(const std::optional<bytes_view>& v) {
    return v ? std::string(v->begin(), v->end()) : std::string("<null>");
}

class compaction_test : public ::testing::Test {
  protected:
    void SetUp() override {
        cfg.compact = true;
        cfg.delete_enabled = false;
        cfg.retention_ms = -1;
        cfg.segment_bytes = 1;  // every append after the first rolls: one batch per segment
        cfg.min_cleanable_dirty_ratio = 0;
        cfg.delete_retention_ms = 1000;
    }
    void open() {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 16, 0});
        mgr->add_topic("t", 1, cfg);
        auto r = mgr->open();
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
    void reopen(bool clean) {
        mgr->close();
        mgr.reset();
        if (!clean) fs::remove(dir.path / "logs" / ".clean-shutdown");
        open();
    }
    void set_config() { mgr->add_topic("t", 1, cfg); }
    partition_log* p() { return mgr->get("t", 0); }
    fs::path part() const { return test::partition_dir(dir.path, "t", 0); }
    void put(const std::vector<test_record>& recs) {
        append_durable(*mgr, p(), build_batch(recs), recs.front().timestamp);
    }
    log_manager::compaction_stats compact(timestamp_ms now) { return mgr->enforce_compaction(now); }
    // Every readable record, reading as a consumer does (from the log start, batch after
    // batch, to the high watermark).
    std::vector<rec> read_all() {
        std::vector<rec> out;
        offset_t next = p()->log_start_offset();
        while (next < p()->high_watermark()) {
            auto r = p()->read(next, 1 << 20, true);
            EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.err().message);
            if (!r.ok() || r->data.empty()) {
                ADD_FAILURE() << "no data at offset " << next;
                break;
            }
            size_t pos = 0;
            while (pos < r->data.size()) {
                auto h = *protocol::read_batch_header(bytes_view(r->data).subspan(pos));
                bytes_view b = bytes_view(r->data).subspan(pos, h.size_bytes());
                EXPECT_TRUE(protocol::batch_crc_ok(b));
                protocol::for_each_record(b, [&](const protocol::record_view& v) {
                    if (v.offset >= next) out.push_back({v.offset, str(v.key), str(v.value)});
                    return true;
                });
                next = h.last_offset() + 1;
                pos += h.size_bytes();
            }
        }
        return out;
    }

    test::temp_dir dir;
    log_config cfg;
    std::unique_ptr<log_manager> mgr;
};

}  // namespace sluice::log::test

#pragma once

// A topic of JSON records in a data directory of its own, written once and kept for later
// runs (a marker file names what was written): the input of the in-process SQL benchmarks
// (sql_bench.cc, duck_memory_bench.cc).
//
// Records: 200-byte JSON values {"id","op","user","amount","pad"}, 8-byte keys, 100
// records per batch, timestamps one millisecond apart from base_ts across the topic; each
// batch is appended with the broker time of its last record, so timestamp_broker follows
// the same clock.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"
#include "catalog/catalog.h"
#include "log/log_manager.h"
#include "protocol/record_batch.h"
#include "support/batch_builder.h"

namespace sluice::bench {

struct json_topic_spec {
    std::filesystem::path dir;
    std::string topic = "bench";
    int64_t records = 10'000'000;
    int32_t partitions = 4;
};

inline constexpr timestamp_ms json_topic_base_ts = 1'750'000'000'000;  // June 2025

inline std::string json_value(int64_t i) {
    constexpr size_t value_bytes = 200;
    static const char* ops[] = {"c", "u", "u", "d"};
    std::string v = "{\"id\":" + std::to_string(i) + ",\"op\":\"" + ops[i % 4] +
                    "\",\"user\":\"user-" + std::to_string(i % 1000) +
                    "\",\"amount\":" + std::to_string(i % 10000) + ".25,\"pad\":\"";
    v.append(value_bytes - 2 - v.size(), 'x');
    return v + "\"}";
}

// The directory's catalog and partition logs, open; the records written first when the
// directory does not hold them yet (printing how long that took).
struct json_topic {
    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<log::log_manager> logs;

    json_topic(const char* tool, const json_topic_spec& s) {
        const auto marker = s.dir / ("filled-" + std::to_string(s.records) + "-" +
                                     std::to_string(s.partitions));
        const bool filled = std::filesystem::exists(marker);
        if (!filled) {
            std::filesystem::remove_all(s.dir);
            std::filesystem::create_directories(s.dir);
        }
        auto c = catalog::catalog::open(s.dir / "catalog.db");
        if (!c) die(tool, c.err().message);
        cat = std::move(*c);
        if (!filled) {
            catalog::topic_info t;
            t.name = s.topic;
            t.id = catalog::random_uuid();
            t.partitions = s.partitions;
            if (auto r = cat->create_topic(t); !r) die(tool, r.err().message);
        }
        logs = std::make_unique<log::log_manager>(log::log_manager::options{s.dir});
        logs->add_topic(s.topic, s.partitions, {});
        if (auto r = logs->open(); !r) die(tool, r.err().message);
        if (filled) return;
        const auto t0 = std::chrono::steady_clock::now();
        fill(tool, s);
        std::printf("filled %lld records in %.1f s\n", static_cast<long long>(s.records),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        std::fflush(stdout);
        if (std::FILE* f = std::fopen(marker.c_str(), "w")) std::fclose(f);
    }
    json_topic(const json_topic&) = delete;
    json_topic& operator=(const json_topic&) = delete;
    ~json_topic() { logs->close(); }

  private:
    void fill(const char* tool, const json_topic_spec& s) {
        constexpr int per_batch = 100;
        int64_t i = 0;
        while (i < s.records) {
            const auto p = static_cast<int32_t>((i / per_batch) % s.partitions);
            std::vector<testing::test_record> recs;
            for (int k = 0; k < per_batch && i < s.records; ++k, ++i) {
                char key[9];
                std::snprintf(key, sizeof key, "%08lld", static_cast<long long>(i % 100000));
                recs.push_back({std::string(key), json_value(i), json_topic_base_ts + i, {}});
            }
            bytes b = testing::build_batch(recs);
            auto v = protocol::validate_batches(b, {});
            if (!v) die(tool, v.err().message);
            if (auto r = logs->get(s.topic, p)->append(std::span<uint8_t>(b), *v,
                                                       json_topic_base_ts + i);
                !r)
                die(tool, r.err().message);
        }
        for (int32_t p = 0; p < s.partitions; ++p)
            while (logs->get(s.topic, p)->high_watermark() < logs->get(s.topic, p)->log_end_offset())
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
};

}  // namespace sluice::bench

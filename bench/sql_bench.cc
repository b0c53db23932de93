// sluice-sqlbench: SQL scan speed over topic tables, in process (no network). Fills a
// topic with JSON records once (kept in --dir for later runs), then times
//   1. SELECT count(*)                                       full scan, rows/s
//   2. SELECT count(*) WHERE value ->> '$.op' = 'd'          JSON filter, rows/s
//   3. SELECT count(*), max(offset) WHERE timestamp_broker in one minute       latency
//   4. SELECT * ... the same minute (every column of each row built)           latency
//   5, 6. the same on timestamp_producer (only its lower bound narrows the scan)
// on one thread, best and median of --runs runs.
//
//   sluice-sqlbench [--dir DIR] [--records 10000000] [--partitions 4] [--runs 5]
//
// Records: 200-byte JSON values, 8-byte keys, 100 records per batch, timestamps one
// millisecond apart across the topic (so one minute holds 60,000 records); the fill
// appends each batch with the broker time of its last record, so timestamp_broker
// follows the same clock.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"
#include "catalog/catalog.h"
#include "log/log_manager.h"
#include "protocol/record_batch.h"
#include "sql/sqlite_engine.h"
#include "support/batch_builder.h"

using namespace sluice;

namespace {

struct options {
    std::string dir = "/tmp/sluice-sqlbench";
    int64_t records = 10'000'000;
    int32_t partitions = 4;
    int runs = 5;
};

constexpr const char* topic = "bench";
constexpr timestamp_ms base_ts = 1'750'000'000'000;  // June 2025
constexpr size_t value_bytes = 200;

[[noreturn]] void die(const std::string& msg) { bench::die("sluice-sqlbench", msg); }

std::string json_value(int64_t i) {
    static const char* ops[] = {"c", "u", "u", "d"};
    std::string v = "{\"id\":" + std::to_string(i) + ",\"op\":\"" + ops[i % 4] + "\",\"user\":\"user-" +
                    std::to_string(i % 1000) + "\",\"amount\":" + std::to_string(i % 10000) + ".25,\"pad\":\"";
    v.append(value_bytes - 2 - v.size(), 'x');
    return v + "\"}";
}

void fill(log::log_manager& logs, const options& o) {
    int64_t i = 0;
    const int per_batch = 100;
    while (i < o.records) {
        const int32_t p = static_cast<int32_t>((i / per_batch) % o.partitions);
        std::vector<testing::test_record> recs;
        for (int k = 0; k < per_batch && i < o.records; ++k, ++i) {
            char key[9];
            std::snprintf(key, sizeof key, "%08lld", static_cast<long long>(i % 100000));
            recs.push_back({std::string(key), json_value(i), base_ts + i, {}});
        }
        bytes b = testing::build_batch(recs);
        auto v = protocol::validate_batches(b, {});
        if (!v) die(v.err().message);
        if (auto r = logs.get(topic, p)->append(std::span<uint8_t>(b), *v, base_ts + i); !r)
            die(r.err().message);
    }
    for (int32_t p = 0; p < o.partitions; ++p)
        while (logs.get(topic, p)->high_watermark() < logs.get(topic, p)->log_end_offset())
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

struct timing {
    double best_ms = 1e18;
    double median_ms = 0;
    std::string result;
};

timing run(sql::session& s, const std::string& q, int runs) {
    std::vector<double> ms;
    timing t;
    for (int r = 0; r < runs; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        auto st = s.prepare(q);
        if (!st) die(q + ": " + st.error().message);
        int64_t rows = 0;
        std::string first;
        for (;;) {
            auto state = (*st)->step();
            if (state == sql::statement::step_state::failed) die(q + ": " + (*st)->error().message);
            if (state == sql::statement::step_state::done) break;
            if (rows++ == 0)
                for (const auto& v : (*st)->row())
                    if (auto* i = std::get_if<int64_t>(&v)) first += std::to_string(*i) + " ";
        }
        ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        t.result = rows == 1 ? first : std::to_string(rows) + " rows";
    }
    std::sort(ms.begin(), ms.end());
    t.best_ms = ms.front();
    t.median_ms = ms[ms.size() / 2];
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    options o;
    bench::parse_flags("sluice-sqlbench", argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--dir") o.dir = v;
        else if (f == "--records") o.records = std::stoll(v);
        else if (f == "--partitions") o.partitions = std::stoi(v);
        else if (f == "--runs") o.runs = std::stoi(v);
        else return false;
        return true;
    });
    const auto marker = std::filesystem::path(o.dir) / ("filled-" + std::to_string(o.records) + "-" +
                                                        std::to_string(o.partitions));
    const bool filled = std::filesystem::exists(marker);
    if (!filled) {
        std::filesystem::remove_all(o.dir);
        std::filesystem::create_directories(o.dir);
    }
    auto cat = catalog::catalog::open(std::filesystem::path(o.dir) / "catalog.db");
    if (!cat) die(cat.err().message);
    if (!filled) {
        catalog::topic_info t;
        t.name = topic;
        t.id = catalog::random_uuid();
        t.partitions = o.partitions;
        if (auto r = (*cat)->create_topic(t); !r) die(r.err().message);
    }
    log::log_manager logs({o.dir});
    logs.add_topic(topic, o.partitions, {});
    if (auto r = logs.open(); !r) die(r.err().message);
    if (!filled) {
        const auto t0 = std::chrono::steady_clock::now();
        fill(logs, o);
        std::printf("filled %lld records in %.1f s\n", static_cast<long long>(o.records),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        std::FILE* f = std::fopen(marker.c_str(), "w");
        if (f) std::fclose(f);
    }
    sql::engine_options eo;
    eo.data_dir = o.dir;
    eo.defaults.timeout = std::chrono::minutes(10);
    eo.logs = &logs;
    eo.catalog = cat->get();
    auto eng = sql::open_engine(eo);
    if (!eng) die(eng.error().message);
    auto s = (*eng)->open_session();
    if (!s) die(s.error().message);

    const timestamp_ms minute_at = base_ts + o.records / 2;
    auto range = [&](const char* col) {
        return std::string(" WHERE ") + col + " >= " + std::to_string(minute_at) + " AND " + col + " < " +
               std::to_string(minute_at + 60'000);
    };
    struct q {
        const char* name;
        std::string sql;
        bool rate;
    };
    const std::vector<q> queries = {
        {"count(*)", "SELECT count(*) FROM kafka_topics.bench", true},
        {"JSON filter", "SELECT count(*) FROM kafka_topics.bench WHERE value ->> '$.op' = 'd'", true},
        {"minute count, broker", "SELECT count(*), max(offset) FROM kafka_topics.bench" + range("timestamp_broker"),
         false},
        {"minute rows, broker", "SELECT * FROM kafka_topics.bench" + range("timestamp_broker"), false},
        {"minute count, producer",
         "SELECT count(*), max(offset) FROM kafka_topics.bench" + range("timestamp_producer"), false},
        {"minute rows, producer", "SELECT * FROM kafka_topics.bench" + range("timestamp_producer"), false},
    };
    std::printf("%lld records, %d partitions, %d runs each (one thread)\n", static_cast<long long>(o.records),
                o.partitions, o.runs);
    for (const auto& x : queries) {
        auto t = run(**s, x.sql, x.rate ? std::max(1, o.runs / 2) : o.runs * 4);
        if (x.rate)
            std::printf("%-22s best %8.1f ms  median %8.1f ms  %6.2f M rows/s  -> %s\n", x.name, t.best_ms,
                        t.median_ms, static_cast<double>(o.records) / t.best_ms / 1000.0, t.result.c_str());
        else
            std::printf("%-22s best %8.2f ms  median %8.2f ms  -> %s\n", x.name, t.best_ms, t.median_ms,
                        t.result.c_str());
    }
    s->reset();
    eng->reset();
    logs.close();
    return 0;
}

// sluice-sqlbench: SQL scan speed over topic tables, in process (no network). Fills a
// topic with JSON records once (kept in --dir for later runs), then times
//   1. SELECT count(*)                                       full scan, rows/s
//   2. SELECT count(*) WHERE value ->> '$.op' = 'd'          JSON filter, rows/s
//   3. SELECT count(*), max(offset) WHERE timestamp_broker in one minute       latency
//   4. SELECT * ... the same minute (every column of each row built)           latency
//   5, 6. the same on timestamp_producer (only its lower bound narrows the scan)
// on the DuckDB engine (its threads: one per core), best and median of --runs runs.
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
#include <string>
#include <vector>

#include "bench_cli.h"
#include "json_topic.h"
#include "sql/duck/serving.h"

using namespace sluice;

namespace {

struct options {
    std::string dir = "/tmp/sluice-sqlbench";
    int64_t records = 10'000'000;
    int32_t partitions = 4;
    int runs = 5;
};

constexpr const char* topic = "bench";
constexpr timestamp_ms base_ts = bench::json_topic_base_ts;

[[noreturn]] void die(const std::string& msg) { bench::die("sluice-sqlbench", msg); }

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
    const bench::json_topic data("sluice-sqlbench", {o.dir, topic, o.records, o.partitions});
    sql::engine_options eo;
    eo.data_dir = o.dir;
    eo.defaults.timeout = std::chrono::minutes(10);
    eo.logs = data.logs.get();
    eo.catalog = data.cat.get();
    auto eng = sql::duck::open_serving_engine(eo);
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
    return 0;
}

// sluice-duckbench: the DuckDB prototype of issue 36 (docs/design/sql-engine.md).
//
//   sluice-duckbench scan --data-dir DIR --topic T [--threads 2] [--runs 3]
//                         [--setup SQL]... --query 'NAME=SQL' [--query ...]
//       Opens the partition logs of DIR (a stopped broker's data directory, or a copy:
//       opening it replays the journal and takes the clean-shutdown marker, as the broker
//       does), registers kafka_topic('T') (duck_topic_scan.h), runs the --setup
//       statements (a view, say) and times each query:
//       one JSON line per query {"name","best_s","median_s","rows","first"}.
//       --engine sluice: the same through src/sql/duck (duck_engine.h: the C++ API's
//       kafka_topic with filter pushdown, key/value BLOB and key_text/value_text) instead
//       of the C API prototype; queries then read value_text.
//   sluice-duckbench append [--rows 1000000] [--db :memory:|FILE] [--commit-every 0]
//                           [--mode rows|chunks|sqlite] [--setup SQL]...
//       Inserts typed rows shaped like an expansion target (partition, offset, timestamp
//       and 16 fields: the 19 columns of bench/expansion_bench.sh) through DuckDB's
//       appender, one transaction per --commit-every rows (0: one in all). One JSON line
//       {"rows","seconds","rows_per_s"}. --mode sqlite: the same rows into SQLite as
//       expansion targets are written today (a prepared INSERT, WAL, synchronous=NORMAL),
//       the baseline of the same run.

#include <duckdb.h>
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "bench_cli.h"
#include "duck_topic_scan.h"
#include "log/log_manager.h"
#include "sql/duck/duck_engine.h"
#include "sql/json_text.h"

using namespace sluice;
namespace fs = std::filesystem;

namespace {

constexpr const char* tool = "sluice-duckbench";
[[noreturn]] void die(const std::string& msg) {
    bench::die(tool, msg);
}

using clock_type = std::chrono::steady_clock;
double since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

void exec(duckdb_connection con, const std::string& sql) {
    duckdb_result res;
    if (duckdb_query(con, sql.c_str(), &res) != DuckDBSuccess) {
        std::string err = duckdb_result_error(&res);
        duckdb_destroy_result(&res);
        die(sql + ": " + err);
    }
    duckdb_destroy_result(&res);
}

struct db_handle {
    duckdb_database db = nullptr;
    duckdb_connection con = nullptr;
    db_handle(const std::string& path, int threads) {
        duckdb_config cfg;
        duckdb_create_config(&cfg);
        duckdb_set_config(cfg, "threads", std::to_string(threads).c_str());
        char* err = nullptr;
        if (duckdb_open_ext(path == ":memory:" ? nullptr : path.c_str(), &db, cfg, &err) !=
            DuckDBSuccess) {
            std::string e = err ? err : "?";
            duckdb_free(err);
            die("duckdb_open_ext: " + e);
        }
        duckdb_destroy_config(&cfg);
        if (duckdb_connect(db, &con) != DuckDBSuccess) die("duckdb_connect failed");
    }
    ~db_handle() {
        duckdb_disconnect(&con);
        duckdb_close(&db);
    }
};

// Partitions of `topic` under DIR/logs, from the directory names (<topic>-<n>).
int32_t partition_count(const fs::path& data_dir, const std::string& topic) {
    int32_t n = 0;
    const std::regex re(std::regex_replace(topic, std::regex(R"([.^$|()\[\]{}*+?\\-])"), R"(\$&)") +
                        "-([0-9]+)");
    for (const auto& e : fs::directory_iterator(data_dir / "logs")) {
        std::smatch m;
        const std::string name = e.path().filename().string();
        if (std::regex_match(name, m, re)) n = std::max(n, std::stoi(m[1]) + 1);
    }
    return n;
}

// The first row of a result as text, cells separated by '|'.
std::string first_row(duckdb_result& res) {
    std::string out;
    if (duckdb_row_count(&res) == 0) return out;
    for (idx_t c = 0; c < duckdb_column_count(&res); ++c) {
        if (c) out.push_back('|');
        char* v = duckdb_value_varchar(&res, c, 0);
        out += v ? v : "NULL";
        duckdb_free(v);
    }
    return out;
}

int run_scan(int argc, char** argv) {
    std::string data_dir, topic, engine = "capi";
    int threads = 2, runs = 3;
    std::vector<std::pair<std::string, std::string>> queries;
    std::vector<std::string> setup;
    bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--data-dir") {
            data_dir = v;
        } else if (f == "--setup") {
            setup.push_back(v);
        } else if (f == "--topic") {
            topic = v;
        } else if (f == "--threads") {
            threads = bench::number<int>(tool, f, v);
        } else if (f == "--engine") {
            engine = v;
        } else if (f == "--runs") {
            runs = bench::number<int>(tool, f, v);
        } else if (f == "--query") {
            auto eq = v.find('=');
            if (eq == std::string::npos) die("--query wants NAME=SQL");
            queries.emplace_back(v.substr(0, eq), v.substr(eq + 1));
        } else {
            return false;
        }
        return true;
    });
    if (data_dir.empty() || topic.empty()) die("scan needs --data-dir and --topic");
    const int32_t parts = partition_count(data_dir, topic);
    if (parts == 0) die("no partition of " + topic + " under " + data_dir + "/logs");
    log::log_manager logs({data_dir});
    logs.add_topic(topic, parts, {});
    if (auto r = logs.open(); !r) die(r.err().message);

    // Runs one statement: (rows, first row as text).
    std::function<std::pair<size_t, std::string>(const std::string&)> run;
    std::unique_ptr<db_handle> h;
    std::unique_ptr<sql::duck::engine> eng;
    std::unique_ptr<sql::duck::session> sess;
    if (engine == "sluice") {
        sql::duck::options o;
        o.data_dir = data_dir;
        o.logs = &logs;
        o.threads = threads;
        auto e = sql::duck::engine::open(o);
        if (!e) die(e.error().message);
        eng = std::move(*e);
        sess = eng->open_session(nullptr, {});
        run = [&](const std::string& sql) -> std::pair<size_t, std::string> {
            auto r = sess->query(sql);
            if (!r) die(sql + ": " + r.error().message);
            std::string first;
            if (!r->rows.empty())
                for (size_t c = 0; c < r->rows[0].size(); ++c)
                    first += (c ? "|" : "") + r->rows[0][c].value_or("NULL");
            return {r->rows.size(), first};
        };
    } else {
        h = std::make_unique<db_handle>(":memory:", threads);
        if (!bench::register_kafka_topic(h->con, &logs)) die("registering kafka_topic failed");
        run = [&](const std::string& sql) -> std::pair<size_t, std::string> {
            duckdb_result res;
            if (duckdb_query(h->con, sql.c_str(), &res) != DuckDBSuccess) {
                std::string err = duckdb_result_error(&res);
                duckdb_destroy_result(&res);
                die(sql + ": " + err);
            }
            std::pair<size_t, std::string> out{duckdb_row_count(&res), first_row(res)};
            duckdb_destroy_result(&res);
            return out;
        };
    }
    for (const auto& sql : setup) run(sql);
    for (const auto& [name, sql] : queries) {
        std::vector<double> times;
        std::string first;
        size_t rows = 0;
        for (int i = 0; i < runs; ++i) {
            const auto t0 = clock_type::now();
            std::tie(rows, first) = run(sql);
            times.push_back(since(t0));
        }
        std::sort(times.begin(), times.end());
        std::string line = "{\"name\":";
        sql::append_json_string(line, name);
        line += ",\"best_s\":" + std::to_string(times.front()) +
                ",\"median_s\":" + std::to_string(times[times.size() / 2]) +
                ",\"rows\":" + std::to_string(rows) + ",\"first\":";
        sql::append_json_string(line, first);
        std::printf("%s}\n", line.c_str());
        std::fflush(stdout);
    }
    return 0;
}

// 19 columns: partition, offset, ts, then 16 fields of four types (as expansion_bench's
// 10-field JSON expanded into 19 typed columns).
constexpr int field_count = 16;
const char* const field_types[4] = {"BIGINT", "DOUBLE", "VARCHAR", "BOOLEAN"};
const std::string texts[4] = {"alpha", "bravo-charlie", "a somewhat longer text value", "x"};

// Today's expansion targets: SQLite, WAL, synchronous=NORMAL (src/expansion/target.cc).
double sqlite_append(const std::string& path, int64_t rows, int64_t commit_every) {
    fs::remove(path);
    fs::remove(path + "-wal");
    fs::remove(path + "-shm");
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) die("sqlite3_open " + path);
    auto run = [&](const std::string& sql) {
        if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
            die(sql + ": " + sqlite3_errmsg(db));
    };
    run("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384");
    std::string ddl = "CREATE TABLE target (\"partition\" INTEGER, \"offset\" INTEGER, ts INTEGER";
    std::string ins = "INSERT INTO target VALUES (?, ?, ?";
    for (int i = 0; i < field_count; ++i) {
        ddl += ", f" + std::to_string(i) + " " +
               (i % 4 == 2   ? "TEXT"
                : i % 4 == 1 ? "REAL"
                             : "INTEGER");
        ins += ", ?";
    }
    run(ddl + ")");
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, (ins + ")").c_str(), -1, &st, nullptr) != SQLITE_OK)
        die(sqlite3_errmsg(db));
    const auto t0 = clock_type::now();
    run("BEGIN");
    for (int64_t r = 0; r < rows; ++r) {
        sqlite3_bind_int(st, 1, static_cast<int>(r % 4));
        sqlite3_bind_int64(st, 2, r / 4);
        sqlite3_bind_int64(st, 3, 1'750'000'000'000 + r);
        for (int i = 0; i < field_count; ++i) {
            switch (i % 4) {
                case 0:
                    sqlite3_bind_int64(st, 4 + i, r * 7 + i);
                    break;
                case 1:
                    sqlite3_bind_double(st, 4 + i, static_cast<double>(r) * 0.25 + i);
                    break;
                case 2: {
                    const std::string& t = texts[(r + i) % 4];
                    sqlite3_bind_text(st, 4 + i, t.data(), static_cast<int>(t.size()),
                                      SQLITE_STATIC);
                    break;
                }
                default:
                    sqlite3_bind_int(st, 4 + i, static_cast<int>((r + i) & 1));
            }
        }
        if (sqlite3_step(st) != SQLITE_DONE) die(sqlite3_errmsg(db));
        sqlite3_reset(st);
        if (commit_every > 0 && (r + 1) % commit_every == 0 && r + 1 < rows) run("COMMIT; BEGIN");
    }
    run("COMMIT");
    const double secs = since(t0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return secs;
}

int run_append(int argc, char** argv) {
    int64_t rows = 1'000'000, commit_every = 0;
    std::string db_path = ":memory:", mode = "rows";
    std::vector<std::string> setup;
    bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--rows") {
            rows = bench::number<int64_t>(tool, f, v);
        } else if (f == "--db") {
            db_path = v;
        } else if (f == "--commit-every") {
            commit_every = bench::number<int64_t>(tool, f, v);
        } else if (f == "--mode") {
            mode = v;
        } else if (f == "--setup") {
            setup.push_back(v);
        } else {
            return false;
        }
        return true;
    });
    if (mode == "sqlite") {
        if (db_path == ":memory:") die("--mode sqlite wants --db FILE");
        const double secs = sqlite_append(db_path, rows, commit_every);
        std::printf("{\"rows\":%lld,\"seconds\":%.3f,\"rows_per_s\":%.0f}\n",
                    static_cast<long long>(rows), secs, static_cast<double>(rows) / secs);
        return 0;
    }
    if (mode != "rows" && mode != "chunks") die("--mode rows|chunks|sqlite");
    if (db_path != ":memory:") {
        fs::remove(db_path);
        fs::remove(db_path + ".wal");
    }
    db_handle h(db_path, 1);
    for (const auto& sql : setup) exec(h.con, sql);
    std::string ddl = "CREATE TABLE target (\"partition\" INTEGER, \"offset\" BIGINT, ts TIMESTAMP";
    for (int i = 0; i < field_count; ++i)
        ddl += ", f" + std::to_string(i) + " " + field_types[i % 4];
    exec(h.con, ddl + ")");

    duckdb_appender app;
    if (duckdb_appender_create(h.con, nullptr, "target", &app) != DuckDBSuccess) die("appender");
    const idx_t cap = duckdb_vector_size();
    std::vector<duckdb_logical_type> types;
    for (idx_t c = 0; c < duckdb_appender_column_count(app); ++c)
        types.push_back(duckdb_appender_column_type(app, c));
    duckdb_data_chunk chunk = duckdb_create_data_chunk(types.data(), types.size());
    idx_t in_chunk = 0;
    auto flush_chunk = [&] {
        if (in_chunk == 0) return;
        duckdb_data_chunk_set_size(chunk, in_chunk);
        if (duckdb_append_data_chunk(app, chunk) != DuckDBSuccess) die(duckdb_appender_error(app));
        duckdb_data_chunk_reset(chunk);
        in_chunk = 0;
    };
    auto commit = [&](bool reopen) {
        flush_chunk();
        if (duckdb_appender_flush(app) != DuckDBSuccess) die(duckdb_appender_error(app));
        exec(h.con, "COMMIT");
        if (reopen) exec(h.con, "BEGIN");
    };

    const int64_t base_us = 1'750'000'000'000'000;
    const auto t0 = clock_type::now();
    exec(h.con, "BEGIN");
    for (int64_t r = 0; r < rows; ++r) {
        if (mode == "rows") {
            duckdb_append_int32(app, static_cast<int32_t>(r % 4));
            duckdb_append_int64(app, r / 4);
            duckdb_append_timestamp(app, duckdb_timestamp{base_us + r * 1000});
            for (int i = 0; i < field_count; ++i) {
                switch (i % 4) {
                    case 0:
                        duckdb_append_int64(app, r * 7 + i);
                        break;
                    case 1:
                        duckdb_append_double(app, static_cast<double>(r) * 0.25 + i);
                        break;
                    case 2: {
                        const std::string& t = texts[(r + i) % 4];
                        duckdb_append_varchar_length(app, t.data(), t.size());
                        break;
                    }
                    default:
                        duckdb_append_bool(app, ((r + i) & 1) != 0);
                }
            }
            if (duckdb_appender_end_row(app) != DuckDBSuccess) die(duckdb_appender_error(app));
        } else {
            const idx_t row = in_chunk;
            static_cast<int32_t*>(duckdb_vector_get_data(
                duckdb_data_chunk_get_vector(chunk, 0)))[row] = static_cast<int32_t>(r % 4);
            static_cast<int64_t*>(
                duckdb_vector_get_data(duckdb_data_chunk_get_vector(chunk, 1)))[row] = r / 4;
            static_cast<duckdb_timestamp*>(duckdb_vector_get_data(duckdb_data_chunk_get_vector(
                chunk, 2)))[row] = duckdb_timestamp{base_us + r * 1000};
            for (int i = 0; i < field_count; ++i) {
                duckdb_vector v = duckdb_data_chunk_get_vector(chunk, 3 + i);
                switch (i % 4) {
                    case 0:
                        static_cast<int64_t*>(duckdb_vector_get_data(v))[row] = r * 7 + i;
                        break;
                    case 1:
                        static_cast<double*>(duckdb_vector_get_data(v))[row] =
                            static_cast<double>(r) * 0.25 + i;
                        break;
                    case 2: {
                        const std::string& t = texts[(r + i) % 4];
                        duckdb_vector_assign_string_element_len(v, row, t.data(), t.size());
                        break;
                    }
                    default:
                        static_cast<bool*>(duckdb_vector_get_data(v))[row] = ((r + i) & 1) != 0;
                }
            }
            if (++in_chunk == cap) flush_chunk();
        }
        if (commit_every > 0 && (r + 1) % commit_every == 0 && r + 1 < rows) commit(true);
    }
    commit(false);
    const double secs = since(t0);
    duckdb_destroy_data_chunk(&chunk);
    for (auto& t : types) duckdb_destroy_logical_type(&t);
    duckdb_appender_destroy(&app);

    duckdb_result res;
    if (duckdb_query(h.con, "SELECT count(*) FROM target", &res) != DuckDBSuccess) die("count");
    const int64_t n = duckdb_value_int64(&res, 0, 0);
    duckdb_destroy_result(&res);
    if (n != rows) die("appended " + std::to_string(rows) + ", table holds " + std::to_string(n));
    std::printf("{\"rows\":%lld,\"seconds\":%.3f,\"rows_per_s\":%.0f}\n",
                static_cast<long long>(rows), secs, static_cast<double>(rows) / secs);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::guarded_main(tool, [&] {
        if (argc < 2) die("usage: sluice-duckbench scan|append [flags] (see bench/duck_bench.cc)");
        const std::string cmd = argv[1];
        if (cmd == "scan") return run_scan(argc - 1, argv + 1);
        if (cmd == "append") return run_append(argc - 1, argv + 1);
        die("unknown command " + cmd);
    });
}

// sluice-duck-memory-bench: what the DuckDB engine's per-session memory accounting
// (src/sql/duck/session_memory.h) costs, A/B in one run. The same statements run through
// the serving engine (duck/serving.h, as `sluice serve --sql-engine duckdb` serves them)
// in child processes of this one, each either with the accounting as the broker has it
// ("on") or with DuckDB's own allocators untouched ("off": leave_memory_unaccounted(),
// which only this tool calls; a process's allocator is chosen before its first database
// opens, hence a process per run). Repeats alternate the order (on, off; off, on; ...).
//
//   sluice-duck-memory-bench [--dir DIR] [--records 2000000] [--partitions 4]
//                            [--repeats 6] [--threads 2] [--only NAME,NAME]
//
// Per statement: CPU seconds of the child (user + system, every thread: getrusage) and
// wall seconds, the median over the repeats for each side, and on/off. The statements'
// results must agree across the two sides (else the tool fails). --dir holds a topic of
// JSON records (json_topic.h), written once.

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bench_cli.h"
#include "json_topic.h"
#include "sql/duck/serving.h"
#include "sql/duck/session_memory.h"

using namespace sluice;

namespace {

constexpr const char* tool = "sluice-duck-memory-bench";
[[noreturn]] void die(const std::string& msg) {
    bench::die(tool, msg);
}

struct options {
    std::string dir = "/tmp/sluice-duck-memory-bench";
    int64_t records = 2'000'000;
    int32_t partitions = 4;
    int repeats = 6;
    uint32_t threads = 2;
    std::string only;   // comma-separated statement names; empty: all
    std::string child;  // "on" or "off": this process is a child running one side
};

struct query {
    const char* name;
    const char* sql;
};

// Strings computed per row (charged to the session), a GROUP BY and a join whose states
// live in DuckDB's buffer pool (never charged; the database allocator's blocks, told apart
// by their caller), and the topic's values read and parsed.
const std::vector<query>& queries() {
    static const std::vector<query> q = {
        {"md5_concat_10m",
         "SELECT sum(length(md5(x::VARCHAR) || repeat('y', 60))) FROM range(10000000) t(x)"},
        {"group_by_md5_3m",
         "SELECT count(*), sum(n) FROM (SELECT md5(x::VARCHAR) AS h, count(*) AS n "
         "FROM range(3000000) t(x) GROUP BY h)"},
        {"join_strings_2m",
         "SELECT count(*), sum(a.i) FROM range(2000000) a(i) JOIN (SELECT i, md5(i::VARCHAR) "
         "|| repeat('z', 100) AS p FROM range(2000000) t(i)) b ON a.i = b.i WHERE b.p > ''"},
        {"sort_strings_2m",
         "SELECT sum(r) FROM (SELECT row_number() OVER (ORDER BY md5(x::VARCHAR)) * (x % 7) "
         "AS r FROM range(2000000) t(x))"},
        {"topic_group_by_json",
         "SELECT count(*), sum(a) FROM (SELECT value ->> '$.op' AS op, "
         "sum((value ->> '$.amount')::DOUBLE) AS a FROM kafka_topics.bench GROUP BY op)"},
        {"topic_filter_json",
         "SELECT count(*) FROM kafka_topics.bench WHERE value ->> '$.user' = 'user-7'"},
    };
    return q;
}

bool selected(const options& o, const std::string& name) {
    return o.only.empty() || ("," + o.only + ",").find("," + name + ",") != std::string::npos;
}

double cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    return s(u.ru_utime) + s(u.ru_stime);
}

// The statement's rows as text, cells separated by '|', rows by ';'.
std::string run(sql::session& s, const std::string& q) {
    auto st = s.prepare(q);
    if (!st) die(q + ": " + st.error().message);
    std::string out;
    for (;;) {
        const auto state = (*st)->step();
        if (state == sql::statement::step_state::failed) die(q + ": " + (*st)->error().message);
        if (state == sql::statement::step_state::done) return out;
        if (!out.empty()) out += ';';
        for (const auto& v : (*st)->row()) {
            if (auto* i = std::get_if<int64_t>(&v)) out += std::to_string(*i);
            if (auto* d = std::get_if<double>(&v)) out += std::to_string(*d);
            if (auto* t = std::get_if<std::string>(&v)) out += *t;
            out += '|';
        }
    }
}

// One side: opens the engine as the broker does (the accounting installed unless "off"),
// one session, and prints a line per statement: "RESULT name cpu_s wall_s rows".
int run_child(const options& o) {
    if (o.child == "off")
        sql::duck::leave_memory_unaccounted();
    else if (o.child != "on")
        die("--child: on or off");
    const bench::json_topic data(tool, {o.dir, "bench", o.records, o.partitions});
    sql::engine_options eo;
    eo.data_dir = std::filesystem::path(o.dir) / ("engine-" + o.child);
    std::filesystem::create_directories(eo.data_dir);
    eo.defaults.timeout = std::chrono::minutes(10);
    eo.bounds.threads = o.threads;
    eo.logs = data.logs.get();
    eo.catalog = data.cat.get();
    auto db = sql::duck::open_serving_database(eo, {});  // in memory
    if (!db) die(db.error().message);
    auto eng = sql::duck::open_serving_engine(eo, *db);
    if (!eng) die(eng.error().message);
    auto s = (*eng)->open_session();
    if (!s) die(s.error().message);
    run(**s, "SELECT sum(length(md5(x::VARCHAR))) FROM range(100000) t(x)");  // warm-up
    for (const auto& q : queries()) {
        if (!selected(o, q.name)) continue;
        const double c0 = cpu_seconds();
        const auto w0 = std::chrono::steady_clock::now();
        const std::string rows = run(**s, q.sql);
        const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        std::printf("RESULT %s %.4f %.4f %s\n", q.name, cpu_seconds() - c0, wall, rows.c_str());
    }
    return 0;
}

struct sample {
    std::vector<double> cpu, wall;
    std::string rows;
};
using samples = std::map<std::string, sample>;  // by statement name

// Runs one side in a child process and adds its figures to `into`.
void spawn(const options& o, const std::string& side, samples& into) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("readlink /proc/self/exe failed");
    self[n] = 0;
    const auto quote = [](const std::string& s) {
        std::string q = "'";
        for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
        return q + "'";
    };
    std::string cmd = quote(self) + " --child " + side + " --dir " + quote(o.dir) + " --records " +
                      std::to_string(o.records) + " --partitions " + std::to_string(o.partitions) +
                      " --threads " + std::to_string(o.threads);
    if (!o.only.empty()) cmd += " --only " + quote(o.only);
    std::FILE* p = popen(cmd.c_str(), "r");
    if (!p) die("popen failed");
    char line[8192];
    while (std::fgets(line, sizeof line, p)) {
        char name[128], rows[4096] = "";
        double cpu = 0, wall = 0;
        if (std::sscanf(line, "RESULT %127s %lf %lf %4095s", name, &cpu, &wall, rows) < 3) {
            std::fputs(line, stdout);
            continue;
        }
        auto& s = into[name];
        if (!s.rows.empty() && s.rows != rows) die(std::string(name) + ": results differ");
        s.rows = rows;
        s.cpu.push_back(cpu);
        s.wall.push_back(wall);
    }
    if (const int rc = pclose(p); rc != 0) die("the " + side + " child failed (status " + std::to_string(rc) + ")");
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

int run_parent(const options& o) {
    { const bench::json_topic data(tool, {o.dir, "bench", o.records, o.partitions}); }
    std::map<std::string, samples> by_side;  // "on", "off"
    for (int r = 0; r < o.repeats; ++r)
        for (const char* side : r % 2 ? std::vector{"off", "on"} : std::vector{"on", "off"}) {
            std::fprintf(stderr, "repeat %d/%d: accounting %s\n", r + 1, o.repeats, side);
            spawn(o, side, by_side[side]);
        }
    std::printf("%d repeats, sides alternating, %u threads, %lld topic records; medians\n",
                o.repeats, o.threads, static_cast<long long>(o.records));
    std::printf("| statement | CPU s off | CPU s on | on/off CPU | wall s off | wall s on | on/off wall |\n");
    std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
    for (const auto& q : queries()) {
        if (!selected(o, q.name)) continue;
        const auto& off = by_side["off"][q.name];
        const auto& on = by_side["on"][q.name];
        if (off.rows != on.rows) die(std::string(q.name) + ": results differ between the sides");
        const double c0 = median(off.cpu), c1 = median(on.cpu);
        const double w0 = median(off.wall), w1 = median(on.wall);
        std::printf("| %s | %.2f | %.2f | %.3f | %.2f | %.2f | %.3f |\n", q.name, c0, c1, c1 / c0,
                    w0, w1, w1 / w0);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return bench::guarded_main(tool, [&] {
        options o;
        bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
            if (f == "--dir") o.dir = v;
            else if (f == "--records") o.records = bench::number<int64_t>(tool, f, v);
            else if (f == "--partitions") o.partitions = bench::number<int32_t>(tool, f, v);
            else if (f == "--repeats") o.repeats = bench::number<int>(tool, f, v);
            else if (f == "--threads") o.threads = bench::number<uint32_t>(tool, f, v);
            else if (f == "--only") o.only = v;
            else if (f == "--child") o.child = v;
            else return false;
            return true;
        });
        return o.child.empty() ? run_parent(o) : run_child(o);
    });
}

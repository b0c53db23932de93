// sluice-shared-probe: drives the shared engines' clients (src/shared) from the command
// line, for tests/integration/test_shared_engines.py, which starts a real S3 server and
// PostgreSQL and passes their addresses in the environment (src/shared/engine_env.h).
// Each command prints what came back; a failure prints "error CODE: MESSAGE" on stderr
// and exits 1.

#include <iostream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "metrics/registry.h"
#include "shared/batch_index.h"
#include "shared/catalog_schema.h"
#include "shared/engine_env.h"

namespace sluice::shared {
// shared_log_probe.cc
int log_command(const std::string& cmd, const std::vector<std::string>& args);
// maintenance_probe.cc
int maintenance_command(const std::string& cmd, const std::vector<std::string>& args);
int fail(const error& e);
}  // namespace sluice::shared

namespace {

using namespace sluice;
using namespace sluice::shared;

const char* code_name(errc c) {
    switch (c) {
        case errc::not_found:
            return "not_found";
        case errc::out_of_range:
            return "out_of_range";
        case errc::io_error:
            return "io_error";
        case errc::timed_out:
            return "timed_out";
        case errc::invalid_config:
            return "invalid_config";
        case errc::already_exists:
            return "already_exists";
        default:
            return "other";
    }
}

}  // namespace

int sluice::shared::fail(const error& e) {
    std::cerr << "error " << code_name(e.code) << ": " << e.message << "\n";
    return 1;
}

namespace {

void print_rows(const pg_rows& rows) {
    for (const auto& row : rows.rows) {
        std::string line;
        for (size_t c = 0; c < row.size(); ++c)
            line += (c ? "\t" : "") + (row[c] ? *row[c] : std::string("NULL"));
        std::cout << line << "\n";
    }
}

int s3_command(const std::string& cmd, const std::vector<std::string>& args) {
    auto store = make_s3_object_store(s3_config_from_env());
    if (!store) return fail(store.err());
    object_store& s = **store;
    if (cmd == "s3-put" && args.size() == 1) {
        std::string data((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
        auto r = s.put(args[0], data);
        if (!r) return fail(r.err());
        std::cout << "ok " << data.size() << "\n";
    } else if (cmd == "s3-get" && (args.size() == 1 || args.size() == 3)) {
        std::optional<byte_range> range;
        if (args.size() == 3) range = byte_range{std::stoull(args[1]), std::stoull(args[2])};
        auto r = s.get(args[0], range);
        if (!r) return fail(r.err());
        std::cout << *r;
    } else if (cmd == "s3-head" && args.size() == 1) {
        auto r = s.head(args[0]);
        if (!r) return fail(r.err());
        std::cout << r->size << " " << r->etag << "\n";
    } else if (cmd == "s3-list" && args.size() == 1) {
        auto r = s.list(args[0]);
        if (!r) return fail(r.err());
        for (const auto& o : *r) std::cout << o.key << " " << o.size << "\n";
    } else if (cmd == "s3-delete" && args.size() == 1) {
        auto r = s.remove(args[0]);
        if (!r) return fail(r.err());
        std::cout << "ok\n";
    } else if (cmd == "s3-count" && args.size() == 1) {
        // PUT KEY (stdin), GET it, GET a key that is not there, LIST, DELETE KEY; then
        // the object-store lines of what GET /metrics would show.
        std::string data((std::istreambuf_iterator<char>(std::cin)),
                         std::istreambuf_iterator<char>());
        if (auto r = s.put(args[0], data); !r) return fail(r.err());
        if (auto r = s.get(args[0]); !r) return fail(r.err());
        if (auto r = s.get(args[0] + ".absent"); r || r.code() != errc::not_found)
            return fail(error{errc::io_error, "GET of an absent key did not answer not_found"});
        if (auto r = s.list(args[0]); !r) return fail(r.err());
        if (auto r = s.remove(args[0]); !r) return fail(r.err());
        std::string text = metrics::global().render();
        size_t at = 0;
        while (at < text.size()) {
            size_t nl = text.find('\n', at);
            std::string_view line(text.data() + at,
                                  (nl == std::string::npos ? text.size() : nl) - at);
            if (line.rfind("sluice_object_store_", 0) == 0) std::cout << line << "\n";
            at = nl == std::string::npos ? text.size() : nl + 1;
        }
    } else {
        std::cerr << "usage: s3-put KEY < DATA | s3-get KEY [OFFSET LENGTH] | s3-head KEY | "
                     "s3-list PREFIX | "
                     "s3-delete KEY | s3-count KEY < DATA\n";
        return 2;
    }
    return 0;
}

// Statements from stdin, one a line, over one connection: each answers its rows then
// "done reconnects=N", or "error ...". A test restarts the database between lines.
int pg_session(pg_database& db) {
    std::string line;
    while (std::getline(std::cin, line)) {
        auto r = db.exec(line);
        if (r) {
            print_rows(*r);
            std::cout << "done reconnects=" << db.reconnects() << std::endl;
        } else {
            std::cout << "error " << code_name(r.code()) << ": " << r.err().message << std::endl;
        }
    }
    return 0;
}

// Waits for COUNT notifications on CHANNEL, printing each, for at most TIMEOUT_MS.
int pg_listen(const std::string& channel, int64_t timeout_ms, int count) {
    auto l = pg_listener::connect(pg_config_from_env(), {channel});
    if (!l) return fail(l.err());
    std::cout << "listening" << std::endl;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int got = 0;
    while (got < count) {
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            std::cout << "timeout" << std::endl;
            return 3;
        }
        auto w = (*l)->wait(left);
        if (!w) {
            std::cout << "wait-error " << w.err().message << std::endl;
            continue;
        }
        if (w->reconnected) std::cout << "reconnected" << std::endl;
        for (const auto& n : w->notifications) {
            std::cout << "notify " << n.channel << " " << n.payload << std::endl;
            ++got;
        }
    }
    return 0;
}

int pg_command(const std::string& cmd, const std::vector<std::string>& args) {
    if (cmd == "pg-listen" && args.size() == 3)
        return pg_listen(args[0], std::stoll(args[1]), std::stoi(args[2]));
    auto db = pg_database::connect(pg_config_from_env());
    if (!db) return fail(db.err());
    if (cmd == "pg-schema" && args.empty()) {
        auto r = ensure_catalog_schema(**db);
        if (!r) return fail(r.err());
        std::cout << "found " << *r << " now " << shared_catalog_version << "\n";
    } else if (cmd == "pg-exec" && !args.empty()) {
        std::vector<pg_param> params(args.begin() + 1, args.end());
        auto r = (*db)->exec(args[0], params);
        if (!r) return fail(r.err());
        print_rows(*r);
    } else if (cmd == "pg-session" && args.empty()) {
        return pg_session(**db);
    } else if (cmd == "pg-notify" && args.size() == 2) {
        auto r = (*db)->transact(isolation_level::read_committed,
                                 [&](pg_transaction& tx) { return tx.notify(args[0], args[1]); });
        if (!r) return fail(r.err());
        std::cout << "ok\n";
    } else if (cmd == "pg-increment" && args.size() == 1) {
        // Adds 1 to sluice_probe_counter's row ROUNDS times, each a serializable
        // read-then-write: run at once from two processes, the server aborts some with
        // 40001 and transact runs them again. Prints how many times the bodies ran.
        int rounds = std::stoi(args[0]);
        int runs = 0;
        for (int i = 0; i < rounds; ++i) {
            auto r = (*db)->transact(
                isolation_level::serializable, [&](pg_transaction& tx) -> result<void> {
                    ++runs;
                    auto v = tx.exec("SELECT v FROM sluice_probe_counter WHERE id = 1");
                    if (!v) return v.err();
                    auto u = tx.exec("UPDATE sluice_probe_counter SET v = $1 WHERE id = 1",
                                     {std::to_string(v->int64(0, 0) + 1)});
                    if (!u) return u.err();
                    return {};
                });
            if (!r) return fail(r.err());
        }
        std::cout << "runs " << runs << "\n";
    } else if (cmd == "pg-pipeline" && args.size() >= 2) {
        // pg-pipeline commit|after SQL...: the statements in one round trip of one
        // transaction, COMMIT with them (commit) or by transact after (after); prints each
        // statement's rows, then "statements N".
        std::vector<pg_statement> sts;
        for (size_t i = 1; i < args.size(); ++i) sts.push_back({args[i], {}});
        auto r = (*db)->transact<std::vector<pg_rows>>(
            isolation_level::read_committed,
            [&](pg_transaction& tx) { return tx.pipeline(sts, args[0] == "commit"); });
        if (!r) return fail(r.err());
        for (const auto& rows : *r) print_rows(rows);
        std::cout << "statements " << r->size() << "\n";
    } else if (cmd == "pg-topic" && args.size() == 3) {
        auto r = create_topic(**db, args[0], args[1], std::stoi(args[2]));
        if (!r) return fail(r.err());
        std::cout << "ok\n";
    } else if (cmd == "pg-commit" && args.size() >= 2) {
        // pg-commit OBJECT_KEY TOPIC_ID:PARTITION:RECORDS... (each batch 100 bytes long)
        object_commit c{args[0], 0, 1, {}};
        for (size_t i = 1; i < args.size(); ++i) {
            size_t a = args[i].find(':'), b = args[i].rfind(':');
            batch_append ba{args[i].substr(0, a),
                            std::stoi(args[i].substr(a + 1, b - a - 1)),
                            std::stoi(args[i].substr(b + 1)),
                            c.size,
                            100,
                            0};
            c.size += 100;
            c.batches.push_back(ba);
        }
        auto r = commit_object(**db, c);
        if (!r) return fail(r.err());
        for (const auto& o : *r) std::cout << o.base_offset << "\n";
    } else {
        std::cerr << "usage: pg-schema | pg-exec SQL [PARAM...] | pg-session | pg-notify CHANNEL "
                     "PAYLOAD | "
                     "pg-listen CHANNEL TIMEOUT_MS COUNT | pg-increment ROUNDS | "
                     "pg-pipeline commit|after SQL... | pg-topic ID NAME "
                     "PARTITIONS | "
                     "pg-commit KEY TOPIC_ID:PARTITION:RECORDS...\n";
        return 2;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::cerr << "usage: sluice-shared-probe s3-...|pg-... ARGS (see the source)\n";
        return 2;
    }
    std::string cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    if (cmd.rfind("mnt-", 0) == 0 || cmd == "log-bounds" || cmd == "log-digest")
        return maintenance_command(cmd, args);
    if (cmd.rfind("log-", 0) == 0) return log_command(cmd, args);
    return cmd.rfind("s3-", 0) == 0 ? s3_command(cmd, args) : pg_command(cmd, args);
}

#include "expansion/duck/duck_target.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <system_error>
#include <thread>

#include "common/logging.h"
#include "expansion/duck/duck_store.h"
#include "sql/sql_text.h"

namespace sluice::expansion {

using sql::quote_ident;
using sql::quote_literal;

namespace {

// The format of the file (docs/formats/expansion-duckdb.md); progress_format_version is
// the progress table's, as in the SQLite files.
constexpr const char* format_name = "sluice-expansion-duckdb";
constexpr int format_version = 3;
// Progress rows the targets append between two prunings of the rows they supersede: a
// DELETE statement every this many rows, not one per commit.
constexpr int64_t prune_every_rows = 1'000;

}  // namespace

int64_t progress_rows::move_deltas(d::Connection& con) {
    std::lock_guard lk(deleting);  // before the list: remove() drops a delta under it
    std::map<std::string, std::string> todo;
    {
        std::lock_guard list(deltas_mu);
        todo = deltas;
    }
    int64_t total = 0;
    for (const auto& [delta, target] : todo) {
        auto moved = move_delta(con, target, delta);
        if (!moved) {
            log_warn("expansion", "{} (tried again after the next checkpoint)",
                     moved.err().message);
            continue;
        }
        if (*moved > 0)
            log_debug("expansion", "moved {} rows committed during the checkpoint into {}",
                      *moved, target);
        total += *moved;
    }
    return total;
}

struct duck_targets::impl {
    duck_options o;
    std::shared_ptr<d::DuckDB> db;
    mutable std::mutex mu;  // the checkpoint thread's state
    std::mutex cycling;     // one checkpoint at a time
    std::condition_variable cv;
    bool stop = false;
    checkpoint_counts counts;
    std::shared_ptr<progress_rows> progress = std::make_shared<progress_rows>();
    std::thread thread;

    // Prunes the progress rows of every target, off the expander's commit path: a DELETE
    // runs through DuckDB's executor, and waits for a running checkpoint to end (DuckDB
    // lets transactions that only append commit meanwhile, not those that delete).
    void prune(d::Connection& con) {
        const int64_t seen = progress->unpruned.load();
        if (seen < prune_every_rows) return;
        std::lock_guard lk(progress->deleting);
        auto r = con.Query(prune_sql("true"));
        if (r->HasError()) {
            log_warn("expansion", "pruning the progress rows of {}: {}", o.file.string(),
                     r->GetError());
            return;
        }
        progress->unpruned -= seen;
    }

    void run_checkpoints() {
        std::unique_lock lk(mu);
        while (!stop) {
            cv.wait_for(lk, std::chrono::milliseconds(200));
            if (stop) break;
            lk.unlock();
            step();
            lk.lock();
        }
    }

    // Checkpoints once the WAL passed checkpoint_wal_bytes, then prunes the progress rows
    // (after: the DELETE's transaction keeps DuckDB from starting a checkpoint until it is
    // cleaned up).
    void step() {
        std::error_code ec;
        const auto wal_bytes = std::filesystem::file_size(o.file.string() + ".wal", ec);
        const bool due = !ec && wal_bytes >= o.checkpoint_wal_bytes;
        if (!due && progress->unpruned.load() < prune_every_rows) return;
        try {
            d::Connection con(*db);
            if (due) cycle(con, wal_bytes);
            prune(con);
        } catch (const std::exception& e) {
            log_warn("expansion", "checkpoint of {}: {}", o.file.string(), message_of(e));
        }
    }

    // Checkpoints with the targets' commits diverted to their deltas, then moves the rows
    // the deltas got into the targets (delta.h). Returns DuckDB's error, if any.
    std::string cycle(d::Connection& con, uint64_t wal_bytes) {
        std::lock_guard one(cycling);
        progress->gate.divert();
        auto error = checkpoint_now(con, wal_bytes);
        progress->gate.restore();
        const auto moved = progress->move_deltas(con);
        std::lock_guard count(mu);
        counts.moved_rows += moved;
        return error;
    }

    std::string checkpoint_now(d::Connection& con, uint64_t wal_bytes) {
        const auto started = std::chrono::steady_clock::now();
        auto r = con.Query("CHECKPOINT");
        const double took =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started)
                .count();
        const bool ok = !r->HasError();
        if (ok)
            log_debug("expansion", "checkpointed {} ({} MiB of WAL) in {:.0f} ms",
                      o.file.string(), wal_bytes >> 20, took);
        else
            log_debug("expansion", "checkpoint of {}: {} (tried again)", o.file.string(),
                      r->GetError());
        std::lock_guard count(mu);
        ++(ok ? counts.done : counts.refused);
        if (ok) {
            counts.ms += took;
            counts.longest_ms = std::max(counts.longest_ms, took);
        }
        return ok ? std::string() : r->GetError();
    }
};

std::string duck_targets::bookkeeping_sql() {
    return fmt::format(
        "CREATE TABLE IF NOT EXISTS main.{0} (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL);"
        "INSERT OR IGNORE INTO main.{0} VALUES ('format', '{1}'), ('format_version', '{2}'), "
        "('expansion_progress_format', '{3}');"
        "CREATE TABLE IF NOT EXISTS main.{4} (target VARCHAR NOT NULL, "
        "\"partition\" INTEGER NOT NULL, next_offset BIGINT NOT NULL, "
        "backfill_start BIGINT NOT NULL, backfill_next BIGINT NOT NULL, "
        "backfill_end BIGINT NOT NULL, seq BIGINT DEFAULT 0)",
        meta_table, format_name, format_version, progress_format_version, progress_table);
}

namespace {

// Version 1 updated a progress row per partition in place; version 2 appends them with a
// seq; version 3 may hold deltas (docs/formats/expansion-duckdb.md). An older file gets
// what it lacks (version 1: the column, its rows seq 0, each still its partition's only
// row; a target's delta is made when it opens) and its version, in one transaction.
void upgrade(d::Connection& con) {
    auto v = con.Query(fmt::format(
        "SELECT value FROM main.{0} WHERE key = 'format_version' AND value IN ('1', '2') AND "
        "EXISTS (SELECT 1 FROM main.{0} WHERE key = 'format' AND value = '{1}')",
        meta_table, format_name));
    check(*v);
    auto chunk = v->Fetch();
    if (!chunk || chunk->size() == 0) return;
    const auto from = chunk->GetValue(0, 0).ToString();
    const auto add_seq =
        from == "1" ? fmt::format("ALTER TABLE main.{} ADD COLUMN seq BIGINT DEFAULT 0; ",
                                  progress_table)
                    : std::string();
    auto u = con.Query(fmt::format(
        "BEGIN; {}UPDATE main.{} SET value = '{}' WHERE key = 'format_version'; COMMIT", add_seq,
        meta_table, format_version));
    if (u->HasError()) {
        con.Query("ROLLBACK");
        u->ThrowError();
    }
    log_info("expansion", "upgraded the expansion targets' file from format version {} to {}",
             from, format_version);
}

}  // namespace

duck_targets::duck_targets(std::unique_ptr<impl> i) : _impl(std::move(i)) {}

duck_targets::~duck_targets() {
    {
        std::lock_guard lk(_impl->mu);
        _impl->stop = true;
    }
    _impl->cv.notify_all();
    if (_impl->thread.joinable()) _impl->thread.join();
    // A stopped broker's file holds no rows in deltas (`duckdb -readonly` reads the tables).
    try {
        d::Connection con(*_impl->db);
        _impl->progress->move_deltas(con);
    } catch (const std::exception& e) {
        log_warn("expansion", "closing {}: {}", _impl->o.file.string(), message_of(e));
    }
}

result<std::shared_ptr<duck_targets>> duck_targets::open(const duck_options& o) {
    auto i = std::make_unique<impl>();
    i->o = o;
    try {
        if (o.database) {
            i->db = o.database;
        } else {
            d::DBConfig config;
            config.SetOptionByName(
                "memory_limit",
                d::Value(fmt::format("{}KiB", std::max<uint64_t>(o.memory_limit_bytes / 1024, 1))));
            config.SetOptionByName("threads", d::Value::BIGINT(std::max(1, o.threads)));
            // The backend's thread checkpoints; commits never do (see the header).
            config.SetOptionByName("checkpoint_threshold", d::Value("1000TiB"));
            config.SetOptionByName("autoinstall_known_extensions", d::Value::BOOLEAN(false));
            config.SetOptionByName("autoload_known_extensions", d::Value::BOOLEAN(false));
            add_delta_reads(config);
            i->db = std::make_shared<d::DuckDB>(o.file.string(), &config);
        }
        d::Connection con(*i->db);
        auto q = con.Query(bookkeeping_sql());
        check(*q);
        upgrade(con);
        auto v =
            con.Query(fmt::format("SELECT (SELECT value FROM main.{0} WHERE key = 'format'), "
                                  "(SELECT value FROM main.{0} WHERE key = 'format_version')",
                                  meta_table));
        check(*v);
        auto chunk = v->Fetch();
        const auto name = chunk->GetValue(0, 0).ToString();
        const auto version = chunk->GetValue(1, 0).ToString();
        if (name != format_name || version != std::to_string(format_version))
            return error{errc::unsupported,
                         fmt::format("{}: format {} version {} is not the one this build knows "
                                     "({} version {})",
                                     o.file.string(), name, version, format_name, format_version)};
    } catch (const std::exception& e) {
        return error{errc::io_error, fmt::format("opening {}: {}", o.file.string(), message_of(e))};
    }
    auto* self = i.get();
    i->thread = std::thread([self] { self->run_checkpoints(); });
    return std::shared_ptr<duck_targets>(new duck_targets(std::move(i)));
}

result<std::unique_ptr<target_store>> duck_targets::open(const std::string& schema,
                                                         const std::string& table, const layout& l,
                                                         bool create) {
    return open_store(*_impl->db, _impl->progress, schema, table, l, create);
}

result<int64_t> duck_targets::count_rows(const std::string& schema, const std::string& table) {
    auto r =
        query(fmt::format("SELECT count(*) FROM {}.{}", quote_ident(schema), quote_ident(table)));
    if (!r) return r.err();
    return std::stoll(*(*r).at(0).at(0));
}

result<duck_rows> duck_targets::query(const std::string& sql) {
    try {
        d::Connection con(*_impl->db);
        auto q = con.Query(sql);
        if (q->HasError()) return error{errc::invalid_argument, q->GetError()};
        duck_rows out;
        for (d::idx_t r = 0; r < q->RowCount(); ++r) {
            auto& row = out.emplace_back();
            for (d::idx_t c = 0; c < q->ColumnCount(); ++c) {
                auto v = q->GetValue(c, r);
                if (v.IsNull())
                    row.emplace_back(std::nullopt);
                else
                    row.emplace_back(v.ToString());
            }
        }
        return out;
    } catch (const std::exception& e) {
        return error{errc::io_error, message_of(e)};
    }
}

result<void> duck_targets::checkpoint() {
    try {
        d::Connection con(*_impl->db);
        if (auto e = _impl->cycle(con, 0); !e.empty()) return error{errc::invalid_argument, e};
        return {};
    } catch (const std::exception& e) {
        return error{errc::io_error, message_of(e)};
    }
}

duck_targets::checkpoint_counts duck_targets::checkpoints() const {
    std::lock_guard lk(_impl->mu);
    return _impl->counts;
}

duckdb::DuckDB& duck_targets::database() {
    return *_impl->db;
}

}  // namespace sluice::expansion

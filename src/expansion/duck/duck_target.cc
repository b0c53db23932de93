#include "expansion/duck/duck_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/logging.h"
#include "duckdb.hpp"
#include "duckdb/catalog/catalog.hpp"
#include "duckdb/catalog/catalog_entry/table_catalog_entry.hpp"
#include "duckdb/catalog/entry_lookup_info.hpp"
#include "duckdb/main/appender.hpp"
#include "duckdb/main/client_context.hpp"
#include "duckdb/main/valid_checker.hpp"
#include "duckdb/transaction/meta_transaction.hpp"
#include "sql/json_text.h"
#include "sql/sql_text.h"

namespace sluice::expansion {

namespace d = ::duckdb;
using sql::quote_ident;
using sql::quote_literal;

namespace {

// The format of the file (docs/formats/expansion-duckdb.md); progress_format_version is
// the progress table's, as in the SQLite files.
constexpr const char* format_name = "sluice-expansion-duckdb";
constexpr int format_version = 2;
// Progress rows the targets append between two prunings of the rows they supersede: a
// DELETE statement every this many rows, not one per commit.
constexpr int64_t prune_every_rows = 1'000;

// The DELETE of every progress row that a later row of its (target, partition) superseded,
// for one target (`target = '...'`) or all (`true`).
std::string prune_sql(const std::string& which_targets) {
    return fmt::format("DELETE FROM main.{0} AS o WHERE {1} AND seq < (SELECT max(seq) FROM "
                       "main.{0} AS l WHERE l.target = o.target AND l.\"partition\" = "
                       "o.\"partition\")",
                       progress_table, which_targets);
}

// DuckDB's column type for a layout column: SQLite's declared types as DuckDB's, except
// _source, which holds any bytes (DuckDB's VARCHAR must be UTF-8).
d::LogicalType duck_type(const column& c) {
    const std::string_view t = c.decl_type;
    if (c.name == "_source") return d::LogicalType::BLOB;
    if (t == "INTEGER") return d::LogicalType::BIGINT;
    if (t == "REAL") return d::LogicalType::DOUBLE;
    if (t == "BOOLEAN") return d::LogicalType::BOOLEAN;
    if (t == "BLOB") return d::LogicalType::BLOB;
    return d::LogicalType::VARCHAR;
}

// Whether an existing column of DuckDB type `theirs` takes the values of a layout column
// typed `ours`, as PostgreSQL users declare them: an integer column of any width for
// BIGINT (`quantity INT`, `_partition INTEGER`; the appender casts, and a value outside a
// narrower column's range fails the commit), the type itself otherwise (VARCHAR(40) is a
// VARCHAR; SQLite's engine checks affinities: target.cc, compatible()).
bool compatible(const d::LogicalType& ours, d::LogicalTypeId theirs) {
    using id = d::LogicalTypeId;
    if (theirs == ours.id()) return true;
    return ours.id() == id::BIGINT && (theirs == id::TINYINT || theirs == id::SMALLINT ||
                                       theirs == id::INTEGER || theirs == id::HUGEINT);
}

std::string message_of(const std::exception& e) {
    return d::ErrorData(e).Message();
}

// A statement's first value as an integer (row counts of DML, count(*)).
int64_t first_int(d::QueryResult& r) {
    auto chunk = r.Fetch();
    if (!chunk || chunk->size() == 0) return 0;
    return chunk->GetValue(0, 0).GetValue<int64_t>();
}

void check(d::QueryResult& r) {
    if (r.HasError()) r.ThrowError();
}

}  // namespace

// What the targets of one file share with the backend's thread: the count of progress rows
// appended since the thread last pruned, and a lock that keeps the thread's DELETE of
// superseded progress rows and a target's own DELETEs of its progress apart (DuckDB fails
// the second of two transactions that delete the same row).
struct progress_rows {
    std::atomic<int64_t> unpruned{0};
    std::mutex deleting;
};

struct duck_targets::impl {
    duck_options o;
    std::shared_ptr<d::DuckDB> db;
    mutable std::mutex mu;  // the checkpoint thread's state
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
            if (due) checkpoint_now(con, wal_bytes);
            prune(con);
        } catch (const std::exception& e) {
            log_warn("expansion", "checkpoint of {}: {}", o.file.string(), message_of(e));
        }
    }

    void checkpoint_now(d::Connection& con, uint64_t wal_bytes) {
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
    }
};

// One target: its own connection, appender and prepared progress statements.
class duck_target final : public target_store {
  public:
    duck_target(d::DuckDB& db, std::shared_ptr<progress_rows> shared, std::string schema,
                std::string table, const layout& l)
        : _con(db),
          _shared(std::move(shared)),
          _schema(std::move(schema)),
          _table(std::move(table)),
          _qualified(_schema + "." + _table),
          _key(sql::to_lower(_table)),
          _layout(l) {
        for (const auto& c : l.columns()) _types.push_back(duck_type(c));
    }
    ~duck_target() override {
        try {
            if (_in_txn) rollback();
            _direct.reset();
            _progress.reset();
            _appender.reset();
        } catch (...) {  // a destructor must not throw; DuckDB rolls back on close
        }
    }

    // Makes the schema and table (with create), checks an existing table, prepares.
    result<void> prepare(bool create) {
        return guarded("opening", [&]() -> result<void> {
            if (auto r = ensure_table(create); !r) return r;
            _appender = std::make_unique<d::Appender>(_con, _schema, _table);
            // Naming the columns makes every flush an INSERT statement over the rows
            // (defaults for the others): only for a table with columns of its own.
            if (!_exact) {
                _appender->ClearColumns();
                for (const auto& c : _layout.columns()) _appender->AddColumn(c.name);
            }
            _direct_ok = _exact && _appender->GetActiveTypes() == _types;
            _chunk.Initialize(d::Allocator::DefaultAllocator(), _types);
            if (auto r = prune_progress(); !r) return r;
            auto q = _con.Query(fmt::format("SELECT coalesce(max(seq), 0) FROM main.{} "
                                            "WHERE target = {}",
                                            progress_table, quote_literal(_key)));
            check(*q);
            _seq = first_int(*q) + 1;
            return {};
        });
    }

    result<progress_map> load_progress() override {
        progress_map out;
        auto r = guarded("reading progress", [&]() -> result<void> {
            // The latest row of each partition (format version 2: rows are appended).
            auto q = _con.Query(fmt::format(
                "SELECT \"partition\", arg_max(next_offset, seq), arg_max(backfill_start, seq), "
                "arg_max(backfill_next, seq), arg_max(backfill_end, seq) FROM main.{} "
                "WHERE target = {} GROUP BY \"partition\"",
                progress_table, quote_literal(_key)));
            check(*q);
            for (auto& row : *q) {
                partition_progress p;
                p.next = row.GetValue<int64_t>(1);
                p.backfill_start = row.GetValue<int64_t>(2);
                p.backfill_next = row.GetValue<int64_t>(3);
                p.backfill_end = row.GetValue<int64_t>(4);
                out[row.GetValue<int32_t>(0)] = p;
            }
            return {};
        });
        if (!r) return r.err();
        return out;
    }

    // The transaction is begun and committed through the connection's transaction context,
    // as DuckDB's BEGIN and COMMIT statements do it, without parsing, planning and running
    // a statement each time (docs/benchmarks.md, "Columnar expansion targets").
    result<void> begin() override {
        auto r = guarded("beginning a transaction", [&]() -> result<void> {
            auto& tc = _con.context->transaction;
            if (tc.HasActiveTransaction())
                return error{errc::io_error,
                             fmt::format("{}: a transaction is already open", _qualified)};
            tc.SetAutoCommit(false);  // begins one; statements run inside it until Commit()
            _in_txn = true;
            if (_direct_ok) _direct = direct_appender(_schema, _table);
            _progress = direct_appender("main", progress_table);
            return {};
        });
        if (!r && _in_txn) rollback();  // e.g. the table was dropped under it
        return r;
    }

    result<void> insert(int32_t partition, offset_t offset, timestamp_ms broker_time,
                        const expanded_row& row, std::optional<bytes_view> source,
                        std::optional<bytes_view> key) override {
        const auto n = _chunk.size();
        size_t c = 0;
        set_int(c++, n, partition);
        set_int(c++, n, offset);
        set_int(c++, n, broker_time);
        for (const auto& f : row.fields) set_cell(c++, n, f);
        const std::string_view key_bytes =
            key ? std::string_view(reinterpret_cast<const char*>(key->data()), key->size())
                : std::string_view();
        const bool key_not_text =
            key && _layout.key() == field_type::string && !sql::is_valid_utf8(key_bytes);
        const int64_t type_errors = row.type_errors + (key_not_text ? 1 : 0);
        set_int(c++, n, row.missing);
        set_int(c++, n, row.excess);
        set_int(c++, n, type_errors);
        set_int(c++, n, row.parse_error ? 1 : 0);
        count_expansion_errors(row.parse_error, type_errors);
        if (_layout.copy_source()) {
            if (source)
                set_bytes(c++, n, {reinterpret_cast<const char*>(source->data()), source->size()});
            else
                set_null(c++, n);
        }
        if (_layout.key()) {
            if (!key || key_not_text)
                set_null(c++, n);
            else
                set_bytes(c++, n, key_bytes);
        }
        _chunk.SetCardinality(n + 1);
        if (_chunk.size() == STANDARD_VECTOR_SIZE) return flush_chunk();
        return {};
    }

    // A row appended, not updated (an UPDATE is a statement DuckDB binds again at every
    // run): load_progress() takes each partition's row of the highest seq, and the
    // backend's thread deletes the rows they superseded (progress_rows).
    result<void> save_progress(int32_t partition, const partition_progress& p) override {
        return guarded("saving progress", [&]() -> result<void> {
            if (!_progress)
                return error{errc::io_error, fmt::format("{}: progress saved outside a transaction",
                                                         _qualified)};
            _progress->AppendRow(d::Value(_key), d::Value::INTEGER(partition),
                                 d::Value::BIGINT(p.next), d::Value::BIGINT(p.backfill_start),
                                 d::Value::BIGINT(p.backfill_next),
                                 d::Value::BIGINT(p.backfill_end), d::Value::BIGINT(_seq++));
            _shared->unpruned.fetch_add(1, std::memory_order_relaxed);
            return {};
        });
    }

    result<void> commit() override {
        auto r = guarded("committing", [&]() -> result<void> {
            if (auto f = flush_chunk(); !f) return f;
            if (_direct) {
                _direct->Flush();
                _direct.reset();
            } else if (_appender) {
                _appender->Flush();
            }
            if (_progress) {
                _progress->Flush();
                _progress.reset();
            }
            auto& tc = _con.context->transaction;
            // A statement that failed inside the transaction invalidated it: what DuckDB's
            // COMMIT refuses, committing the context directly must refuse too.
            if (d::ValidChecker::IsInvalidated(tc.ActiveTransaction()))
                return error{errc::io_error,
                             fmt::format("{}: the transaction was aborted: {}", _qualified,
                                         d::ValidChecker::Get(tc.ActiveTransaction())
                                             .InvalidatedMessage())};
            tc.Commit();
            _in_txn = false;
            return {};
        });
        if (!r && _in_txn) rollback();
        return r;
    }

    void rollback() override {
        _chunk.Reset();
        try {
            for (auto* a : {&_direct, &_progress}) {
                if (*a) (*a)->Clear();  // its destructor would flush what it holds
                a->reset();
            }
            if (_appender) _appender->Clear();
            auto& tc = _con.context->transaction;
            if (tc.HasActiveTransaction()) tc.Rollback(nullptr);
        } catch (const std::exception& e) {
            log_warn("expansion", "{}: rolling back: {}", _qualified, message_of(e));
        }
        _in_txn = false;
    }

    bool in_txn() const override { return _in_txn; }

    result<int64_t> delete_from(int32_t partition, offset_t from) override {
        int64_t n = 0;
        auto r = guarded("deleting rows", [&]() -> result<void> {
            auto q =
                _con.Query(fmt::format("DELETE FROM {} WHERE _partition = {} AND _offset >= {}",
                                       table_ref(), partition, from));
            check(*q);
            n = first_int(*q);
            return {};
        });
        if (!r) return r.err();
        return n;
    }

    result<void> reset_progress(const progress_map& progress) override {
        std::lock_guard lk(_shared->deleting);
        return in_transaction([&]() -> result<void> {
            if (auto r = exec(fmt::format("DELETE FROM main.{} WHERE target = {}", progress_table,
                                          quote_literal(_key)));
                !r)
                return r;
            for (const auto& [p, pp] : progress) {
                if (auto d = delete_from(p, pp.first_written()); !d) return d.err();
                if (auto r = save_progress(p, pp); !r) return r;
            }
            return {};
        });
    }

    result<void> remove(bool drop_table) override {
        _appender.reset();  // holds the table's description
        _direct_ok = false;  // the transaction drops the table the direct appender would hold
        std::lock_guard lk(_shared->deleting);
        return in_transaction([&]() -> result<void> {
            if (auto r = exec(fmt::format("DELETE FROM main.{} WHERE target = {}", progress_table,
                                          quote_literal(_key)));
                !r)
                return r;
            if (drop_table) return exec("DROP TABLE IF EXISTS " + table_ref());
            return {};
        });
    }

    const std::string& name() const override { return _qualified; }

    // One row group: DuckDB writes a full row group of a transaction's appends straight to
    // the file, compressed, so the commit logs only where it is; smaller commits write
    // every row to the WAL and have the checkpoint read and compress it again, and pay
    // DuckDB's per-commit statements (the appender's INSERT, BEGIN, COMMIT, the progress
    // UPDATE) every 5,000 rows: 0.6x SQLite's rows per CPU-second at 5,000, 1.0x at a row
    // group (docs/benchmarks.md, "Columnar expansion targets"). The row group is buffered
    // in DuckDB's buffer pool until written, bounded by its memory limit.
    int64_t backfill_rows_per_commit() const override { return DEFAULT_ROW_GROUP_SIZE; }

  private:
    std::string table_ref() const { return quote_ident(_schema) + "." + quote_ident(_table); }

    template <class F>
    result<void> guarded(const char* what, F&& f) {
        try {
            return f();
        } catch (const std::exception& e) {
            return error{errc::io_error,
                         fmt::format("{}: {}: {}", _qualified, what, message_of(e))};
        }
    }

    result<void> exec(const std::string& sql) {
        return guarded("running a statement", [&]() -> result<void> {
            auto q = _con.Query(sql);
            check(*q);
            return {};
        });
    }

    // The rows of a table with exactly the layout's columns and types, and the progress
    // rows, go into the transaction's local storage through DuckDB's internal appender
    // (what its appender's INSERT does after binding it): the table's entry is looked up in
    // this transaction, and the transaction marked as inserting into its database, as the
    // INSERT would.
    std::unique_ptr<d::InternalAppender> direct_appender(const std::string& schema,
                                                         const std::string& table) {
        auto& ctx = *_con.context;
        auto& entry = d::Catalog::GetEntry(ctx, INVALID_CATALOG, schema,
                                           d::EntryLookupInfo(d::CatalogType::TABLE_ENTRY, table))
                          .Cast<d::TableCatalogEntry>();
        d::MetaTransaction::Get(ctx).ModifyDatabase(entry.ParentCatalog().GetAttached(),
                                                    d::DatabaseModificationType::INSERT_DATA);
        return std::make_unique<d::InternalAppender>(ctx, entry);
    }

    // Deletes the progress rows that a later row of the same partition superseded.
    result<void> prune_progress() {
        std::lock_guard lk(_shared->deleting);
        return exec(prune_sql("target = " + quote_literal(_key)));
    }

    result<void> flush_chunk() {
        if (_chunk.size() == 0) return {};
        return guarded("appending rows", [&]() -> result<void> {
            (_direct ? static_cast<d::BaseAppender&>(*_direct) : *_appender)
                .AppendDataChunk(_chunk);
            _chunk.Reset();
            return {};
        });
    }

    void set_null(size_t c, d::idx_t row) { d::FlatVector::SetNull(_chunk.data[c], row, true); }
    void set_int(size_t c, d::idx_t row, int64_t v) {
        auto& vec = _chunk.data[c];
        switch (_types[c].id()) {
            case d::LogicalTypeId::BOOLEAN:
                d::FlatVector::GetData<bool>(vec)[row] = v != 0;
                break;
            case d::LogicalTypeId::DOUBLE:
                d::FlatVector::GetData<double>(vec)[row] = static_cast<double>(v);
                break;
            case d::LogicalTypeId::BIGINT:
                d::FlatVector::GetData<int64_t>(vec)[row] = v;
                break;
            default:  // text or bytes: the number as text
                set_bytes(c, row, std::to_string(v));
        }
    }
    void set_real(size_t c, d::idx_t row, double v) {
        if (_types[c].id() == d::LogicalTypeId::DOUBLE)
            d::FlatVector::GetData<double>(_chunk.data[c])[row] = v;
        else
            set_int(c, row, static_cast<int64_t>(v));
    }
    void set_bytes(size_t c, d::idx_t row, std::string_view s) {
        auto& vec = _chunk.data[c];
        d::FlatVector::GetData<d::string_t>(vec)[row] =
            d::StringVector::AddStringOrBlob(vec, s.data(), s.size());
    }
    void set_cell(size_t c, d::idx_t row, const cell& v) {
        switch (v.k) {
            case cell::kind::null:
                set_null(c, row);
                break;
            case cell::kind::integer:
                set_int(c, row, v.i);
                break;
            case cell::kind::real:
                set_real(c, row, v.d);
                break;
            case cell::kind::text:
            case cell::kind::blob:
                set_bytes(c, row, v.s);
                break;
        }
    }

    result<void> ensure_table(bool create) {
        if (create && _schema != "main") {
            if (auto r = exec("CREATE SCHEMA IF NOT EXISTS " + quote_ident(_schema)); !r) return r;
        }
        // The type by its id (data_type is PostgreSQL's name of it in the serving
        // database: sql/duck/catalog_views.h).
        auto q = _con.Query(
            fmt::format("SELECT column_name, data_type, is_nullable, column_default IS NOT NULL, "
                        "data_type_id "
                        "FROM duckdb_columns() WHERE lower(schema_name) = lower({}) "
                        "AND lower(table_name) = lower({}) AND database_name = current_database() "
                        "ORDER BY column_index",
                        quote_literal(_schema), quote_literal(_table)));
        check(*q);
        struct existing {
            std::string name, type;
            bool nullable = false, has_default = false;
            d::LogicalTypeId id = d::LogicalTypeId::INVALID;
        };
        std::map<std::string, existing> have;
        std::vector<std::string> order;
        for (auto& row : *q) {
            order.push_back(sql::to_lower(row.GetValue<std::string>(0)));
            have[order.back()] = {row.GetValue<std::string>(0), row.GetValue<std::string>(1),
                                  row.GetValue<bool>(2), row.GetValue<bool>(3),
                                  static_cast<d::LogicalTypeId>(row.GetValue<int64_t>(4))};
        }
        const auto& cols = _layout.columns();
        _exact = order.size() == cols.size();
        for (size_t i = 0; _exact && i < cols.size(); ++i)
            _exact = order[i] == sql::to_lower(cols[i].name);
        if (have.empty()) {
            if (!create)
                return error{errc::not_found,
                             fmt::format("table {} does not exist in the DuckDB database (a target "
                                         "made on --sql-engine sqlite after the first start on "
                                         "DuckDB, which copied them, stays in SQLite: "
                                         "docs/expansions.md, Storage)",
                                         _qualified)};
            std::string ddl = "CREATE TABLE " + table_ref() + " (";
            for (size_t i = 0; i < cols.size(); ++i) {
                const bool nullable = _layout.expanded(i) ||
                                      (_layout.copy_source() && i == _layout.source_column()) ||
                                      (_layout.key() && i == _layout.key_column());
                ddl += fmt::format("{}{} {}{}", i ? ", " : "", quote_ident(cols[i].name),
                                   _types[i].ToString(), nullable ? "" : " NOT NULL");
            }
            if (auto r = exec(ddl + ")"); !r) return r;
            _exact = true;
            log_info("expansion", "created table {} (DuckDB)", _qualified);
            return {};
        }
        if (!create) return {};
        for (size_t i = 0; i < cols.size(); ++i) {
            auto it = have.find(sql::to_lower(cols[i].name));
            if (it == have.end())
                return error{errc::invalid_argument,
                             fmt::format("table {} exists but has no column {} ({})", _qualified,
                                         cols[i].name, _types[i].ToString())};
            if (!compatible(_types[i], it->second.id))
                return error{
                    errc::invalid_argument,
                    fmt::format("table {}: column {} is {}, not the {} its values need", _qualified,
                                it->second.name, it->second.type, _types[i].ToString())};
            have.erase(it);
        }
        for (const auto& [_, c] : have)
            if (!c.nullable && !c.has_default)
                return error{errc::invalid_argument,
                             fmt::format("table {}: column {} is NOT NULL without a default, and "
                                         "the expansion does not fill it",
                                         _qualified, c.name)};
        return {};
    }

    d::Connection _con;
    std::shared_ptr<progress_rows> _shared;  // the backend's
    std::string _schema, _table, _qualified, _key;
    layout _layout;
    d::vector<d::LogicalType> _types;
    std::unique_ptr<d::Appender> _appender;   // a table with columns of its own or other types
    std::unique_ptr<d::InternalAppender> _direct;  // otherwise, for the open transaction
    d::DataChunk _chunk;
    std::unique_ptr<d::InternalAppender> _progress;  // progress rows of the open transaction
    // The next progress row's seq. Invariant: one duck_target writes a target at a time
    // (the service keeps one per running expansion), so its rows' seqs only grow.
    int64_t _seq = 1;
    bool _in_txn = false;
    bool _exact = false;  // the table has the layout's columns, in its order, and no other
    bool _direct_ok = false;  // ... and of the layout's types: rows go through _direct
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
// seq (docs/formats/expansion-duckdb.md). A version-1 file gets the column (its rows seq 0,
// each still its partition's only row) and its version in one transaction.
void upgrade_from_v1(d::Connection& con) {
    auto v = con.Query(fmt::format(
        "SELECT value FROM main.{} WHERE key = 'format' AND value = '{}' AND EXISTS "
        "(SELECT 1 FROM main.{} WHERE key = 'format_version' AND value = '1')",
        meta_table, format_name, meta_table));
    check(*v);
    if (auto chunk = v->Fetch(); !chunk || chunk->size() == 0) return;
    auto u = con.Query(fmt::format(
        "BEGIN; ALTER TABLE main.{0} ADD COLUMN seq BIGINT DEFAULT 0; "
        "UPDATE main.{1} SET value = '{2}' WHERE key = 'format_version'; COMMIT",
        progress_table, meta_table, format_version));
    if (u->HasError()) {
        con.Query("ROLLBACK");
        u->ThrowError();
    }
    log_info("expansion", "upgraded the expansion targets' file to format version {}",
             format_version);
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
            i->db = std::make_shared<d::DuckDB>(o.file.string(), &config);
        }
        d::Connection con(*i->db);
        auto q = con.Query(bookkeeping_sql());
        check(*q);
        upgrade_from_v1(con);
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
    std::unique_ptr<duck_target> t;
    try {
        t = std::make_unique<duck_target>(*_impl->db, _impl->progress, schema, table, l);
    } catch (const std::exception& e) {
        return error{errc::io_error, fmt::format("{}.{}: {}", schema, table, message_of(e))};
    }
    if (auto r = t->prepare(create); !r) return r.err();
    return std::unique_ptr<target_store>(std::move(t));
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
    auto r = query("CHECKPOINT");
    if (!r) return r.err();
    return {};
}

duck_targets::checkpoint_counts duck_targets::checkpoints() const {
    std::lock_guard lk(_impl->mu);
    return _impl->counts;
}

duckdb::DuckDB& duck_targets::database() {
    return *_impl->db;
}

}  // namespace sluice::expansion

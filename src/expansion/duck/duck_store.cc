#include "expansion/duck/duck_store.h"

#include <optional>
#include <vector>

#include "common/logging.h"
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

using sql::quote_ident;
using sql::quote_literal;

namespace {

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
            if (_direct_ok) {
                if (auto r = prepare_delta(); !r) return r;
            }
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
            if (_has_delta) _route = _shared->gate.enter();
            if (_direct_ok)
                _direct = _route == delta_gate::route::delta ? direct_appender("main", _delta)
                                                             : direct_appender(_schema, _table);
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
            leave_route();
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
        leave_route();
    }

    bool in_txn() const override { return _in_txn; }

    result<int64_t> delete_from(int32_t partition, offset_t from) override {
        std::lock_guard lk(_shared->deleting);
        return delete_rows(partition, from);
    }

    result<void> reset_progress(const progress_map& progress) override {
        std::lock_guard lk(_shared->deleting);
        return in_transaction([&]() -> result<void> {
            if (auto r = exec(fmt::format("DELETE FROM main.{} WHERE target = {}", progress_table,
                                          quote_literal(_key)));
                !r)
                return r;
            for (const auto& [p, pp] : progress) {
                if (auto d = delete_rows(p, pp.first_written()); !d) return d.err();
                if (auto r = save_progress(p, pp); !r) return r;
            }
            return {};
        });
    }

    result<void> remove(bool drop_table) override {
        _appender.reset();  // holds the table's description
        _direct_ok = false;  // the transaction drops the table the direct appender would hold
        std::lock_guard lk(_shared->deleting);
        auto removed = in_transaction([&]() -> result<void> {
            if (auto r = exec(fmt::format("DELETE FROM main.{} WHERE target = {}", progress_table,
                                          quote_literal(_key)));
                !r)
                return r;
            // The delta goes with the expansion; its rows stay with the table's.
            if (_has_delta) {
                if (!drop_table) {
                    auto r = exec(fmt::format("INSERT INTO {} SELECT * FROM {}", table_ref(),
                                              delta_ref()));
                    if (!r) return r;
                }
                if (auto r = exec("DROP TABLE IF EXISTS " + delta_ref()); !r) return r;
            }
            if (drop_table) return exec("DROP TABLE IF EXISTS " + table_ref());
            return {};
        });
        if (removed && _has_delta) {
            std::lock_guard list(_shared->deltas_mu);
            _shared->deltas.erase(delta_ref());
            _has_delta = false;
        }
        return removed;
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
    std::string delta_ref() const { return "main." + quote_ident(_delta); }

    void leave_route() {
        if (!_route) return;
        _shared->gate.leave(*_route);
        _route.reset();
    }

    // The table's columns as CREATE TABLE declares them: the layout's, in its order, the
    // bookkeeping ones NOT NULL.
    std::string column_ddl() const {
        const auto& cols = _layout.columns();
        std::string ddl;
        for (size_t i = 0; i < cols.size(); ++i) {
            const bool nullable = _layout.expanded(i) ||
                                  (_layout.copy_source() && i == _layout.source_column()) ||
                                  (_layout.key() && i == _layout.key_column());
            ddl += fmt::format("{}{} {}{}", i ? ", " : "", quote_ident(cols[i].name),
                               _types[i].ToString(), nullable ? "" : " NOT NULL");
        }
        return ddl;
    }

    // The delta of a table with the layout's columns and types and no constraint but NOT
    // NULL (delta.h; a table with others keeps its commits waiting for its checkpoints):
    // made when absent, and the rows it got before the broker stopped moved into the table.
    result<void> prepare_delta() {
        auto q = _con.Query(fmt::format(
            "SELECT (SELECT count(*) FROM duckdb_constraints() WHERE {0} AND "
            "constraint_type <> 'NOT NULL') + (SELECT count(*) FROM duckdb_indexes() WHERE {0})",
            fmt::format("database_name = current_database() AND lower(schema_name) = lower({}) "
                        "AND lower(table_name) = lower({})",
                        quote_literal(_schema), quote_literal(_table))));
        check(*q);
        if (first_int(*q) > 0) return {};
        _delta = delta_table(_schema, _table);
        if (auto r = exec(fmt::format("CREATE TABLE IF NOT EXISTS {} ({})", delta_ref(),
                                      column_ddl()));
            !r)
            return r;
        std::lock_guard lk(_shared->deleting);
        auto moved = move_delta(_con, table_ref(), delta_ref());
        if (!moved) return moved.err();
        if (*moved > 0)
            log_info("expansion", "{}: moved {} rows committed during a checkpoint before the "
                     "stop", _qualified, *moved);
        std::lock_guard list(_shared->deltas_mu);
        _shared->deltas[delta_ref()] = table_ref();
        _has_delta = true;
        return {};
    }

    result<int64_t> delete_rows(int32_t partition, offset_t from) {
        int64_t n = 0;
        auto r = guarded("deleting rows", [&]() -> result<void> {
            std::vector<std::string> from_tables{table_ref()};
            if (_has_delta) from_tables.push_back(delta_ref());
            for (const auto& t : from_tables) {
                auto q = _con.Query(fmt::format(
                    "DELETE FROM {} WHERE _partition = {} AND _offset >= {}", t, partition, from));
                check(*q);
                n += first_int(*q);
            }
            return {};
        });
        if (!r) return r.err();
        return n;
    }

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
            if (auto r = exec("CREATE TABLE " + table_ref() + " (" + column_ddl() + ")"); !r)
                return r;
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
    // ... and a delta (delta.h) named _delta, where the open transaction's rows go when
    // _route says so.
    bool _has_delta = false;
    std::string _delta;
    std::optional<delta_gate::route> _route;
};

}  // namespace

result<std::unique_ptr<target_store>> open_store(d::DuckDB& db,
                                                 std::shared_ptr<progress_rows> shared,
                                                 const std::string& schema,
                                                 const std::string& table, const layout& l,
                                                 bool create) {
    std::unique_ptr<duck_target> t;
    try {
        t = std::make_unique<duck_target>(db, std::move(shared), schema, table, l);
    } catch (const std::exception& e) {
        return error{errc::io_error, fmt::format("{}.{}: {}", schema, table, message_of(e))};
    }
    if (auto r = t->prepare(create); !r) return r.err();
    return std::unique_ptr<target_store>(std::move(t));
}

}  // namespace sluice::expansion

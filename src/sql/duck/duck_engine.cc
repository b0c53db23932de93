#include "sql/duck/duck_engine.h"

#include <fmt/format.h>

#include <mutex>
#include <unordered_map>

#include "duckdb.hpp"
#include "expansion/duck/delta.h"
#include "sql/duck/catalog_views.h"
#include "sql/duck/duck_internal.h"
#include "sql/duck/session_memory.h"
#include "sql/duck/sluice_tables.h"
#include "sql/duck/topic_scan.h"

namespace sluice::sql::duck {

struct session::impl {
    engine::impl* owner = nullptr;
    std::unique_ptr<d::Connection> con;
    scan_counters counters;
    std::mutex mu;  // guards the session's statement_context against DuckDB's threads
};

namespace {

// Sizes as DuckDB's settings take them.
std::string kib(uint64_t bytes) {
    return fmt::format("{}KiB", std::max<uint64_t>(bytes / 1024, 1));
}

}  // namespace

// DuckDB's error kinds as the engine interface's (SQLSTATEs in sql/engine.h).
failure failure_of(d::ExceptionType t, const std::string& msg) {
    // A write of the database or its WAL that met ENOSPC (a commit's is a TRANSACTION error).
    if ((t == d::ExceptionType::IO || t == d::ExceptionType::TRANSACTION) &&
        msg.find(no_space_text) != std::string::npos)
        return failure::disk_full;
    switch (t) {
        case d::ExceptionType::PARSER:
        case d::ExceptionType::SYNTAX:
            return failure::syntax;
        case d::ExceptionType::CATALOG:
            return failure::undefined_table;
        case d::ExceptionType::BINDER:
            return msg.find("not found") != std::string::npos ? failure::undefined_column
                                                              : failure::syntax;
        case d::ExceptionType::PERMISSION:
        case d::ExceptionType::SETTINGS:
            return failure::not_authorized;
        case d::ExceptionType::CONVERSION:
        case d::ExceptionType::INVALID_INPUT:
        case d::ExceptionType::OUT_OF_RANGE:
        case d::ExceptionType::MISMATCH_TYPE:
        case d::ExceptionType::DIVIDE_BY_ZERO:
            return failure::invalid_parameter;
        case d::ExceptionType::OUT_OF_MEMORY:
            return failure::memory_exhausted;
        case d::ExceptionType::CONSTRAINT:
            return failure::constraint;
        case d::ExceptionType::INTERRUPT:
            return failure::canceled;
        default:
            return failure::internal;
    }
}

engine::engine(std::unique_ptr<impl> i) : _impl(std::move(i)) {}
engine::~engine() = default;

outcome<std::unique_ptr<engine>> engine::open(const options& o) {
    if (!o.logs) return query_error{failure::internal, "duck engine: no log manager"};
    auto i = std::make_unique<impl>();
    install_memory_accounting();
    try {
        d::DBConfig config;
        // Sessions' string heaps charged to them (duck/session_memory.h).
        config.allocator = database_allocator_for_sessions();
        // Bounded memory and temp space, the temp files under the data directory (set
        // first: with external access off, DuckDB refuses to change temp_directory); no
        // file, network or extension access from SQL; then nothing can be SET again.
        config.SetOptionByName("memory_limit", d::Value(kib(o.memory_limit_bytes)));
        config.SetOptionByName("temp_directory", d::Value((o.data_dir / "sql-duck-tmp").string()));
        config.SetOptionByName("max_temp_directory_size", d::Value(kib(o.temp_limit_bytes)));
        config.SetOptionByName("threads", d::Value::BIGINT(std::max(1, o.threads)));
        // PostgreSQL's `/`: an integer divided by an integer is an integer (truncated).
        config.SetOptionByName("integer_division", d::Value::BOOLEAN(true));
        config.SetOptionByName("autoinstall_known_extensions", d::Value::BOOLEAN(false));
        config.SetOptionByName("autoload_known_extensions", d::Value::BOOLEAN(false));
        config.SetOptionByName("allow_community_extensions", d::Value::BOOLEAN(false));
        config.SetOptionByName("allow_unsigned_extensions", d::Value::BOOLEAN(false));
        // (DuckDB takes no SET of allowed_directories before it opens: the set itself.)
        if (!o.export_dir.empty())
            config.options.allowed_directories.insert(o.export_dir.string() + "/");
        config.SetOptionByName("enable_external_access", d::Value::BOOLEAN(false));
        // A writer of the file checkpoints on a thread of its own, never inside a commit
        // (duck/duck_engine.h).
        if (!o.file.empty()) config.SetOptionByName("checkpoint_threshold", d::Value("1000TiB"));
        config.SetOptionByName("lock_configuration", d::Value::BOOLEAN(true));
        const table_sources names{o.logs, o.catalog, o.state, o.topics, o.security, o.partitions};
        add_sluice_names(config, names);
        i->export_dir = o.export_dir;
        auto* self = i.get();
        i->access.find = [self](d::ClientContext& c) { return self->find(c); };
        add_table_access(config, i->access);
        // Scans of expansion targets read their deltas too (expansion/duck/delta.h).
        expansion::add_delta_reads(config);
        i->db = std::make_shared<d::DuckDB>(o.file.empty() ? nullptr : o.file.c_str(), &config);
        attach_pool(*i->db->instance);
        register_topic_scan(*i->db->instance, names.topic_scan(),
                            [self](d::ClientContext& c) { return self->find(c); });
        register_system_scan(*i->db->instance, names,
                             [self](d::ClientContext& c) { return self->find(c); });
        register_catalog_views(*i->db->instance, names,
                               [self](d::ClientContext& c) { return self->find(c); });
    } catch (const std::exception& e) {
        return query_error{failure::internal,
                           fmt::format("duck engine: {}", d::ErrorData(e).Message())};
    }
    return std::unique_ptr<engine>(new engine(std::move(i)));
}

std::shared_ptr<duckdb::DuckDB> engine::database() const {
    return _impl->db;
}

void engine::set_table_guard(const table_guard* guard) {
    _impl->access.guard.store(guard);
}

std::unique_ptr<session> engine::open_session(const security::gate* gate, security::principal who) {
    auto i = std::make_unique<session::impl>();
    i->owner = _impl.get();
    i->con = std::make_unique<d::Connection>(*_impl->db);
    return std::unique_ptr<session>(new session(std::move(i), gate, std::move(who)));
}

session::session(std::unique_ptr<impl> i, const security::gate* gate, security::principal who)
    : _impl(std::move(i)) {
    _ctx.set_access(gate, std::move(who));
    std::lock_guard lk(_impl->owner->mu);
    _impl->owner->sessions[_impl->con->context.get()] = {&_ctx, &_impl->mu, &_impl->counters};
}

session::~session() {
    {
        std::lock_guard lk(_impl->owner->mu);
        _impl->owner->sessions.erase(_impl->con->context.get());
    }
    _impl->con.reset();
}

outcome<result_set> session::query(std::string_view sql) {
    {
        std::lock_guard lk(_impl->mu);
        _ctx.begin_statement();
    }
    auto& n = _impl->counters;
    n.partitions_scanned = n.segments_read = n.batches_read = n.records_read = n.bytes_read = 0;
    auto r = _impl->con->Query(std::string(sql));
    _last = n.load();
    if (r->HasError()) {
        const auto& e = r->GetErrorObject();
        return query_error{failure_of(e.Type(), e.RawMessage()), e.Message()};
    }
    result_set out;
    out.names.assign(r->names.begin(), r->names.end());
    for (const auto& t : r->types) out.types.push_back(t.ToString());
    for (d::idx_t row = 0; row < r->RowCount(); ++row) {
        auto& cells = out.rows.emplace_back();
        for (d::idx_t c = 0; c < r->ColumnCount(); ++c) {
            auto v = r->GetValue(c, row);
            if (v.IsNull())
                cells.emplace_back(std::nullopt);
            else
                cells.emplace_back(v.ToString());
        }
    }
    return out;
}

}  // namespace sluice::sql::duck

#include <fmt/format.h>

#include <filesystem>
#include <system_error>
#include <thread>

#include "sql/budget.h"
#include "sql/duck/pg_catalog.h"
#include "sql/duck/pg_shape.h"
#include "sql/duck/serving.h"
#include "sql/duck/serving_session.h"
#include "sql/duck/session_functions.h"
#include "sql/duck/sluice_tables.h"

namespace sluice::sql::duck {

namespace {

class serving_engine final : public sql::engine {
  public:
    serving_engine(const engine_options& o, std::shared_ptr<duck::engine> e)
        : _opts(o), _duck(std::move(e)), _dog(o.data_dir / "sql-duck-tmp", o.bounds.total_temp) {
        _duck->set_table_guard(o.guard);
    }
    ~serving_engine() override = default;

    outcome<std::unique_ptr<sql::session>> open_session() override {
        return std::unique_ptr<sql::session>(
            std::make_unique<serving_session>(_duck->internals(), _opts, _dog));
    }
    limits default_limits() const override { return _opts.defaults; }

  private:
    engine_options _opts;
    std::shared_ptr<duck::engine> _duck;
    watchdog _dog;  // stops before the database closes
};

}  // namespace

outcome<std::shared_ptr<duck::engine>> open_serving_database(
    const engine_options& opts, const std::filesystem::path& file,
    const std::filesystem::path& export_dir) {
    if (!opts.logs) return query_error{failure::internal, "duckdb engine: no partition logs"};
    // The bounds its sessions' memory is charged against (duck/session_memory.h).
    set_resource_bounds(opts.bounds);
    // The temp directory starts empty: what a previous run left there is nobody's.
    const auto tmp = opts.data_dir / "sql-duck-tmp";
    std::error_code ec;
    std::filesystem::remove_all(tmp, ec);
    std::filesystem::create_directories(tmp, ec);
    if (ec) return query_error{failure::internal, fmt::format("sql-duck-tmp: {}", ec.message())};
    // The database file's directory (docs/formats/sql-duck.md).
    if (!file.empty()) {
        std::filesystem::create_directories(file.parent_path(), ec);
        if (ec)
            return query_error{failure::internal,
                               fmt::format("{}: {}", file.parent_path().string(), ec.message())};
    }
    options o;
    o.data_dir = opts.data_dir;
    o.file = file;
    o.export_dir = export_dir;
    o.logs = opts.logs;
    o.topics = opts.topics;
    o.security = opts.security;
    o.partitions = opts.partitions;
    o.catalog = opts.catalog;
    o.state = opts.state;
    o.memory_limit_bytes = opts.bounds.total_memory;
    o.temp_limit_bytes = opts.bounds.total_temp;
    // --sql-threads; by default one per core.
    o.threads =
        static_cast<int>(opts.bounds.threads ? opts.bounds.threads
                                             : std::max(1u, std::thread::hardware_concurrency()));
    auto e = engine::open(o);
    if (!e) return e.error();
    try {
        register_blob_text_cast(*(*e)->internals().db->instance);
        register_json_text(*(*e)->internals().db->instance);
        register_pg_catalog(*(*e)->internals().db->instance);
        auto* impl = &(*e)->internals();
        register_session_functions(*impl->db->instance,
                                   [impl](duckdb::ClientContext& c) { return impl->find(c); });
    } catch (const std::exception& x) {
        return query_error{failure::internal, fmt::format("duckdb engine: {}", x.what())};
    }
    return std::shared_ptr<duck::engine>(std::move(*e));
}

outcome<std::unique_ptr<sql::engine>> open_serving_engine(const engine_options& opts,
                                                          std::shared_ptr<duck::engine> db) {
    return std::unique_ptr<sql::engine>(std::make_unique<serving_engine>(opts, std::move(db)));
}

std::filesystem::path serving_database_file(const std::filesystem::path& data_dir) {
    return data_dir / "sql-duck" / "sluice.duckdb";
}

outcome<std::unique_ptr<sql::engine>> open_serving_engine(const engine_options& opts) {
    auto db = open_serving_database(opts, serving_database_file(opts.data_dir));
    if (!db) return db.error();
    return open_serving_engine(opts, std::move(*db));
}

}  // namespace sluice::sql::duck

#include "app/duck_on_demand.h"

#include <chrono>
#include <utility>

#include "common/logging.h"
#include "expansion/duck/duck_target.h"
#include "sql/duck/duck_engine.h"
#include "sql/duck/serving.h"
#include "sql/duck_migration/sqlite_to_duck.h"

namespace sluice::app {

struct duck_on_demand::opened {
    // Destroyed in reverse: the targets first, whose closing runs statements (the last
    // move of the rows in deltas: expansion/duck/delta.h) through the engine's planner
    // extensions, then the engine, whose database DuckDB closes when its last holder goes.
    std::shared_ptr<sql::duck::engine> db;
    std::shared_ptr<expansion::duck_targets> targets;
};

namespace {

// The expansions' view: DuckDB's targets, opened at the first open() or count_rows().
class on_demand_targets final : public expansion::target_backend {
  public:
    explicit on_demand_targets(std::shared_ptr<duck_on_demand> duck) : _duck(std::move(duck)) {}
    const char* kind() const override { return "duckdb"; }
    result<std::unique_ptr<expansion::target_store>> open(const std::string& schema,
                                                          const std::string& table,
                                                          const expansion::layout& l,
                                                          bool create) override {
        auto t = targets();
        if (!t) return t.err();
        return (*t)->open(schema, table, l, create);
    }
    result<int64_t> count_rows(const std::string& schema, const std::string& table) override {
        auto t = targets();
        if (!t) return t.err();
        return (*t)->count_rows(schema, table);
    }

  private:
    result<std::shared_ptr<expansion::target_backend>> targets() { return _duck->open_targets(); }
    std::shared_ptr<duck_on_demand> _duck;
};

}  // namespace

duck_on_demand::duck_on_demand(const sql::engine_options& eo, std::filesystem::path exports)
    : _eo(eo), _exports(std::move(exports)) {}

duck_on_demand::~duck_on_demand() = default;

bool duck_on_demand::is_open() const {
    std::lock_guard lk(_mu);
    return _open != nullptr;
}

sql::outcome<std::shared_ptr<sql::duck::engine>> duck_on_demand::database(std::string_view why) {
    std::lock_guard lk(_mu);
    if (auto r = open_locked(why); !r) return r.error();
    return _open->db;
}

result<std::shared_ptr<expansion::target_backend>> duck_on_demand::open_targets() {
    std::lock_guard lk(_mu);
    if (auto r = open_locked("an expansion's target"); !r)
        return error{errc::io_error, r.error().message};
    return std::shared_ptr<expansion::target_backend>(_open->targets);
}

std::shared_ptr<expansion::target_backend> duck_on_demand::targets() {
    return std::make_shared<on_demand_targets>(shared_from_this());
}

sql::outcome<bool> duck_on_demand::open_locked(std::string_view why) {
    if (_open) return true;
    const auto started = std::chrono::steady_clock::now();
    const auto fail = [why](std::string message) {
        log_error("sql", "DuckDB not opened for {}: {}", why, message);
        return sql::query_error{sql::failure::internal, std::move(message)};
    };
    const auto file = sql::duck::serving_database_file(_eo.data_dir);
    // Once: the tables the SQLite engine served from this data directory, expansion
    // targets and their progress among them (docs/sql.md, Switching engines).
    auto copied = sql::duck_migration::migrate(_eo.data_dir, file, _eo.bounds.total_memory);
    if (!copied) return fail(copied.err().message);
    auto db = sql::duck::open_serving_database(_eo, file, _exports);
    if (!db) return fail(db.error().message);
    auto t = expansion::duck_targets::open({.file = file, .database = (*db)->database()});
    if (!t) return fail(t.err().message);
    _open = std::make_unique<opened>(opened{std::move(*db), std::move(*t)});
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    log_info("sql", "DuckDB opened for {} ({}, {} ms)", why, file.string(), ms.count());
    return true;
}

}  // namespace sluice::app

#include "sql/sqlite_engine.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include <algorithm>
#include <mutex>
#include <set>

#include "common/logging.h"
#include "sql/schemas.h"
#include "sql/sqlite_session.h"

namespace sluice::sql {

const char* sqlstate(failure f) {
    switch (f) {
        case failure::syntax:
            return "42601";
        case failure::undefined_table:
            return "42P01";
        case failure::undefined_column:
            return "42703";
        case failure::read_only:
        case failure::not_authorized:
            return "42501";
        case failure::timeout:  // both are PostgreSQL's query_canceled
        case failure::canceled:
            return "57014";
        case failure::row_limit:
        case failure::program_limit:
            return "54000";
        case failure::memory_limit:
        case failure::memory_exhausted:
            return "53200";
        case failure::temp_limit:  // PostgreSQL's temp_file_limit answers it
        case failure::temp_exhausted:
            return "53400";
        case failure::invalid_parameter:
            return "22023";
        case failure::constraint:
            return "23505";
        case failure::busy:
            return "55P03";
        case failure::disk_full:
            return "53100";
        case failure::shutting_down:
            return "57P01";
        case failure::not_supported:
            return "0A000";
        case failure::internal:
            return "XX000";
    }
    return "XX000";
}

const char* failure_name(failure f) {
    switch (f) {
        case failure::syntax:
            return "syntax";
        case failure::undefined_table:
            return "undefined_table";
        case failure::undefined_column:
            return "undefined_column";
        case failure::read_only:
            return "read_only";
        case failure::not_authorized:
            return "insufficient_privilege";
        case failure::timeout:
            return "timeout";
        case failure::canceled:
            return "canceled";
        case failure::row_limit:
            return "row_limit";
        case failure::program_limit:
            return "program_limit";
        case failure::memory_limit:
            return "memory_limit";
        case failure::memory_exhausted:
            return "memory_exhausted";
        case failure::temp_limit:
            return "temp_limit";
        case failure::temp_exhausted:
            return "temp_exhausted";
        case failure::invalid_parameter:
            return "invalid_parameter";
        case failure::constraint:
            return "constraint";
        case failure::busy:
            return "busy";
        case failure::disk_full:
            return "disk_full";
        case failure::shutting_down:
            return "shutting_down";
        case failure::not_supported:
            return "not_supported";
        case failure::internal:
            return "internal";
    }
    return "internal";
}

namespace {

class sqlite_engine final : public engine {
  public:
    sqlite_engine(const engine_options& o, std::shared_ptr<schema_registry> schemas,
                  std::string vfs)
        : _opts(o), _schemas(std::move(schemas)), _vfs(std::move(vfs)) {}

    outcome<std::unique_ptr<session>> open_session() override {
        auto s = sqlite_session::open(session_sources{&_opts, _schemas.get(), _vfs.c_str()});
        if (!s) return s.error();
        return std::unique_ptr<session>(std::move(*s));
    }
    limits default_limits() const override { return _opts.defaults; }

  private:
    engine_options _opts;
    std::shared_ptr<schema_registry> _schemas;
    std::string _vfs;
};

}  // namespace

outcome<std::unique_ptr<engine>> open_engine(const engine_options& opts) {
    if (opts.defaults.timeout.count() <= 0 || opts.defaults.max_rows == 0)
        return query_error{failure::invalid_parameter, "the default limits must be positive"};
    std::shared_ptr<schema_registry> schemas = opts.schemas;
    if (!schemas) {
        auto opened = schema_registry::open(opts.data_dir / "sql");
        if (!opened) return opened.error();
        schemas = std::move(*opened);
    }
    const auto& b = opts.bounds;
    if (b.session_memory == 0 || b.total_memory == 0 || b.max_value_bytes <= 0 ||
        b.session_temp == 0 || b.total_temp == 0)
        return query_error{failure::invalid_parameter, "the SQL resource bounds must be positive"};
    set_resource_bounds(b);
    if (!budget_allocator_installed())
        log_warn("sql", "the SQL memory accounting is not installed (it must be before SQLite's "
                        "first use): users' SQL memory is not bounded");
    std::string why;
    auto vfs = install_temp_vfs(opts.data_dir / "sql-tmp", &why);
    if (vfs.empty()) return query_error{failure::internal, "sql-tmp: " + why};
    return std::unique_ptr<engine>(new sqlite_engine(opts, std::move(schemas), std::move(vfs)));
}

}  // namespace sluice::sql

#pragma once

// The engine: SQLite with the topic tables (kafka_topics."<topic>"), the system tables
// (system.*) and users' own schemas. See docs/sql.md.

#include <filesystem>
#include <memory>

#include "sql/engine.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
}

namespace sluice::sql {

class broker_state;  // sql/system_tables.h

struct engine_options {
    // Users' own tables live in <data_dir>/sql/ (docs/formats/sql-dir.md).
    std::filesystem::path data_dir;
    limits defaults;
    // Sources of the topic and system tables; null ones leave their tables out (tests of
    // the front ends need none).
    log::log_manager* logs = nullptr;
    catalog::catalog* catalog = nullptr;
    broker_state* state = nullptr;
};

// Creates <data_dir>/sql when missing. Errors: internal (with the reason).
outcome<std::unique_ptr<engine>> open_engine(const engine_options& opts);

}  // namespace sluice::sql

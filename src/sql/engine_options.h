#pragma once

// What an SQL engine is opened with (sql/duck/serving.h): where its files go, its
// bounds, the sources of its topic and system tables, and the guard of the tables the
// broker maintains. See docs/sql.md.

#include <filesystem>
#include <string>
#include <string_view>

#include "sql/budget.h"
#include "sql/engine.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
class topic_store;
class security_store;
}  // namespace sluice::catalog
namespace sluice::security {
class gate;
}

namespace sluice::sql {

class broker_state;      // sql/system_tables.h
class partition_source;  // sql/partition_source.h

// Tables and schemas of users' databases that the broker maintains (expansion targets):
// users may read them, with KafkaRead on the topic they hold, but not write, alter or
// drop them. Called from any session's thread; implementations are thread-safe.
class table_guard {
  public:
    virtual ~table_guard() = default;
    // Why users' statements may not change `schema`.`table`; empty when they may.
    virtual std::string protected_table(std::string_view schema, std::string_view table) const = 0;
    // Why `schema` may not be dropped; empty when it may.
    virtual std::string protected_schema(std::string_view schema) const = 0;
    // The topic whose records `schema`.`table` holds (it is an expansion's target);
    // empty when none.
    virtual std::string source_topic(std::string_view schema, std::string_view table) const = 0;
};

struct engine_options {
    // The engine's database and temporary files live under it (docs/formats/sql-duck.md).
    std::filesystem::path data_dir;
    limits defaults;
    // What users' sessions may take of memory and temporary files (sql/budget.h); their
    // temporary files go to <data_dir>/sql-duck-tmp.
    resource_bounds bounds;
    // Sources of the topic and system tables; null ones leave their tables out (tests of
    // the front ends need none).
    log::log_manager* logs = nullptr;
    catalog::catalog* catalog = nullptr;
    broker_state* state = nullptr;
    // Shared mode (docs/shared-mode.md): the topics of the shared catalog, whose
    // partitions `partitions` gives (read through the partition-log interface), and its
    // users and policies, in place of `catalog`'s and `logs`'. Null: `catalog` and `logs`.
    const catalog::topic_store* topics = nullptr;
    const catalog::security_store* security = nullptr;
    partition_source* partitions = nullptr;
    const table_guard* guard = nullptr;
    // Who may read which topic (the broker's policies); null: everyone may read
    // everything, as without authorization.
    const security::gate* gate = nullptr;
};

}  // namespace sluice::sql

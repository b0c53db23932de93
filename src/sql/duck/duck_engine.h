#pragma once

// DuckDB as Sluice's SQL engine (issue 36, docs/design/sql-engine.md): the one interface of
// src/sql/duck. Not on the serving path yet (sessions still go to the SQLite engine of
// src/sql); the next step routes them here.
//
// An engine is one in-memory DuckDB database, locked down when it opens: no file,
// network or extension access from SQL, memory and temp space bounded (temp files under
// the data directory), the configuration locked. Every topic reads through the table
// function kafka_topic('name') (duck/topic_scan.h), which
// - pushes down comparisons on partition, offset, timestamp_producer and
//   timestamp_broker (seeks with the offset, time and append-time indexes, as the SQLite
//   virtual table does) and decodes only the columns a query reads;
// - sees what a READ_COMMITTED consumer sees, up to each partition's last stable offset
//   as the statement first saw it (one cut per statement, for every reference to a
//   topic in it; a prepared statement takes a new one each time it runs);
// - refuses a topic the session's principal may not read, when the statement binds and
//   again when it runs.
//
// DuckDB's headers stay out of this one: callers include only this.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "security/gate.h"
#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
class security_store;
class topic_store;
}  // namespace sluice::catalog
namespace sluice::sql {
class broker_state;
class partition_source;
class table_guard;
}  // namespace sluice::sql
namespace duckdb {
class DuckDB;
}

namespace sluice::sql::duck {

struct options {
    // Temp files go to <data_dir>/sql-duck-tmp (made when needed).
    std::filesystem::path data_dir;
    // The database file (made when absent; its directory must exist): users' own tables
    // (duck/user_tables.h) and, in `sluice serve`, the expansions' columnar targets
    // (docs/formats/sql-duck.md); empty: in memory, gone when the engine closes. With a
    // file, DuckDB never checkpoints inside a commit (checkpoint_threshold): the writer
    // checkpoints on a thread of its own (expansion/duck/duck_target.h).
    std::filesystem::path file;
    // COPY ... TO writes files under it (an absolute directory; DuckDB's
    // allowed_directories); empty: no file access at all.
    std::filesystem::path export_dir;
    log::log_manager* logs = nullptr;  // required; must outlive the engine
    // Shared mode (docs/shared-mode.md, "SQL"; as sql::engine_options): the shared
    // catalog's topics and policies, and the partitions through the partition-log
    // interface, in place of `catalog`'s topics and `logs`. Null: single-node mode.
    const catalog::topic_store* topics = nullptr;
    const catalog::security_store* security = nullptr;
    partition_source* partitions = nullptr;
    // The sources of the system tables (system.*, duck/sluice_tables.h); null ones
    // leave their tables out. Must outlive the engine.
    catalog::catalog* catalog = nullptr;
    broker_state* state = nullptr;
    // DuckDB's memory_limit (the database's buffer pool: every session together) and
    // max_temp_directory_size.
    uint64_t memory_limit_bytes = uint64_t{1} << 30;
    uint64_t temp_limit_bytes = uint64_t{4} << 30;
    int threads = 2;
};

// A statement's result, whole: column names and DuckDB's type names, each value as
// DuckDB renders it as text (NULL as nullopt; BLOB as DuckDB's escaped text).
struct result_set {
    std::vector<std::string> names;
    std::vector<std::string> types;
    std::vector<std::vector<std::optional<std::string>>> rows;
};

class session;

class engine {
  public:
    // Errors: internal (DuckDB refused the configuration, or the library fails to load).
    static outcome<std::unique_ptr<engine>> open(const options& o);
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    // A session reading as `who`, authorized through `gate` (nullptr: everything allowed,
    // as without a gate in src/sql). The gate must outlive the session, and the session
    // must end before the engine. One statement at a time per session; sessions may run
    // on different threads at once.
    std::unique_ptr<session> open_session(const security::gate* gate, security::principal who);

    // The database, for other writers and readers in this process (DuckDB lets one
    // database of a process open a file): the expansions' columnar targets.
    std::shared_ptr<duckdb::DuckDB> database() const;
    // Reading a table that holds a topic's records (an expansion's target) needs KafkaRead
    // on the topic: `guard` names them (null: none). Set once, before sessions open.
    void set_table_guard(const table_guard* guard);

    struct impl;
    // The database and its sessions, for the rest of src/sql/duck (duck_internal.h).
    impl& internals() { return *_impl; }

  private:
    explicit engine(std::unique_ptr<impl> i);
    std::unique_ptr<impl> _impl;
};

class session {
  public:
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    // Runs one statement to its end. Errors: syntax, undefined_table (an unknown table or
    // topic), undefined_column, not_authorized (a topic the principal may not read; also
    // file, network, extension access and SET of a locked setting), invalid_parameter,
    // memory_exhausted, canceled, internal.
    outcome<result_set> query(std::string_view sql);
    // What the topic scans of the last statement read.
    const scan_stats& last_scan() const { return _last; }

    struct impl;

  private:
    friend class engine;
    session(std::unique_ptr<impl> i, const security::gate* gate, security::principal who);
    std::unique_ptr<impl> _impl;
    statement_context _ctx;
    scan_stats _last;
};

}  // namespace sluice::sql::duck

#pragma once

// The names users write for Sluice's tables, on DuckDB (docs/sql.md):
// - kafka_topics."T" (and T alone, when no other table has that name): the topic T's
//   table, kafka_topic('T') (duck/topic_scan.h), with the columns of the SQLite engine's
//   topic tables, the hidden ones included. A name is matched exactly first, then without regard to
//   case when only one topic matches so.
// - system.X: sluice_system('X'), the system table X (sql/system_tables.h), its rows read
//   afresh by every statement and filtered by what the session's principal may describe.
// Both resolve by DuckDB's replacement scans (tried when no table of that name exists),
// so nothing in DuckDB's catalog follows the topics as they come and go.
// Internal to src/sql/duck.

#include "duckdb.hpp"
#include "sql/duck/topic_scan.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
class security_store;
}  // namespace sluice::catalog
namespace sluice::sql {
class broker_state;
}

namespace sluice::sql::duck {

struct table_sources {
    log::log_manager* logs = nullptr;
    catalog::catalog* catalog = nullptr;  // null: no system tables, exact topic names only
    broker_state* state = nullptr;        // null: no group and transaction tables
    // Shared mode (sql::engine_options): the shared catalog's topics and policies, and
    // the partitions through the partition-log interface, in place of catalog's and
    // logs' (the system tables then read them as the SQLite engine's do).
    const catalog::topic_store* topics = nullptr;
    const catalog::security_store* security = nullptr;
    partition_source* partitions = nullptr;

    topic_source topic_scan() const {
        return partitions ? topic_source{logs, topics, partitions} : topic_source{logs};
    }
};

// The columns of every topic's table, kafka_topic's, in order (not the hidden ones).
// Defined in topic_scan.cc.
void topic_columns(duckdb::vector<duckdb::LogicalType>& types,
                   duckdb::vector<duckdb::string>& names);

// The columns of a system table's declaration, "CREATE TABLE x(topic TEXT, n INTEGER)", as
// sluice_system('x') gives them.
void system_columns(const std::string& declaration, duckdb::vector<duckdb::LogicalType>& types,
                    duckdb::vector<duckdb::string>& names);

// Adds the replacement scans to `config`, before the database opens. src's pointers must
// outlive the database.
void add_sluice_names(duckdb::DBConfig& config, const table_sources& src);

// Casts BLOB to VARCHAR as UTF-8 text (NULL when not UTF-8), implicitly: CAST(value AS
// TEXT) and the JSON functions (duck/pg_shape.h) read a topic's bytes as with SQLite.
// Casts VARCHAR to BLOB reading PostgreSQL's bytea hex form ('\x6b31') too, and adds
// PostgreSQL's convert_from(bytea, 'UTF8').
void register_blob_text_cast(duckdb::DatabaseInstance& db);

// Registers sluice_system('name') in db's system catalog.
void register_system_scan(duckdb::DatabaseInstance& db, const table_sources& src,
                          session_finder find);

}  // namespace sluice::sql::duck

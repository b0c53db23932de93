#pragma once

// kafka_topics."<topic>": one virtual table per topic over its partition logs
// (docs/sql.md). Columns: partition, offset, timestamp_producer, timestamp_broker, key,
// value, headers. A scan reads record batches straight from the segment files, up to
// each partition's high watermark as the statement first saw it, and uses the offset,
// time and append-time indexes to start and stop where the WHERE clause allows.

#include <sqlite3.h>

#include <cstdint>
#include <set>
#include <string>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
}

namespace sluice::sql {

struct topic_tables {
    topic_tables(log::log_manager& l, catalog::catalog& cat, statement_context& c)
        : logs(l), catalog(cat), ctx(c) {}

    // Registers the module on the connection.
    outcome<bool> install(sqlite3* db);
    // Creates and drops tables in kafka_topics so that they match the catalog's topics
    // that the session's principal may see (statement_context::may_see_topic), as
    // Metadata lists only what a client may describe; cheap when no topic, policy or
    // principal changed since the last call.
    outcome<bool> sync(sqlite3* db);

    log::log_manager& logs;
    catalog::catalog& catalog;
    statement_context& ctx;

  private:
    uint64_t _generation = 0;
    uint64_t _access_generation = 0;
    std::string _user;  // the principal the tables were chosen for
    std::set<std::string> _tables;
};

}  // namespace sluice::sql

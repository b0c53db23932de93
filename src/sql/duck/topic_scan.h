#pragma once

// kafka_topic('name'): a topic as a DuckDB table function over its partition logs
// (duck_engine.h says what it sees). Columns, in order:
//   partition INTEGER, offset BIGINT, timestamp_producer BIGINT, timestamp_broker BIGINT,
//   key BLOB, value BLOB, headers VARCHAR (a JSON array, as in src/sql);
// and hidden ones (not in SELECT *, read when named): key_text VARCHAR, value_text VARCHAR
// (key and value as text when they are valid UTF-8, NULL otherwise: invalid UTF-8 never
// becomes a VARCHAR), timestamp_producer_tz and timestamp_broker_tz TIMESTAMPTZ.
// Internal to src/sql/duck: it includes DuckDB's C++ headers' types by name only.
//
// Single-node mode reads the local logs (log::log_manager, partition_log and
// record_cursor); shared mode (docs/shared-mode.md, "SQL") the topics of the shared
// catalog and their partitions through the partition-log interface (sql/partition_source.h,
// log::store_cursor): the same pushdown of partition, offset and a lower bound on
// timestamp_producer, the same read_committed cut, timestamp_broker each batch's append
// time from the batch index (not pushed down there: DuckDB filters it row by row).

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "sql/statement_context.h"

namespace duckdb {
class DatabaseInstance;
class ClientContext;
}  // namespace duckdb
namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class topic_store;
}
namespace sluice::sql {
class partition_source;
}

namespace sluice::sql::duck {

// What a statement's scans read, added to from DuckDB's threads.
struct scan_counters {
    std::atomic<int64_t> partitions_scanned{0};
    std::atomic<int64_t> segments_read{0};
    std::atomic<int64_t> batches_read{0};
    std::atomic<int64_t> records_read{0};
    std::atomic<int64_t> bytes_read{0};
    scan_stats load() const {
        return {partitions_scanned.load(), segments_read.load(), batches_read.load(),
                records_read.load(), bytes_read.load()};
    }
};

// The session a statement runs on: its principal and cut (ctx, used under mu: DuckDB
// may start a scan on one of its threads), and its counters.
struct scan_session {
    statement_context* ctx = nullptr;
    std::mutex* mu = nullptr;
    scan_counters* counters = nullptr;
    // Where the check of duck/table_access.h adds the topics whose records the statement
    // being bound reads through tables (expansion targets); null: not kept.
    std::vector<std::string>* table_topics = nullptr;
};
// Finds the session of a DuckDB connection; ctx null when the connection is not a session's.
using session_finder = std::function<scan_session(duckdb::ClientContext&)>;

// Where kafka_topic finds a topic and its partitions.
struct topic_source {
    log::log_manager* logs = nullptr;  // single-node mode
    // Shared mode (both set): the shared catalog's topics, and their partitions.
    const catalog::topic_store* topics = nullptr;
    partition_source* partitions = nullptr;
    bool shared() const { return partitions != nullptr; }
};

// Registers kafka_topic in db's system catalog. src's pointers must outlive db.
void register_topic_scan(duckdb::DatabaseInstance& db, topic_source src, session_finder find);

}  // namespace sluice::sql::duck

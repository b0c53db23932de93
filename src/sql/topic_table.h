#pragma once

// kafka_topics."<topic>": one virtual table per topic over its partition logs
// (docs/sql.md). Columns: partition, offset, timestamp_producer, timestamp_broker, key,
// value, headers. A scan reads record batches straight from the segment files, up to
// each partition's high watermark as the statement first saw it, and uses the offset,
// time and append-time indexes to start and stop where the WHERE clause allows. In
// shared mode it reads the batches through the partition-log interface
// (log/store_cursor.h) over the offsets the WHERE clause allows; timestamp_broker is each
// batch's append time from the batch index there.

#include <sqlite3.h>

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class topic_store;
}

namespace sluice::sql {

class partition_source;

struct topic_tables {
    // Single-node mode: `logs` holds the partitions; shared mode: `partitions` gives them
    // (sql/partition_source.h) and `logs` is null.
    topic_tables(const catalog::topic_store& t, log::log_manager* l, partition_source* ps,
                 statement_context& c)
        : topics(t), logs(l), partitions(ps), ctx(c) {}

    // Registers the module on the connection.
    outcome<bool> install(sqlite3* db);
    // Creates and drops tables in kafka_topics so that they match the catalog's topics
    // that the session's principal may see (statement_context::may_see_topic), as
    // Metadata lists only what a client may describe; cheap when no topic, policy or
    // principal changed since the last call.
    // A topic whose table cannot be made is logged and left out: the other topics'
    // tables, and every other statement, keep working.
    outcome<bool> sync(sqlite3* db);
    // The name of `topic`'s table in kafka_topics (sql/topic_names.h); nullopt when the
    // session has none for it.
    std::optional<std::string> table_for(std::string_view topic) const;
    // Whether some table's name differs from its topic's, so that statements need
    // rewrite_topic_refs.
    bool any_escaped() const { return _escaped > 0; }

    const catalog::topic_store& topics;
    log::log_manager* logs;
    partition_source* partitions;
    statement_context& ctx;

  private:
    uint64_t _generation = 0;
    uint64_t _access_generation = 0;
    std::string _user;  // the principal the tables were chosen for
    std::map<std::string, std::string, std::less<>> _tables;  // topic -> table name
    std::set<std::string> _failed;  // topics whose table could not be made (logged once)
    size_t _escaped = 0;
};

}  // namespace sluice::sql

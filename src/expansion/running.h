#pragma once

// The service's own view of one expansion, shared by its files (service.cc,
// service_sources.cc); not for other users.

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "catalog/expansion_info.h"
#include "common/result.h"
#include "expansion/row_builder.h"
#include "expansion/schema.h"
#include "expansion/service.h"
#include "expansion/target_store.h"
#include "log/record_cursor.h"
#include "log/store_cursor.h"

namespace sluice::expansion {

// One expansion as the service runs it.
struct running {
    catalog::expansion_info info;
    std::string schema_name, table;  // of the target
    std::string key;                 // lower-case target, the maps' key
    expansion::schema fields;
    std::optional<expansion::layout> columns;
    std::unique_ptr<row_builder> rows;
    bool key_source = false;

    // The expander's (or a drop's) while it holds work_mu.
    std::mutex work_mu;
    std::unique_ptr<target_store> target;  // null until opened
    progress_map progress;                 // as committed
    log::record_cursor cursor;
    log::store_cursor shared_cursor;  // shared mode
    bool dropped = false;
    bool caught_up = false;  // catch_up() has run to its end
    // While a user's write holds the target's file: when to try again (steady ms), and
    // since when (for the log line once it writes again).
    int64_t busy_until = 0;
    int64_t busy_since = 0;

    // Guarded by service::_mu: what waiters and status see.
    progress_map published;
    std::string error;
    int64_t retry_at = 0;  // steady ms, while failed
    bool backfill_left = false;
    int64_t rows_written = 0;
};

// Steady-clock milliseconds.
int64_t steady_ms();
// The maps' key for a target as users name it: lower case, `main.` when unqualified.
std::string target_key(std::string_view target);
// Builds the running form of a definition: schema, layout, row builder.
result<std::shared_ptr<running>> prepare(const catalog::expansion_info& info);

// Where expansion stops reading a partition (service_sources.cc says why).
offset_t readable_end(const source_partition& part);
// What write_rows did: how many rows it inserted, and the offset below which it read every
// event: `to`, or less when the partition's reads ended early (a shared partition's read
// can trail the last stable offset that the broker's view of the partition already has).
// Progress moves to `end`, never past it.
struct written_rows {
    int64_t rows = 0;
    offset_t end = 0;
};
// Inserts the rows of partition p's events in [from, to) inside e's open transaction.
result<written_rows> write_rows(running& e, const source_partition& part, int32_t p, offset_t from,
                                offset_t to);

}  // namespace sluice::expansion

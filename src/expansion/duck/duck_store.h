#pragma once

// Internal to src/expansion/duck: what the backend (duck_target.cc: the file, its
// checkpoints and the moves out of the deltas) and the store of each target
// (duck_store.cc) share.

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "duckdb.hpp"
#include "expansion/duck/delta.h"
#include "expansion/target_store.h"

namespace sluice::expansion {

namespace d = ::duckdb;

// The DELETE of every progress row that a later row of its (target, partition) superseded,
// for one target (`target = '...'`) or all (`true`).
inline std::string prune_sql(const std::string& which_targets) {
    return fmt::format("DELETE FROM main.{0} AS o WHERE {1} AND seq < (SELECT max(seq) FROM "
                       "main.{0} AS l WHERE l.target = o.target AND l.\"partition\" = "
                       "o.\"partition\")",
                       progress_table, which_targets);
}

inline std::string message_of(const std::exception& e) {
    return d::ErrorData(e).Message();
}

// A statement's first value as an integer (row counts of DML, count(*)).
inline int64_t first_int(d::QueryResult& r) {
    auto chunk = r.Fetch();
    if (!chunk || chunk->size() == 0) return 0;
    return chunk->GetValue(0, 0).GetValue<int64_t>();
}

inline void check(d::QueryResult& r) {
    if (r.HasError()) r.ThrowError();
}

// What the targets of one file share with the backend's thread: the count of progress rows
// appended since the thread last pruned; a lock that keeps the thread's DELETEs (of
// superseded progress rows, of the rows it moved out of a delta) and a target's own
// DELETEs apart (DuckDB fails the second of two transactions that delete the same row);
// where transactions append (delta.h), and the deltas to move after a checkpoint: the
// quoted delta and target.
struct progress_rows {
    std::atomic<int64_t> unpruned{0};
    std::mutex deleting;
    delta_gate gate;
    std::mutex deltas_mu;
    std::map<std::string, std::string> deltas;  // delta -> target

    // Moves the rows of every delta into its target (after a checkpoint): the rows moved.
    int64_t move_deltas(d::Connection& con);
};

// Opens the store of one target of `db`: makes the table (with create), checks it, makes
// its delta and moves in the rows the delta kept. Errors as target_backend::open's.
result<std::unique_ptr<target_store>> open_store(d::DuckDB& db,
                                                 std::shared_ptr<progress_rows> shared,
                                                 const std::string& schema,
                                                 const std::string& table, const layout& l,
                                                 bool create);

}  // namespace sluice::expansion

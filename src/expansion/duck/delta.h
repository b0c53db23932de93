#pragma once

// A columnar target's delta (docs/formats/expansion-duckdb.md, "Delta tables"). While DuckDB
// checkpoints a table it holds every commit that appends to that table until it has written
// it: 0.5-1 s for a busy target, which the producers of its topic would wait out
// (docs/expansions.md, "Producer cost"). So while the backend's thread checkpoints the file,
// the expander commits each target's rows into a table of its own beside it,
// main."_sluice_delta:<schema>.<table>", with the same columns; once the checkpoint has
// ended, the thread moves them into the target in one transaction.
//
// Readers see no difference: every scan of a target that has a delta, in any statement of
// any connection (the broker's own included), is planned as the target's rows UNION ALL
// its delta's (a planner extension, add_delta_reads). Both tables are in one database, so
// one statement reads them at one snapshot: a row is in exactly one of them, and visible
// once its commit (which producers wait for) is done. A statement that deletes or updates
// a target's rows (only the broker's: users' writes are refused) scans the target alone.
//
// DuckDB's headers stay out of this one.

#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"
#include "expansion/target_store.h"

namespace duckdb {
class Connection;
class DBConfig;
}  // namespace duckdb

namespace sluice::expansion {

// The delta's table name (in schema main) of target schema.table: case-folded, as DuckDB's
// names are.
std::string delta_table(std::string_view schema, std::string_view table);

// Registers the reads of targets with their deltas in `config`, before the database opens
// (after the SQL engine's table check, sql/duck/table_access.h, so that it sees the tables
// a statement names).
void add_delta_reads(duckdb::DBConfig& config);

// Moves the rows of `delta` into `target` (both quoted references), in one transaction of
// `con`: the rows moved. Errors: io_error (DuckDB refused; nothing moved).
result<int64_t> move_delta(duckdb::Connection& con, const std::string& target,
                           const std::string& delta);

// Where the transactions of targets with a delta append, and the backend's thread's
// checkpoint between divert() and restore().
class delta_gate {
  public:
    enum class route { table, delta };

    // A transaction of a target with a delta begins: where its rows go.
    route enter();
    // ... has committed or rolled back.
    void leave(route r);

    // From now on transactions append to the deltas; returns once none that appends to a
    // target's table is open any more (so that the checkpoint holds no commit).
    void divert();
    // Back to the tables; returns once no transaction that appends to a delta is open (so
    // that the move sees every row the deltas got).
    void restore();

  private:
    std::mutex _mu;
    std::condition_variable _cv;
    bool _diverted = false;
    int _open[2] = {0, 0};  // by route
};

}  // namespace sluice::expansion

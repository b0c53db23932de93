#pragma once

// Where an expansion's rows and progress are stored: the one interface of the target
// storage (docs/expansions.md, "Storage"). Its implementation is DuckDB's: a columnar table
// in the SQL engine's database file under the data directory, with the progress in the
// same file (expansion/duck/duck_target.h, docs/formats/expansion-duckdb.md). Rows and
// progress are written in one transaction, so that after a crash at any moment a target
// holds exactly the events below its stored progress. (The SQLite engine's targets,
// docs/formats/expansion-progress.md, are only read once, when sql/duck_migration copies
// them into DuckDB.)
//
// A store is not thread-safe: one thread at a time (the expander's, or the one creating
// or dropping the expansion). A backend's open and count_rows are thread-safe.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/types.h"
#include "expansion/row_builder.h"
#include "expansion/schema.h"

namespace sluice::expansion {

// Where one partition stands. Live expansion reads on from `next`; a backfill expands
// [backfill_next, backfill_end) in the background, having started at backfill_start.
struct partition_progress {
    offset_t next = 0;
    offset_t backfill_start = 0;  // for reporting how far the backfill is
    offset_t backfill_next = 0;
    offset_t backfill_end = 0;
    bool backfilling() const { return backfill_next < backfill_end; }
    // The first offset the expansion writes a row for: the backfill's start, or where
    // live expansion starts.
    offset_t first_written() const { return std::min(backfill_start, next); }
    bool operator==(const partition_progress&) const = default;
};
using progress_map = std::map<int32_t, partition_progress>;

// The bookkeeping tables every store holding a target gets.
inline constexpr const char* progress_table = "_sluice_expansion_progress";
inline constexpr const char* meta_table = "_sluice_meta";
inline constexpr int progress_format_version = 1;
// A target's rows committed while its table was being checkpointed are in a table of
// this prefix (expansion/duck/delta.h): the broker's to write, its target's to read.
inline constexpr std::string_view delta_prefix = "_sluice_delta:";

// One target table and its progress.
class target_store {
  public:
    virtual ~target_store() = default;

    // The stored progress of this target.
    virtual result<progress_map> load_progress() = 0;

    // A write transaction: begin(), rows and progress, commit() (or rollback()).
    virtual result<void> begin() = 0;
    // Rows may be buffered; an error may surface at a later insert or at commit.
    // `source`: the bytes expanded (for _source); `key`: the record key (for _key).
    virtual result<void> insert(int32_t partition, offset_t offset, timestamp_ms broker_time,
                                const expanded_row& row, std::optional<bytes_view> source,
                                std::optional<bytes_view> key) = 0;
    virtual result<void> save_progress(int32_t partition, const partition_progress& p) = 0;
    virtual result<void> commit() = 0;
    virtual void rollback() = 0;
    // Whether a transaction is open.
    virtual bool in_txn() const = 0;
    // begin(), body, commit(); rolled back when either fails.
    result<void> in_transaction(const std::function<result<void>()>& body) {
        if (auto r = begin(); !r) return r;
        auto r = body();
        if (r) r = commit();
        if (!r && in_txn()) rollback();
        return r;
    }
    // Deletes the rows of a partition at or past `from` (events the log no longer has).
    virtual result<int64_t> delete_from(int32_t partition, offset_t from) = 0;
    // Replaces the whole stored progress (at creation), in one transaction that also
    // deletes each partition's rows at or past its first_written(): rows an earlier
    // expansion of the topic left in an existing table, which this one writes again.
    virtual result<void> reset_progress(const progress_map& p) = 0;
    // Removes the progress, and with drop_table the table itself, in one transaction.
    virtual result<void> remove(bool drop_table) = 0;

    virtual const std::string& name() const = 0;  // schema.table, for messages

    // Events a backfill transaction holds at most: small, so that live events, which
    // producers wait for, never queue long behind one; a store whose per-commit cost
    // dominates at that size asks for more.
    virtual int64_t backfill_rows_per_commit() const { return 5'000; }
};

// Opens the stores of one kind.
class target_backend {
  public:
    virtual ~target_backend() = default;
    // "duckdb".
    virtual const char* kind() const = 0;
    // With `create`, makes the schema and the table when absent, or checks that an
    // existing table is compatible with the layout. Errors: not_found (no table, without
    // create), invalid_argument (naming the column), io_error.
    virtual result<std::unique_ptr<target_store>> open(const std::string& schema,
                                                       const std::string& table, const layout& l,
                                                       bool create) = 0;
    // The rows of the table now, read without waiting for the expander.
    virtual result<int64_t> count_rows(const std::string& schema, const std::string& table) = 0;
};

// Makes the expansion error families known (shown at 0) before the first row.
void declare_metrics();
// Counts the errors of one expanded row in those families (every store calls it once
// per row written).
void count_expansion_errors(bool parse_error, int64_t type_errors);

}  // namespace sluice::expansion

#pragma once

// Columnar expansion targets in one DuckDB database file (issue 36; the format:
// docs/formats/expansion-duckdb.md). Each target is a DuckDB table, appended in data
// chunks; its progress is rows appended to the file's _sluice_expansion_progress (the
// latest per partition counts), written in the same DuckDB transaction as the rows, so a
// crash at any moment leaves exactly the events below the stored progress (DuckDB's WAL
// replays committed transactions when the file opens again). The commit path runs no
// DuckDB statement: the transaction is begun and committed through the connection's
// transaction context and the rows go in through DuckDB's internal appender (a statement
// is parsed, bound, planned and run each time: most of a small commit's CPU).
//
// DuckDB syncs its WAL at every commit and, left to itself, checkpoints inside the
// commit that pushes the WAL past checkpoint_threshold: that would sit in the producers'
// acknowledgement path. Here the automatic checkpoint is off and a thread of the backend
// runs CHECKPOINT, on a connection of its own, once the WAL passes checkpoint_wal_bytes.
// While it does, DuckDB would hold each commit into a table until it has written that
// table; the targets' commits go to their deltas meanwhile, and the thread moves those
// rows into the targets after (delta.h).
//
// DuckDB lets one process open a file: readers in the broker's process (the DuckDB SQL
// engine, tests, benchmarks) use database(). DuckDB's headers stay out of this one.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "expansion/target_store.h"

namespace duckdb {
class DuckDB;
}

namespace sluice::expansion {

struct duck_options {
    // The database file, e.g. <data_dir>/sql-duck/sluice.duckdb (made when absent).
    std::filesystem::path file;
    // An open database of that file to write into instead of opening it (`sluice serve
    // --sql-engine duckdb`: the SQL engine's, sql/duck/serving.h, so that its sessions read
    // the targets). Its configuration is the opener's, which must turn DuckDB's automatic
    // checkpoints off (checkpoint_threshold) and register add_delta_reads (delta.h);
    // memory_limit_bytes and threads then do not apply.
    std::shared_ptr<duckdb::DuckDB> database;
    uint64_t memory_limit_bytes = uint64_t{512} << 20;
    int threads = 1;
    // The WAL size past which the backend's thread checkpoints the file.
    uint64_t checkpoint_wal_bytes = uint64_t{64} << 20;
};

// A result read back, each value as DuckDB's text (NULL as nullopt).
using duck_rows = std::vector<std::vector<std::optional<std::string>>>;

class duck_targets final : public target_backend {
  public:
    // Opens (or makes) the file, checks its format version, starts the checkpoint
    // thread. Errors: io_error (DuckDB cannot open the file: in use by another process,
    // damaged), unsupported (a format or version this build does not know).
    static result<std::shared_ptr<duck_targets>> open(const duck_options& o);
    ~duck_targets() override;  // stops the thread; DuckDB checkpoints at close
    duck_targets(const duck_targets&) = delete;
    duck_targets& operator=(const duck_targets&) = delete;

    // The statements that make the file's bookkeeping tables when absent (_sluice_meta with
    // its format rows, _sluice_expansion_progress): open() runs them, and so does the copy of
    // the SQLite engine's tables (sql/duck_migration), inside its transaction.
    static std::string bookkeeping_sql();

    const char* kind() const override { return "duckdb"; }
    result<std::unique_ptr<target_store>> open(const std::string& schema, const std::string& table,
                                               const layout& l, bool create) override;
    result<int64_t> count_rows(const std::string& schema, const std::string& table) override;

    // Runs one read statement on a connection of its own (tests, benchmarks, operators'
    // tools). Errors: invalid_argument (DuckDB refused the statement), io_error.
    result<duck_rows> query(const std::string& sql);
    // Checkpoints now (what the thread does past checkpoint_wal_bytes).
    result<void> checkpoint();
    // Checkpoints run (by the thread or checkpoint()), and those DuckDB refused (tried
    // again 200 ms later); the time the done ones took; the rows committed into deltas
    // meanwhile and moved into their targets after (delta.h).
    struct checkpoint_counts {
        int64_t done = 0, refused = 0;
        double ms = 0, longest_ms = 0;
        int64_t moved_rows = 0;
    };
    checkpoint_counts checkpoints() const;
    // The database, for connections of readers in this process.
    duckdb::DuckDB& database();

    struct impl;

  private:
    explicit duck_targets(std::unique_ptr<impl> i);
    std::unique_ptr<impl> _impl;
};

}  // namespace sluice::expansion

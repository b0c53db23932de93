#pragma once

// The broker's DuckDB database, opened on first need (docs/sql.md, "The engine"; issue 36).
// Opening it costs a broker about 300 ms of start and 28 MiB of resident memory
// (docs/design/sql-engine.md), which a broker that never queries and never expands
// should not pay. So `sluice serve` opens it:
// - at start when it has a SQL listener (--pg, --http: their first query must not wait);
// - else at the first need of an expansion's target (an expansion of the catalog, which
//   catches up at start, or one created later: in shared mode, by another broker);
// - never otherwise.
// Opening runs the one-time copy of the removed SQLite engine's tables first
// (sql/duck_migration), then opens the database file and the expansions' targets in it.
//
// Thread-safe: the expander thread and the start-up may need it at once; it opens once.
// A failure is logged and answered to whoever needed it (an expansion then fails and is
// retried); the next need tries again.

#include <filesystem>
#include <memory>
#include <mutex>
#include <string_view>

#include "expansion/target_store.h"
#include "sql/engine.h"
#include "sql/engine_options.h"

namespace sluice::sql::duck {
class engine;
}

namespace sluice::app {

class duck_on_demand : public std::enable_shared_from_this<duck_on_demand> {
  public:
    // eo: the engine's options (its data directory, logs, catalogs, bounds); exports: where
    // COPY (query) TO may write (--sql-export-dir; empty: nowhere).
    duck_on_demand(const sql::engine_options& eo, std::filesystem::path exports);
    ~duck_on_demand();
    duck_on_demand(const duck_on_demand&) = delete;
    duck_on_demand& operator=(const duck_on_demand&) = delete;

    // The database, opened now unless it is already; `why` names the need in the log line.
    // Errors: internal (the copy from SQLite, DuckDB or the targets' file refused: the
    // message says which).
    sql::outcome<std::shared_ptr<sql::duck::engine>> database(std::string_view why);
    // The expansions' targets in that database, opened now unless they are already.
    // Errors: io_error (the message as database() gives it).
    result<std::shared_ptr<expansion::target_backend>> open_targets();
    // The same, as a backend that calls open_targets() at its first use (what the
    // expansions are given).
    std::shared_ptr<expansion::target_backend> targets();
    bool is_open() const;

  private:
    struct opened;
    sql::outcome<bool> open_locked(std::string_view why);  // _mu held

    const sql::engine_options _eo;
    const std::filesystem::path _exports;
    mutable std::mutex _mu;
    std::unique_ptr<opened> _open;  // guarded by _mu; set once, then never reset
};

}  // namespace sluice::app

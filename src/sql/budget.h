#pragma once

// What users' SQL may take from the process: memory from SQLite's allocator and bytes
// of temporary files, counted per session and in total over every session, and refused
// beyond the bounds (docs/operations.md#sql, docs/sql.md#limits-and-cancellation).
//
// SQLite's own heap limits (sqlite3_hard_heap_limit64) are process-wide: they would
// count the catalog's and the expansions' connections too, and let users' statements
// starve them; they also need SQLITE_CONFIG_MEMSTATUS, which the broker turns off (a
// global mutex on every allocation). Instead, the broker installs its own allocator
// (sqlite3_config(SQLITE_CONFIG_MALLOC), over malloc): each block carries a small
// header naming the account it was charged to. A user session's SQLite calls run with
// its account current on their thread (budget_scope); the catalog, the expansions and
// any other connection allocate with no account current, are never charged and never
// refused. Temporary files of users' sessions go through a VFS of ours (temp_files.cc)
// that puts them in <data_dir>/tmp and charges their size the same way.
//
// A refusal is SQLITE_NOMEM (memory) or SQLITE_FULL (temporary files) inside SQLite;
// the account keeps which bound refused, for the statement's error.

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "security/authorizer.h"
#include "sql/engine.h"

namespace sluice::sql {

// The bounds, set once at start-up (serve flags --sql-session-memory, --sql-memory,
// --sql-max-value-bytes, --sql-session-temp-bytes, --sql-temp-bytes, --sql-threads).
struct resource_bounds {
    uint64_t session_memory = uint64_t{256} << 20;  // one session's statements
    uint64_t total_memory = uint64_t{1} << 30;      // every user session together
    // SQLITE_LIMIT_LENGTH: the longest string or blob (a value, a row being built). A row
    // counts four times against the session's memory (SQLite's, row(), the wire's copy
    // twice as large): 32 MiB leaves room for a value that long. Kafka's records are
    // 1 MiB by default (max.message.bytes); larger ones need this raised to be read.
    int64_t max_value_bytes = int64_t{32} << 20;
    uint64_t session_temp = uint64_t{1} << 30;  // one session's temporary files
    uint64_t total_temp = uint64_t{4} << 30;    // every user session's together
    // The DuckDB engine's worker threads, every statement's together (DuckDB's `threads`);
    // 0: one per core. SQLite runs a statement on its session's thread.
    uint32_t threads = 0;
};

// Which bound refused the last allocation or temporary write of an account. value_length:
// one block longer than a value may be (the DuckDB engine's check of a value being
// computed, duck/session_memory.h; SQLite checks its length limit itself).
enum class budget_refusal {
    none,
    session_memory,
    total_memory,
    session_temp,
    total_temp,
    value_length
};

// One user session's share. Accounts are pooled and never freed: a block freed after its
// session ended (SQLite frees everything of a connection when it closes, so only a block
// another connection allocated during the session's statement) finds its account by
// pointer and, by generation, knows it no longer belongs to it.
class budget_account {
  public:
    // An account for a new session, with the bounds given to install_budget().
    static budget_account* acquire();
    // The session has closed its connection: the account goes back to the pool.
    static void release(budget_account* a);

    uint64_t memory_used() const { return _memory.load(std::memory_order_relaxed); }
    uint64_t temp_used() const { return _temp.load(std::memory_order_relaxed); }
    budget_refusal refusal() const { return _refusal.load(std::memory_order_relaxed); }
    uint64_t refused_bytes() const { return _refused_bytes.load(std::memory_order_relaxed); }
    // Forgets the last refusal: a statement starts.
    void clear_refusal() { _refusal.store(budget_refusal::none, std::memory_order_relaxed); }
    // Records a refusal made outside the account's own checks (value_length).
    bool refuse(budget_refusal why, uint64_t n);

    // --- for the allocator and the VFS ---
    bool charge_memory(uint64_t n);
    void uncharge_memory(uint64_t n, uint32_t generation);
    bool charge_temp(uint64_t n);
    void uncharge_temp(uint64_t n, uint32_t generation);
    uint32_t generation() const { return _generation.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> _memory{0};
    std::atomic<uint64_t> _temp{0};
    std::atomic<uint32_t> _generation{0};
    // Atomic: DuckDB charges a session's statement on its worker threads too.
    std::atomic<budget_refusal> _refusal{budget_refusal::none};
    std::atomic<uint64_t> _refused_bytes{0};
    budget_account* _next_free = nullptr;
};

// While alive, `a` (null: nobody) is the account in `slot`, the thread's current account
// of one allocator (a thread_local of its). Nests: the previous account is current again
// afterwards.
class account_scope {
  public:
    account_scope(budget_account*& slot, budget_account* a) : _slot(slot), _previous(slot) {
        slot = a;
    }
    ~account_scope() { _slot = _previous; }
    account_scope(const account_scope&) = delete;
    account_scope& operator=(const account_scope&) = delete;

  private:
    budget_account*& _slot;
    budget_account* _previous;
};

// While alive, SQLite's allocations and temporary files on this thread are charged to
// `a` (null: to nobody).
class budget_scope : public account_scope {
  public:
    explicit budget_scope(budget_account* a);
};
budget_account* current_budget_account();

// Installs the allocator. Must run before SQLite's first use in the process (sqlite3_
// config refuses later): false when it is too late, and then nothing is counted.
bool install_budget_allocator();
bool budget_allocator_installed();
// Sets the bounds. Callable again (tests); accounts acquired later get the new ones.
void set_resource_bounds(const resource_bounds& b);
const resource_bounds& current_resource_bounds();
// Bytes charged to users' sessions now, in total.
uint64_t budget_total_memory();
uint64_t budget_total_temp();

// The VFS users' sessions open their databases with: temporary files (sorts, temporary
// tables, statement journals) in `temp_dir`, created and emptied here, each unlinked as
// soon as it is open; sizes charged to the current account. Registers it on the first
// call. Returns the VFS name for sqlite3_open_v2, or an error message.
std::string install_temp_vfs(const std::filesystem::path& temp_dir, std::string* error);

// "256 MiB", "1.5 GiB", "1000 bytes": for messages naming a bound.
std::string format_bytes(uint64_t n);

// The error of a refusal by one of the bounds, in the words of both engines (nullopt for
// none): 53200 for memory, 53400 for temporary files, 54000 for a value's length.
std::optional<query_error> refusal_error(budget_refusal why);
// Logs a statement refused by a bound, once a second at most (a client can hit a bound in
// a loop).
void log_refusal(const query_error& e, const security::principal& who);

}  // namespace sluice::sql

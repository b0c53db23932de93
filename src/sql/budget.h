#pragma once

// What users' SQL may take from the process: memory counted per session and in total
// over every session, refused beyond the bounds (docs/operations.md#sql,
// docs/sql.md#limits-and-cancellation). DuckDB charges a session's blocks to its account
// (duck/session_memory.h); the catalog's and the expansions' memory is never charged and
// never refused. DuckDB bounds the temporary files of every session together itself
// (its max_temp_directory_size).
//
// The account keeps which bound refused, for the statement's error.

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "security/authorizer.h"
#include "sql/engine.h"

namespace sluice::sql {

// The bounds, set once at start-up (serve flags --sql-session-memory, --sql-memory,
// --sql-max-value-bytes, --sql-temp-bytes, --sql-threads).
struct resource_bounds {
    uint64_t session_memory = uint64_t{256} << 20;  // one session's statements
    uint64_t total_memory = uint64_t{1} << 30;      // every user session together
    // The longest string or blob (a value, a row being built). A row counts several times
    // against the session's memory (the engine's, row(), the wire's copy twice as large):
    // 32 MiB leaves room for a value that long. Kafka's records are 1 MiB by default
    // (max.message.bytes); larger ones need this raised to be read.
    int64_t max_value_bytes = int64_t{32} << 20;
    uint64_t total_temp = uint64_t{4} << 30;  // every user session's temporary files
    // DuckDB's worker threads, every statement's together (DuckDB's `threads`); 0: one per
    // core.
    uint32_t threads = 0;
};

// Which bound refused the last allocation of an account. value_length: one block longer
// than a value may be (the check of a value being computed, duck/session_memory.h).
// total_temp: DuckDB's temporary files, which it refuses itself (the error only).
enum class budget_refusal { none, session_memory, total_memory, total_temp, value_length };

// One user session's share. Accounts are pooled and never freed: a block freed after its
// session ended finds its account by pointer and, by generation, knows it no longer
// belongs to it.
class budget_account {
  public:
    // An account for a new session, with the bounds of set_resource_bounds().
    static budget_account* acquire();
    // The session has closed its connection: the account goes back to the pool.
    static void release(budget_account* a);

    uint64_t memory_used() const { return _memory.load(std::memory_order_relaxed); }
    budget_refusal refusal() const { return _refusal.load(std::memory_order_relaxed); }
    uint64_t refused_bytes() const { return _refused_bytes.load(std::memory_order_relaxed); }
    // Forgets the last refusal: a statement starts.
    void clear_refusal() { _refusal.store(budget_refusal::none, std::memory_order_relaxed); }
    // Records a refusal made outside the account's own checks (value_length).
    bool refuse(budget_refusal why, uint64_t n);

    // --- for the allocator (duck/session_memory.h) ---
    bool charge_memory(uint64_t n);
    void uncharge_memory(uint64_t n, uint32_t generation);
    uint32_t generation() const { return _generation.load(std::memory_order_relaxed); }

  private:
    std::atomic<uint64_t> _memory{0};
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

// Sets the bounds. Callable again (tests); accounts acquired later get the new ones.
void set_resource_bounds(const resource_bounds& b);
const resource_bounds& current_resource_bounds();
// Bytes charged to users' sessions now, in total.
uint64_t budget_total_memory();

// "256 MiB", "1.5 GiB", "1000 bytes": for messages naming a bound.
std::string format_bytes(uint64_t n);

// The error of a refusal by one of the bounds (nullopt for none): 53200 for memory, 53400 for temporary files, 54000 for a value's length.
std::optional<query_error> refusal_error(budget_refusal why);
// Logs a statement refused by a bound, once a second at most (a client can hit a bound in
// a loop).
void log_refusal(const query_error& e, const security::principal& who);

}  // namespace sluice::sql

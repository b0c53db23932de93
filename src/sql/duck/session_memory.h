#pragma once

// What a DuckDB session's statements hold outside DuckDB's buffer pool, charged to the
// session's budget_account (sql/budget.h) and refused past --sql-session-memory,
// --sql-memory and, for one value, --sql-max-value-bytes (docs/design/sql-engine.md,
// "Memory on DuckDB"). Internal to src/sql/duck.
//
// DuckDB allocates through two allocators. The database's (DBConfig::allocator) serves
// its buffer pool: blocks that sorts, joins and aggregates spill to temp files, and the
// reservations operators make against memory_limit; that memory is memory_limit's
// (--sql-memory), shared by every session, and never charged here, so a sort or a join
// larger than a session's bound spills instead of failing. Everything else goes through
// DuckDB's default allocator (Allocator::DefaultAllocator): the vectors a statement
// computes and their strings (repeat(), lpad(), ||, a topic's values), which DuckDB
// cannot spill and memory_limit does not count. install_memory_accounting() puts an
// allocator of ours in its place, over DuckDB's own functions: a block of at least
// charged_block_bytes allocated while a session's account is current on the thread is
// charged to it, and refused (DuckDB then throws its OutOfMemoryException, which fails
// the statement) when it would pass a bound.
//
// The account is current on a thread only
// - while DuckDB runs one of the session's executor tasks (ClientContextState::OnTaskStart
//   and OnTaskStop, on DuckDB's worker threads and the session's own), unless the
//   statement is transaction control: COMMIT runs inside a task, and no allocation of a
//   commit, its WAL write or a checkpoint is ever refused;
// - while the session prepares a statement (memory_scope): DuckDB folds constant
//   expressions then (`repeat('x', 999999999)` would be computed while planning); a block
//   over 1 MiB is refused there, so that such a constant is computed when the statement
//   runs instead, charged to its tasks (a folded constant is a Value the plan keeps, in
//   memory no allocator of DuckDB's sees).
// An autocommit statement commits after its last task, with no account current. Blocks
// smaller than charged_block_bytes are neither charged nor tracked: a vector's validity
// mask, a string heap's first chunks; a statement's large memory comes in large blocks
// (string heaps grow by doubling, a long string has a block of its own).

#include "sql/budget.h"
#include "sql/duck/duck_internal.h"

namespace duckdb {
class ClientContextState;
}

namespace sluice::sql::duck {

inline constexpr uint64_t charged_block_bytes = 4096;
// The database allocator's blocks smaller than this are not charged (see the .cc).
inline constexpr uint64_t stack_checked_block_bytes = 256 << 10;

// Once per process, before the first database opens (later calls do nothing).
void install_memory_accounting();
// For bench/duck_memory_bench.cc alone, which measures what the accounting costs against
// none: called before the process's first database opens, it leaves DuckDB's allocators
// as they are and makes no account current, so that no bound of memory holds. The broker
// never calls it.
void leave_memory_unaccounted();
// The allocator for a database's DBConfig::allocator: its string heaps are charged (see
// above), its buffer pool's blocks and reservations never.
d::unique_ptr<d::Allocator> database_allocator_for_sessions();
// Once the database is open: its buffer pool, whose reservations a refusal gives back.
void attach_pool(d::DatabaseInstance& db);

// Charges `con`'s tasks to `a` while enabled (the account must outlive the connection).
class task_charging {
  public:
    task_charging(d::Connection& con, budget_account* a);
    // Off while a statement of transaction control runs (see above).
    void enable(bool on);

  private:
    d::shared_ptr<d::ClientContextState> _state;
};

// While alive, DuckDB's allocations on this thread are charged to `a`.
class memory_scope : public account_scope {
  public:
    explicit memory_scope(budget_account* a);
};

}  // namespace sluice::sql::duck

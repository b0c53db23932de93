#include "sql/duck/session_memory.h"

#include <dlfcn.h>
#include <execinfo.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string_view>
#include <unordered_map>

#include "duckdb/main/client_context_state.hpp"
#include "duckdb/storage/buffer/buffer_pool.hpp"
#include "duckdb/storage/buffer_manager.hpp"

namespace sluice::sql::duck {

namespace {

bool g_unaccounted = false;  // leave_memory_unaccounted()
thread_local budget_account* t_scope = nullptr;  // memory_scope's
thread_local budget_account* t_task = nullptr;   // the running task's session

budget_account* current_account() {
    return t_task ? t_task : t_scope;
}

// The largest block one value may need while computed. DuckDB's string heap gives a
// string longer than its chunks a block of its own, rounded up to a power of two, and
// grows its shared chunks by doubling up to 16 MiB (ArenaAllocator's largest): so a block
// above the bound rounded up means a value past it, and a block up to 16 MiB may be a
// chunk of many short values. A bound under 16 MiB is checked exactly when a value is
// returned (duck/serving_session.cc), here from 16 MiB on.
uint64_t value_block_cap() {
    constexpr uint64_t arena_chunk_max = uint64_t{1} << 24;
    const auto bound = static_cast<uint64_t>(current_resource_bounds().max_value_bytes);
    return std::max(std::bit_ceil(bound), arena_chunk_max);
}

// The charged blocks, by address: the allocator is told a block's size when it is freed,
// not whose it was. Sharded by address; never freed (DuckDB may free blocks during exit).
struct charge {
    budget_account* account;
    uint32_t generation;
};
struct shard {
    std::mutex mu;
    std::unordered_map<const void*, charge> blocks;
};
constexpr size_t shard_count = 64;
std::array<shard, shard_count>& shards() {
    static auto* s = new std::array<shard, shard_count>();
    return *s;
}
shard& shard_of(const void* p) {
    const auto a = reinterpret_cast<uintptr_t>(p);
    return shards()[((a >> 12) ^ (a >> 20)) % shard_count];  // large blocks are page-aligned
}

void track(const void* p, budget_account* a) {
    auto& s = shard_of(p);
    std::lock_guard lk(s.mu);
    s.blocks[p] = {a, a->generation()};
}

// Forgets a block before its memory goes back (another thread may get its address next).
std::optional<charge> untrack(const void* p) {
    auto& s = shard_of(p);
    std::lock_guard lk(s.mu);
    const auto it = s.blocks.find(p);
    if (it == s.blocks.end()) return std::nullopt;
    const charge c = it->second;
    s.blocks.erase(it);
    return c;
}

bool charge_block(budget_account* a, uint64_t n) {
    // While planning (memory_scope), DuckDB folds a constant expression into a Value that
    // the plan keeps, outside every allocator of DuckDB's: a large one is refused there,
    // unrecorded, so that DuckDB leaves it unfolded and computes it when the statement
    // runs, charged then (ExpressionExecutor::TryEvaluateScalar catches the refusal).
    constexpr uint64_t folded_max = uint64_t{1} << 20;
    if (!t_task && n > folded_max) return false;
    if (n > value_block_cap()) return a->refuse(budget_refusal::value_length, n);
    return a->charge_memory(n);
}

// Whether a block the database's allocator is asked for is an arena's (an ArenaChunk: the
// strings DuckDB's expressions compute, an aggregate's states, directly or through the
// buffer allocator, which counts them in memory_limit too) rather than the buffer pool's
// (FileBuffer: blocks that spill), a hash table's or a vector cache's. DuckDB tells its
// allocator no more than a size, so the caller is read from the stack: the first frame in
// DuckDB's library outside Allocator and the buffer allocator, whose function's start
// dladdr gives (ArenaChunk's constructor is exported), cached by return address.
class arena_caller {
  public:
    enum class kind { skip, arena, other, pool };
    // arena, pooled_arena (through the buffer allocator) or other.
    struct found {
        bool arena = false;
        bool pooled = false;
    };
    found check() {
        void* frames[10];
        const int n = backtrace(frames, 10);
        found f;
        for (int i = 1; i < n; ++i) {
            const auto k = kind_of(frames[i]);
            if (k == kind::pool) f.pooled = true;
            if (k == kind::arena || k == kind::other) {
                f.arena = k == kind::arena;
                return f;
            }
        }
        return {};
    }

  private:
    kind kind_of(void* ret) {
        {
            std::shared_lock lk(_mu);
            if (const auto it = _seen.find(ret); it != _seen.end()) return it->second;
        }
        Dl_info info{};
        kind k = kind::skip;  // our own frames, Allocator's and the buffer allocator's
        if (dladdr(ret, &info) && info.dli_fbase == library() && info.dli_saddr) {
            const std::string_view name = info.dli_sname ? info.dli_sname : "";
            if (info.dli_saddr == arena_ctor())
                k = kind::arena;
            else if (name.starts_with("_ZN6duckdb21StandardBufferManager") &&
                     name.find("BufferAllocator") != std::string_view::npos)
                k = kind::pool;
            else if (!name.starts_with("_ZN6duckdb9Allocator"))
                k = kind::other;
        }
        std::unique_lock lk(_mu);
        _seen.emplace(ret, k);
        return k;
    }
    static void* arena_ctor() {
        static void* const a = dlsym(RTLD_DEFAULT, "_ZN6duckdb10ArenaChunkC1ERNS_9AllocatorEm");
        return a;
    }
    static void* library() {
        static void* const base = [] {
            Dl_info info{};
            return arena_ctor() && dladdr(arena_ctor(), &info) ? info.dli_fbase : nullptr;
        }();
        return base;
    }
    std::shared_mutex _mu;
    std::unordered_map<void*, kind> _seen;
};

arena_caller& arena_callers() {
    static auto* c = new arena_caller();
    return *c;
}

// The database allocator's private data marks it: only its arenas' blocks are charged.
struct database_allocator final : d::PrivateAllocatorData {
    std::atomic<d::BufferPool*> pool{nullptr};  // set once the database is open
};

// Who a block is charged to (null: nobody), and the buffer pool whose reservation of it a
// refusal must give back: DuckDB's buffer allocator reserves a block in the pool before
// it asks the database's allocator, and does not give the reservation back when that
// fails (StandardBufferManager::BufferAllocatorAllocate).
struct charge_target {
    budget_account* account = nullptr;
    d::BufferPool* reserved_in = nullptr;
};

charge_target charged_to(d::PrivateAllocatorData* p, d::idx_t n) {
    if (n < charged_block_bytes) return {};
    budget_account* a = current_account();
    auto* db = a ? dynamic_cast<database_allocator*>(p) : nullptr;
    if (!db) return {a};
    // Reading the stack costs microseconds: only for the database allocator's large blocks
    // (an arena's chunks double, so its large memory comes in large chunks).
    if (n < stack_checked_block_bytes) return {};
    const auto f = arena_callers().check();
    if (!f.arena) return {};
    if (!f.pooled) return {a};
    auto* pool = db->pool.load(std::memory_order_acquire);
    return pool ? charge_target{a, pool} : charge_target{};
}

// Charges a block, or refuses it and gives back its reservation in the pool.
bool charge_or_give_back(const charge_target& t, uint64_t n, uint64_t reserved) {
    if (!t.account || charge_block(t.account, n)) return true;
    if (t.reserved_in && reserved)
        t.reserved_in->UpdateUsedMemory(d::MemoryTag::ALLOCATOR, -static_cast<int64_t>(reserved));
    return false;
}

d::data_ptr_t charged_allocate(d::PrivateAllocatorData* p, d::idx_t n) {
    const auto t = charged_to(p, n);
    budget_account* a = t.account;
    if (!charge_or_give_back(t, n, n)) return nullptr;  // DuckDB throws OutOfMemoryException
    auto* r = d::Allocator::DefaultAllocate(p, n);
    if (a && !r) a->uncharge_memory(n, a->generation());
    if (a && r) track(r, a);
    return r;
}

void charged_free(d::PrivateAllocatorData* p, d::data_ptr_t ptr, d::idx_t n) {
    if (ptr && n >= charged_block_bytes)
        if (const auto c = untrack(ptr)) c->account->uncharge_memory(n, c->generation);
    d::Allocator::DefaultFree(p, ptr, n);
}

d::data_ptr_t charged_reallocate(d::PrivateAllocatorData* p, d::data_ptr_t ptr, d::idx_t old_n,
                                 d::idx_t n) {
    const auto t = charged_to(p, n);
    budget_account* a = t.account;
    if (!charge_or_give_back(t, n, n > old_n ? n - old_n : 0)) return nullptr;
    const auto old = ptr && old_n >= charged_block_bytes ? untrack(ptr) : std::nullopt;
    auto* r = d::Allocator::DefaultReallocate(p, ptr, old_n, n);
    if (!r) {  // the old block stays, still charged
        if (old) {
            auto& s = shard_of(ptr);
            std::lock_guard lk(s.mu);
            s.blocks[ptr] = *old;
        }
        if (a) a->uncharge_memory(n, a->generation());
        return nullptr;
    }
    if (old) old->account->uncharge_memory(old_n, old->generation);
    if (a) track(r, a);
    return r;
}

// Makes the session's account current while DuckDB runs one of its tasks.
struct task_state final : d::ClientContextState {
    explicit task_state(budget_account* a) : account(a) {}
    void OnTaskStart(d::ClientContext&) override {
        if (on.load(std::memory_order_relaxed)) t_task = account;
    }
    void OnTaskStop(d::ClientContext&) override { t_task = nullptr; }

    budget_account* account;
    std::atomic<bool> on{true};
};

}  // namespace

void leave_memory_unaccounted() {
    g_unaccounted = true;
}

void install_memory_accounting() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (g_unaccounted) return;
        // The previous default allocator stays alive: objects made before may refer to it.
        // Blocks it allocated are freed through the same functions of DuckDB's.
        static auto* previous = new d::shared_ptr<d::Allocator>(d::Allocator::DefaultAllocatorReference());
        (void)previous;
        d::Allocator::DefaultAllocatorReference() = d::make_shared_ptr<d::Allocator>(
            charged_allocate, charged_free, charged_reallocate,
            d::make_uniq<d::PrivateAllocatorData>());
    });
}

d::unique_ptr<d::Allocator> database_allocator_for_sessions() {
    if (g_unaccounted) return d::make_uniq<d::Allocator>();  // DuckDB's own
    return d::make_uniq<d::Allocator>(charged_allocate, charged_free, charged_reallocate,
                                      d::make_uniq<database_allocator>());
}

void attach_pool(d::DatabaseInstance& db) {
    if (auto* ours = dynamic_cast<database_allocator*>(d::Allocator::Get(db).GetPrivateData()))
        ours->pool.store(&d::BufferManager::GetBufferManager(db).GetBufferPool(),
                         std::memory_order_release);
}

task_charging::task_charging(d::Connection& con, budget_account* a)
    : _state(d::make_shared_ptr<task_state>(a)) {
    if (!g_unaccounted) con.context->registered_state->Insert("sluice_session_memory", _state);
}

void task_charging::enable(bool on) {
    static_cast<task_state&>(*_state).on.store(on, std::memory_order_relaxed);
}

memory_scope::memory_scope(budget_account* a) : _previous(t_scope) {
    t_scope = a;
}

memory_scope::~memory_scope() {
    t_scope = _previous;
}

}  // namespace sluice::sql::duck

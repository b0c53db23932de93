#include "sql/duck/session_memory.h"

#include <dlfcn.h>
#include <unwind.h>

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <mutex>
#include <optional>
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
// dladdr gives (ArenaChunk's constructor is exported).
//
// Cost (bench/duck_memory_bench.cc): the stack is unwound only as far as that frame (the
// fourth to sixth), and a return address is looked up first in a small table of the
// thread's, then in the process's map, where dladdr fills it once per call site: a lock
// shared by every thread was taken for each frame of each block before.
enum class frame_kind : uint8_t { unknown, skip, arena, other, pool };

void* arena_ctor() {
    static void* const a = dlsym(RTLD_DEFAULT, "_ZN6duckdb10ArenaChunkC1ERNS_9AllocatorEm");
    return a;
}

void* duckdb_library() {
    static void* const base = [] {
        Dl_info info{};
        return arena_ctor() && dladdr(arena_ctor(), &info) ? info.dli_fbase : nullptr;
    }();
    return base;
}

// What the function holding `pc` (a return address) is, by its symbol: our own frames,
// Allocator's and the buffer allocator's are passed over.
frame_kind classify(uintptr_t pc) {
    Dl_info info{};
    // pc - 1: the call itself, inside its function even when the call is the function's last.
    if (!dladdr(reinterpret_cast<void*>(pc - 1), &info) || info.dli_fbase != duckdb_library() ||
        !info.dli_saddr)
        return frame_kind::skip;
    const std::string_view name = info.dli_sname ? info.dli_sname : "";
    if (info.dli_saddr == arena_ctor()) return frame_kind::arena;
    if (name.starts_with("_ZN6duckdb21StandardBufferManager") &&
        name.find("BufferAllocator") != std::string_view::npos)
        return frame_kind::pool;
    return name.starts_with("_ZN6duckdb9Allocator") ? frame_kind::skip : frame_kind::other;
}

// The process's classifications, by return address; never freed (DuckDB allocates during
// exit). Filled once per call site.
frame_kind shared_kind_of(uintptr_t pc) {
    static auto* mu = new std::mutex();
    static auto* seen = new std::unordered_map<uintptr_t, frame_kind>();
    std::lock_guard lk(*mu);
    auto [it, added] = seen->try_emplace(pc, frame_kind::unknown);
    if (added) it->second = classify(pc);
    return it->second;
}

// The thread's last classifications, one per slot (a miss only costs the map's lock).
struct seen_pc {
    uintptr_t pc = 0;
    frame_kind kind = frame_kind::unknown;
};
thread_local std::array<seen_pc, 64> t_seen;

frame_kind kind_of(uintptr_t pc) {
    auto& slot = t_seen[(pc ^ (pc >> 6)) % t_seen.size()];
    if (slot.pc != pc) slot = {pc, shared_kind_of(pc)};
    return slot.kind;
}

struct caller_walk {
    bool arena = false;
    bool pooled = false;  // through the buffer allocator
    int frames = 0;
};

_Unwind_Reason_Code visit_frame(_Unwind_Context* ctx, void* arg) {
    auto& w = *static_cast<caller_walk*>(arg);
    constexpr int max_frames = 10;  // the deciding frame is the fourth to sixth
    const uintptr_t pc = _Unwind_GetIP(ctx);
    if (pc == 0 || ++w.frames > max_frames) return _URC_END_OF_STACK;
    switch (kind_of(pc)) {
        case frame_kind::pool:
            w.pooled = true;
            return _URC_NO_REASON;
        case frame_kind::arena:
            w.arena = true;
            return _URC_END_OF_STACK;  // decided: stops the walk
        case frame_kind::other:
            return _URC_END_OF_STACK;
        default:
            return _URC_NO_REASON;
    }
}

caller_walk arena_caller() {
    caller_walk w;
    _Unwind_Backtrace(visit_frame, &w);
    return w;
}

// The database allocator's private data.
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

// DuckDB's default allocator: every block of charged_block_bytes or more.
charge_target default_target(d::PrivateAllocatorData*, d::idx_t n) {
    return {n >= charged_block_bytes ? current_account() : nullptr};
}

// The database's allocator (its private data a database_allocator): arenas' blocks only.
charge_target database_target(d::PrivateAllocatorData* p, d::idx_t n) {
    // Reading the stack costs a microsecond or so: only for large blocks (an arena's chunks
    // double, so its large memory comes in large chunks).
    if (n < stack_checked_block_bytes) return {};
    budget_account* a = current_account();
    if (!a) return {};
    const auto caller = arena_caller();
    if (!caller.arena) return {};
    if (!caller.pooled) return {a};
    auto* pool = static_cast<database_allocator*>(p)->pool.load(std::memory_order_acquire);
    return pool ? charge_target{a, pool} : charge_target{};
}
using target_fn = charge_target (*)(d::PrivateAllocatorData*, d::idx_t);

// Charges a block, or refuses it and gives back its reservation in the pool.
bool charge_or_give_back(const charge_target& t, uint64_t n, uint64_t reserved) {
    if (!t.account || charge_block(t.account, n)) return true;
    if (t.reserved_in && reserved)
        t.reserved_in->UpdateUsedMemory(d::MemoryTag::ALLOCATOR, -static_cast<int64_t>(reserved));
    return false;
}

template <target_fn target>
d::data_ptr_t charged_allocate(d::PrivateAllocatorData* p, d::idx_t n) {
    const auto t = target(p, n);
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

template <target_fn target>
d::data_ptr_t charged_reallocate(d::PrivateAllocatorData* p, d::data_ptr_t ptr, d::idx_t old_n,
                                 d::idx_t n) {
    const auto t = target(p, n);
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
            charged_allocate<default_target>, charged_free, charged_reallocate<default_target>,
            d::make_uniq<d::PrivateAllocatorData>());
    });
}

d::unique_ptr<d::Allocator> database_allocator_for_sessions() {
    if (g_unaccounted) return d::make_uniq<d::Allocator>();  // DuckDB's own
    return d::make_uniq<d::Allocator>(charged_allocate<database_target>, charged_free,
                                      charged_reallocate<database_target>,
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

memory_scope::memory_scope(budget_account* a) : account_scope(t_scope, a) {}

}  // namespace sluice::sql::duck

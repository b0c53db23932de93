#include "sql/budget.h"

#include <sqlite3.h>

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/logging.h"

namespace sluice::sql {

namespace {

// Every block starts with this header; SQLite gets the bytes after it. 16 bytes keep
// malloc's 16-byte alignment (SQLite needs 8). SQLite never asks for 2^31 bytes or more
// (sqlite3Malloc refuses them), so the size fits 32 bits.
struct block_header {
    budget_account* account;  // null: charged to nobody
    uint32_t size;            // what SQLite asked for
    uint32_t generation;      // the account's generation when charged
};
static_assert(sizeof(block_header) == 16);

std::atomic<uint64_t> g_total_memory{0};
std::atomic<uint64_t> g_total_temp{0};
resource_bounds g_bounds;
bool g_installed = false;
thread_local budget_account* t_account = nullptr;

std::mutex g_pool_mu;
budget_account* g_free = nullptr;
std::vector<std::unique_ptr<budget_account>>* g_pool = nullptr;  // never freed (see .h)

block_header* header_of(void* p) {
    return static_cast<block_header*>(p) - 1;
}

void* finish_block(block_header* h, int n, budget_account* a) {
    h->account = a;
    h->size = static_cast<uint32_t>(n);
    h->generation = a ? a->generation() : 0;
    return h + 1;
}

void release_block(const block_header& h) {
    if (h.account) h.account->uncharge_memory(h.size, h.generation);
}

void* budget_malloc(int n) {
    if (n <= 0) return nullptr;
    budget_account* a = t_account;
    if (a && !a->charge_memory(static_cast<uint64_t>(n))) return nullptr;
    auto* h = static_cast<block_header*>(std::malloc(sizeof(block_header) + static_cast<size_t>(n)));
    if (!h) {
        if (a) a->uncharge_memory(static_cast<uint64_t>(n), a->generation());
        return nullptr;
    }
    return finish_block(h, n, a);
}

void budget_free(void* p) {
    if (!p) return;
    block_header* h = header_of(p);
    release_block(*h);
    std::free(h);
}

void* budget_realloc(void* p, int n) {
    if (!p) return budget_malloc(n);
    if (n <= 0) return nullptr;  // SQLite never asks (sqlite3Realloc frees instead)
    block_header* h = header_of(p);
    const block_header old = *h;
    budget_account* a = t_account;
    // Charged again to the current account: the new size, less the old one when the
    // block was already its own.
    const bool own = a && old.account == a && old.generation == a->generation();
    const int64_t grow = own ? int64_t{n} - old.size : int64_t{n};
    if (a && grow > 0 && !a->charge_memory(static_cast<uint64_t>(grow))) return nullptr;
    auto* nh =
        static_cast<block_header*>(std::realloc(h, sizeof(block_header) + static_cast<size_t>(n)));
    if (!nh) {
        if (a && grow > 0) a->uncharge_memory(static_cast<uint64_t>(grow), a->generation());
        return nullptr;
    }
    if (own && grow < 0) a->uncharge_memory(static_cast<uint64_t>(-grow), a->generation());
    if (!own) release_block(old);
    return finish_block(nh, n, a);
}

int budget_size(void* p) {
    return p ? static_cast<int>(header_of(p)->size) : 0;
}

int budget_roundup(int n) {
    return (n + 7) & ~7;
}

int budget_init(void*) {
    return SQLITE_OK;
}

void budget_shutdown(void*) {}

}  // namespace

bool budget_account::refuse(budget_refusal why, uint64_t n) {
    _refusal.store(why, std::memory_order_relaxed);
    _refused_bytes.store(n, std::memory_order_relaxed);
    return false;
}

namespace {

// Charges n to one account's counter and to the total, each within its bound; on a
// refusal, which of the two refused.
std::optional<budget_refusal> charge_within(std::atomic<uint64_t>& mine, uint64_t mine_limit,
                                            std::atomic<uint64_t>& total, uint64_t total_limit,
                                            uint64_t n) {
    if (mine.load(std::memory_order_relaxed) + n > mine_limit) return budget_refusal::session_memory;
    if (total.fetch_add(n, std::memory_order_relaxed) + n > total_limit) {
        total.fetch_sub(n, std::memory_order_relaxed);
        return budget_refusal::total_memory;
    }
    mine.fetch_add(n, std::memory_order_relaxed);
    return std::nullopt;
}

// The total held the bytes whoever owns the account now; the account only if it still
// belongs to the session that was charged.
void uncharge_within(std::atomic<uint64_t>& mine, std::atomic<uint64_t>& total, uint64_t n,
                     bool same_owner) {
    total.fetch_sub(n, std::memory_order_relaxed);
    if (same_owner) mine.fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace

bool budget_account::charge_memory(uint64_t n) {
    auto r = charge_within(_memory, g_bounds.session_memory, g_total_memory, g_bounds.total_memory, n);
    return !r || refuse(*r, n);
}

void budget_account::uncharge_memory(uint64_t n, uint32_t generation) {
    uncharge_within(_memory, g_total_memory, n, generation == this->generation());
}

bool budget_account::charge_temp(uint64_t n) {
    auto r = charge_within(_temp, g_bounds.session_temp, g_total_temp, g_bounds.total_temp, n);
    if (!r) return true;
    return refuse(*r == budget_refusal::session_memory ? budget_refusal::session_temp
                                                       : budget_refusal::total_temp,
                  n);
}

void budget_account::uncharge_temp(uint64_t n, uint32_t generation) {
    uncharge_within(_temp, g_total_temp, n, generation == this->generation());
}

budget_account* budget_account::acquire() {
    std::lock_guard lock(g_pool_mu);
    if (g_free) {
        budget_account* a = g_free;
        g_free = a->_next_free;
        a->_next_free = nullptr;
        return a;
    }
    if (!g_pool) g_pool = new std::vector<std::unique_ptr<budget_account>>();
    g_pool->push_back(std::make_unique<budget_account>());
    return g_pool->back().get();
}

void budget_account::release(budget_account* a) {
    if (!a) return;
    // Blocks still charged (another connection's) leave the account with its generation:
    // when freed they come off the total only.
    a->_generation.fetch_add(1, std::memory_order_relaxed);
    a->_memory.store(0, std::memory_order_relaxed);
    a->_temp.store(0, std::memory_order_relaxed);
    a->clear_refusal();
    std::lock_guard lock(g_pool_mu);
    a->_next_free = g_free;
    g_free = a;
}

budget_scope::budget_scope(budget_account* a) : account_scope(t_account, a) {}

budget_account* current_budget_account() {
    return t_account;
}

bool install_budget_allocator() {
    if (g_installed) return true;
    static const sqlite3_mem_methods methods{budget_malloc, budget_free,     budget_realloc,
                                             budget_size,   budget_roundup,  budget_init,
                                             budget_shutdown, nullptr};
    g_installed = sqlite3_config(SQLITE_CONFIG_MALLOC, &methods) == SQLITE_OK;
    return g_installed;
}

bool budget_allocator_installed() {
    return g_installed;
}

void set_resource_bounds(const resource_bounds& b) {
    g_bounds = b;
}

const resource_bounds& current_resource_bounds() {
    return g_bounds;
}

uint64_t budget_total_memory() {
    return g_total_memory.load(std::memory_order_relaxed);
}

uint64_t budget_total_temp() {
    return g_total_temp.load(std::memory_order_relaxed);
}

std::string format_bytes(uint64_t n) {
    static const char* const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (n < 1024 || n % 1024 != 0) return fmt::format("{} bytes", n);
    double v = static_cast<double>(n);
    int u = -1;
    while (v >= 1024 && u < 3) {
        v /= 1024;
        ++u;
    }
    return fmt::format("{:g} {}", v, units[u]);
}

std::optional<query_error> refusal_error(budget_refusal why) {
    const auto& b = g_bounds;
    switch (why) {
        case budget_refusal::total_memory:
            return query_error{
                failure::memory_exhausted,
                fmt::format("out of memory: SQL sessions together hold the {} they may use "
                            "(--sql-memory); try again when other statements finish",
                            format_bytes(b.total_memory))};
        case budget_refusal::session_memory:
            return query_error{failure::memory_limit,
                               fmt::format("out of memory: the statement needs more than the {} "
                                           "a SQL session may use (--sql-session-memory)",
                                           format_bytes(b.session_memory))};
        case budget_refusal::total_temp:
            return query_error{
                failure::temp_exhausted,
                fmt::format("temporary files of SQL sessions together would exceed {} "
                            "(--sql-temp-bytes); try again when other statements finish",
                            format_bytes(b.total_temp))};
        case budget_refusal::session_temp:
            return query_error{
                failure::temp_limit,
                fmt::format("temporary file size exceeds the {} a SQL session may use "
                            "(--sql-session-temp-bytes): a sort or temporary table too large",
                            format_bytes(b.session_temp))};
        case budget_refusal::value_length:
            return query_error{
                failure::program_limit,
                fmt::format("a string or blob would be longer than {} (--sql-max-value-bytes)",
                            format_bytes(static_cast<uint64_t>(b.max_value_bytes)))};
        case budget_refusal::none:
            break;
    }
    return std::nullopt;
}

void log_refusal(const query_error& e, const security::principal& who) {
    static std::atomic<int64_t> next_ms{0};
    static std::atomic<uint64_t> quiet{0};
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now().time_since_epoch())
                            .count();
    int64_t due = next_ms.load(std::memory_order_relaxed);
    if (now < due || !next_ms.compare_exchange_strong(due, now + 1000)) {
        quiet.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    const uint64_t more = quiet.exchange(0, std::memory_order_relaxed);
    log_warn("sql", "statement of {} refused ({}): {}{}", who.to_string(), sqlstate(e.kind),
             e.message, more ? fmt::format(" ({} more refusals unlogged)", more) : "");
}

}  // namespace sluice::sql

#include "sql/budget.h"

#include <fmt/format.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "common/logging.h"

namespace sluice::sql {

namespace {

std::atomic<uint64_t> g_total_memory{0};
resource_bounds g_bounds;

std::mutex g_pool_mu;
budget_account* g_free = nullptr;
std::vector<std::unique_ptr<budget_account>>* g_pool = nullptr;  // never freed (see .h)

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
    a->clear_refusal();
    std::lock_guard lock(g_pool_mu);
    a->_next_free = g_free;
    g_free = a;
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

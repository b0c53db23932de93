#include "common/logging.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace sluice {
namespace {

// Every component name that Sluice's log lines use, ordered (the logger names of the
// BROKER_LOGGER resource are "sluice." and these).
constexpr std::array<std::string_view, 21> component_names = {
    "admin", "app",      "broker",   "catalog",  "cleaner",      "expansion", "fetch",
    "group", "http",     "list_offsets", "metadata", "net",      "pg",        "produce",
    "producer", "protocol", "retention", "security", "sql",      "storage",   "topics"};

// A component's own level plus one; 0: none (it follows the root level).
constexpr int no_level = 0;
std::atomic<log_level> g_root{log_level::info};
std::array<std::atomic<int>, component_names.size()> g_components{};
std::atomic<log_level> g_floor{log_level::info};
std::mutex g_change;  // one change of levels at a time, so the floor matches them

int index_of(std::string_view component) {
    auto it = std::lower_bound(component_names.begin(), component_names.end(), component);
    if (it == component_names.end() || *it != component) return -1;
    return static_cast<int>(it - component_names.begin());
}

void update_floor() {
    log_level floor = g_root.load();
    for (auto& l : g_components)
        if (int v = l.load(); v != no_level) floor = std::min(floor, static_cast<log_level>(v - 1));
    g_floor.store(floor);
}

}  // namespace

const char* log_level_name(log_level l) {
    switch (l) {
        case log_level::trace: return "TRACE";
        case log_level::debug: return "DEBUG";
        case log_level::info: return "INFO";
        case log_level::warn: return "WARN";
        case log_level::error: return "ERROR";
        case log_level::fatal: return "FATAL";
    }
    return "?";
}

void set_log_level(log_level lvl) {
    std::lock_guard lock(g_change);
    g_root.store(lvl);
    update_floor();
}
log_level current_log_level() { return g_root.load(std::memory_order_relaxed); }

namespace detail {
log_level log_floor() { return g_floor.load(std::memory_order_relaxed); }
}  // namespace detail

const std::vector<std::string_view>& log_components() {
    static const std::vector<std::string_view> all(component_names.begin(), component_names.end());
    return all;
}

bool set_component_level(std::string_view component, std::optional<log_level> lvl) {
    int i = index_of(component);
    if (i < 0) return false;
    std::lock_guard lock(g_change);
    g_components[static_cast<size_t>(i)].store(lvl ? static_cast<int>(*lvl) + 1 : no_level);
    update_floor();
    return true;
}

std::optional<log_level> component_level(std::string_view component) {
    int i = index_of(component);
    if (i < 0) return std::nullopt;
    int v = g_components[static_cast<size_t>(i)].load(std::memory_order_relaxed);
    if (v == no_level) return std::nullopt;
    return static_cast<log_level>(v - 1);
}

log_level effective_level(std::string_view component) {
    return component_level(component).value_or(current_log_level());
}

bool parse_log_level(std::string_view s, log_level& out) {
    for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                   log_level::error, log_level::fatal}) {
        std::string_view n = log_level_name(l);
        if (s.size() == n.size()) {
            bool eq = true;
            for (size_t i = 0; i < s.size(); ++i) eq &= (std::toupper(s[i]) == n[i]);
            if (eq) {
                out = l;
                return true;
            }
        }
    }
    return false;
}

void log_line(log_level lvl, std::string_view component, std::string_view message) {
    using namespace std::chrono;
    auto now = system_clock::now();
    auto secs = system_clock::to_time_t(now);
    auto ms = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char ts[32];
    std::strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    // One fwrite per line keeps lines whole when several threads log at once.
    auto line =
        fmt::format("{}.{:03}Z {} {}: {}\n", ts, ms, log_level_name(lvl), component, message);
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace sluice

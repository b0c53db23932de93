#pragma once

#include <fmt/format.h>

#include <optional>
#include <string_view>
#include <vector>

namespace sluice {

// FATAL exists for Kafka's broker loggers (no line of Sluice's is fatal: a logger at FATAL
// writes nothing).
enum class log_level { trace, debug, info, warn, error, fatal };

// One event per line on stderr: "<utc time> <LEVEL> <component>: <message>".
void log_line(log_level lvl, std::string_view component, std::string_view message);
// The root level: every component without a level of its own.
void set_log_level(log_level lvl);
log_level current_log_level();
// Any case: "debug", "DEBUG".
bool parse_log_level(std::string_view s, log_level& out);
const char* log_level_name(log_level l);  // "DEBUG"

// Per-component levels, the run-time side of Kafka's broker loggers (BROKER_LOGGER
// resource): each component of log_components() may have a level of its own, or none and
// follow the root level. Kept in memory only, as Kafka does: a restart starts from
// --log-level again.
const std::vector<std::string_view>& log_components();  // ordered
// False for a component not in log_components().
bool set_component_level(std::string_view component, std::optional<log_level> lvl);
std::optional<log_level> component_level(std::string_view component);
// The level a component's lines are written at: its own, else the root level.
log_level effective_level(std::string_view component);

namespace detail {
// The lowest level any component is written at: most lines stop here without a lookup.
log_level log_floor();
}  // namespace detail

inline bool log_enabled(log_level lvl, std::string_view component) {
    if (lvl < detail::log_floor()) return false;
    return lvl >= effective_level(component);
}

template <typename... Args>
void log_at(log_level lvl, std::string_view component, fmt::format_string<Args...> f,
            Args&&... args) {
    if (!log_enabled(lvl, component)) return;
    log_line(lvl, component, fmt::format(f, std::forward<Args>(args)...));
}

template <typename... Args>
void log_debug(std::string_view c, fmt::format_string<Args...> f, Args&&... a) {
    log_at(log_level::debug, c, f, std::forward<Args>(a)...);
}
template <typename... Args>
void log_info(std::string_view c, fmt::format_string<Args...> f, Args&&... a) {
    log_at(log_level::info, c, f, std::forward<Args>(a)...);
}
template <typename... Args>
void log_warn(std::string_view c, fmt::format_string<Args...> f, Args&&... a) {
    log_at(log_level::warn, c, f, std::forward<Args>(a)...);
}
template <typename... Args>
void log_error(std::string_view c, fmt::format_string<Args...> f, Args&&... a) {
    log_at(log_level::error, c, f, std::forward<Args>(a)...);
}

}  // namespace sluice

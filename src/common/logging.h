#pragma once

#include <fmt/format.h>

#include <string_view>

namespace sluice {

enum class log_level { trace, debug, info, warn, error };

// One event per line on stderr: "<utc time> <LEVEL> <component>: <message>".
void log_line(log_level lvl, std::string_view component, std::string_view message);
void set_log_level(log_level lvl);
log_level current_log_level();
bool parse_log_level(std::string_view s, log_level& out);

template <typename... Args>
void log_at(log_level lvl, std::string_view component, fmt::format_string<Args...> f,
            Args&&... args) {
    if (lvl < current_log_level()) return;
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

#include "common/logging.h"

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace sluice {
namespace {
std::atomic<log_level> g_level{log_level::info};

const char* level_name(log_level l) {
    switch (l) {
        case log_level::trace: return "TRACE";
        case log_level::debug: return "DEBUG";
        case log_level::info: return "INFO";
        case log_level::warn: return "WARN";
        case log_level::error: return "ERROR";
    }
    return "?";
}
}  // namespace

void set_log_level(log_level lvl) { g_level.store(lvl); }
log_level current_log_level() { return g_level.load(std::memory_order_relaxed); }

bool parse_log_level(std::string_view s, log_level& out) {
    for (auto l : {log_level::trace, log_level::debug, log_level::info, log_level::warn,
                   log_level::error}) {
        std::string_view n = level_name(l);
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
    auto line = fmt::format("{}.{:03}Z {} {}: {}\n", ts, ms, level_name(lvl), component, message);
    std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace sluice

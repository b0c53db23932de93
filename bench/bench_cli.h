#pragma once

// Command-line plumbing shared by the benchmark tools built on Sluice's codecs.

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace sluice::bench {

[[noreturn]] inline void die(const char* tool, std::string_view msg) noexcept {
    std::fprintf(stderr, "%s: %.*s\n", tool, static_cast<int>(msg.size()), msg.data());
    std::exit(2);
}

// A tool's main: an exception escaping `body` (a failed allocation, an error of a library)
// ends the tool with its message and exit code 2, like die(), rather than std::terminate.
template <class Body>
int guarded_main(const char* tool, Body&& body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        die(tool, e.what());
    } catch (...) {
        die(tool, "an exception that is not a std::exception");
    }
}

// A flag's value as a number: all of `s`, in range, or the tool ends saying so.
template <class T>
T number(const char* tool, std::string_view flag, std::string_view s) {
    T v{};
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || end != s.data() + s.size() || s.empty())
        die(tool, std::string(flag) + ": not a number: '" + std::string(s) + "'");
    return v;
}

// Walks "--flag value" pairs: on_flag(flag, value) returns false for an unknown flag.
inline void parse_flags(
    const char* tool, int argc, char** argv,
    const std::function<bool(const std::string&, const std::string&)>& on_flag) {
    for (int i = 1; i < argc; ++i) {
        std::string flag = argv[i];
        if (i + 1 >= argc) die(tool, flag + " needs a value");
        if (!on_flag(flag, argv[++i])) die(tool, "unknown argument " + flag);
    }
}

// "1,10,100" (the value of `flag`) as numbers.
inline std::vector<int> int_list(const char* tool, std::string_view flag, std::string_view s) {
    std::vector<int> out;
    for (size_t from = 0; from <= s.size();) {
        size_t comma = s.find(',', from);
        out.push_back(number<int>(tool, flag, s.substr(from, comma - from)));
        if (comma == std::string_view::npos) break;
        from = comma + 1;
    }
    return out;
}

}  // namespace sluice::bench

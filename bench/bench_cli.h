#pragma once

// Command-line plumbing shared by the benchmark tools built on Sluice's codecs.

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace sluice::bench {

[[noreturn]] inline void die(const char* tool, const std::string& msg) {
    std::fprintf(stderr, "%s: %s\n", tool, msg.c_str());
    std::exit(2);
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

// "1,10,100" as numbers.
inline std::vector<int> int_list(const std::string& s) {
    std::vector<int> out;
    for (size_t from = 0; from <= s.size();) {
        size_t comma = s.find(',', from);
        out.push_back(std::atoi(s.substr(from, comma - from).c_str()));
        if (comma == std::string::npos) break;
        from = comma + 1;
    }
    return out;
}

}  // namespace sluice::bench

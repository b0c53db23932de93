#pragma once

// Command-line plumbing shared by the benchmark tools built on Sluice's codecs.

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

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

}  // namespace sluice::bench

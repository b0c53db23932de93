#pragma once

#include <chrono>
#include <cstdint>

namespace sluice {

inline int64_t now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

using steady = std::chrono::steady_clock;

// Milliseconds on the monotonic clock, for deadlines.
inline int64_t steady_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady::now().time_since_epoch()).count();
}

}  // namespace sluice

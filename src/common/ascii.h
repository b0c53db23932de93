// ASCII helpers for protocol names that are matched without regard to case (HTTP
// header names, Kafka group types and states, SCRAM attribute names).
#pragma once

#include <algorithm>
#include <string_view>

namespace sluice {

// Case-insensitive ASCII comparison.
inline bool iequals(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
               return lower(x) == lower(y);
           });
}

}  // namespace sluice

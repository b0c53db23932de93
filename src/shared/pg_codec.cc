#include "shared/pg_codec.h"

#include <fmt/format.h>

namespace sluice::shared {

std::string bytea_hex(const bytes& b) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out = "\\x";
    out.reserve(2 + 2 * b.size());
    for (uint8_t v : b) {
        out += digits[v >> 4];
        out += digits[v & 0xf];
    }
    return out;
}

result<bytes> bytea_from_text(std::string_view s) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    if (s.size() < 2 || s.substr(0, 2) != "\\x" || s.size() % 2 != 0)
        return error{errc::corrupt, fmt::format("not a BYTEA in hex form: '{:.40}'", s)};
    bytes out;
    out.reserve((s.size() - 2) / 2);
    for (size_t i = 2; i < s.size(); i += 2) {
        int hi = nibble(s[i]);
        int lo = nibble(s[i + 1]);
        if (hi < 0 || lo < 0)
            return error{errc::corrupt, fmt::format("not a BYTEA in hex form: '{:.40}'", s)};
        out.push_back(static_cast<uint8_t>(hi * 16 + lo));
    }
    return out;
}

}  // namespace sluice::shared

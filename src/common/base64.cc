#include "common/base64.h"

#include <cstdint>

namespace sluice {

namespace {

constexpr std::string_view b64_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

int b64_value(char ch) {
    if (ch >= 'A' && ch <= 'Z') return ch - 'A';
    if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
    if (ch >= '0' && ch <= '9') return ch - '0' + 52;
    if (ch == '+') return 62;
    if (ch == '/') return 63;
    return -1;
}

}  // namespace

std::string base64_encode(std::string_view raw) {
    std::string out;
    out.reserve((raw.size() + 2) / 3 * 4);
    size_t i = 0;
    for (; i + 3 <= raw.size(); i += 3) {
        uint32_t v = (uint32_t(uint8_t(raw[i])) << 16) | (uint32_t(uint8_t(raw[i + 1])) << 8) |
                     uint32_t(uint8_t(raw[i + 2]));
        for (int shift = 18; shift >= 0; shift -= 6) out += b64_alphabet[(v >> shift) & 0x3f];
    }
    size_t rest = raw.size() - i;
    if (rest > 0) {
        uint32_t v = uint32_t(uint8_t(raw[i])) << 16;
        if (rest == 2) v |= uint32_t(uint8_t(raw[i + 1])) << 8;
        out += b64_alphabet[(v >> 18) & 0x3f];
        out += b64_alphabet[(v >> 12) & 0x3f];
        out += rest == 2 ? b64_alphabet[(v >> 6) & 0x3f] : '=';
        out += '=';
    }
    return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) return std::nullopt;
    std::string out;
    out.reserve(text.size() / 4 * 3);
    for (size_t i = 0; i < text.size(); i += 4) {
        bool last = i + 4 == text.size();
        size_t pad = 0;
        if (last && text[i + 3] == '=') pad = text[i + 2] == '=' ? 2 : 1;
        uint32_t v = 0;
        for (size_t k = 0; k < 4; ++k) {
            int d = k < 4 - pad ? b64_value(text[i + k]) : 0;
            if (d < 0) return std::nullopt;
            v = (v << 6) | uint32_t(d);
        }
        out += char((v >> 16) & 0xff);
        if (pad < 2) out += char((v >> 8) & 0xff);
        if (pad < 1) out += char(v & 0xff);
        // Canonical form only: the bits dropped by padding must be zero.
        if ((pad == 1 && (v & 0xff) != 0) || (pad == 2 && (v & 0xffff) != 0)) return std::nullopt;
    }
    return out;
}

}  // namespace sluice

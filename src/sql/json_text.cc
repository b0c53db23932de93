#include "sql/json_text.h"

#include <cstring>

namespace sluice::sql {

size_t utf8_sequence_length(std::string_view s) {
    if (s.empty()) return 0;
    auto b = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
    auto cont = [&](size_t i, unsigned char lo = 0x80, unsigned char hi = 0xbf) {
        return i < s.size() && b(i) >= lo && b(i) <= hi;
    };
    unsigned char c = b(0);
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
    if (c == 0xe0) return cont(1, 0xa0) && cont(2) ? 3 : 0;
    if (c == 0xed) return cont(1, 0x80, 0x9f) && cont(2) ? 3 : 0;  // no surrogates
    if (c >= 0xe1 && c <= 0xef) return cont(1) && cont(2) ? 3 : 0;
    if (c == 0xf0) return cont(1, 0x90) && cont(2) && cont(3) ? 4 : 0;
    if (c >= 0xf1 && c <= 0xf3) return cont(1) && cont(2) && cont(3) ? 4 : 0;
    if (c == 0xf4) return cont(1, 0x80, 0x8f) && cont(2) && cont(3) ? 4 : 0;
    return 0;
}

bool is_valid_utf8(std::string_view s) {
    while (!s.empty()) {
        // ASCII runs are the common case.
        if (static_cast<unsigned char>(s.front()) < 0x80) {
            s.remove_prefix(1);
            continue;
        }
        size_t n = utf8_sequence_length(s);
        if (n == 0) return false;
        s.remove_prefix(n);
    }
    return true;
}

std::string_view as_chars(const bytes& b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

void append_json_string(std::string& out, std::string_view s) {
    static const char* hex = "0123456789abcdef";
    out.push_back('"');
    while (!s.empty()) {
        auto c = static_cast<unsigned char>(s.front());
        if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
            out.push_back(static_cast<char>(c));
            s.remove_prefix(1);
            continue;
        }
        if (c < 0x80) {
            switch (c) {
                case '"':
                    out += "\\\"";
                    break;
                case '\\':
                    out += "\\\\";
                    break;
                case '\n':
                    out += "\\n";
                    break;
                case '\r':
                    out += "\\r";
                    break;
                case '\t':
                    out += "\\t";
                    break;
                case '\b':
                    out += "\\b";
                    break;
                case '\f':
                    out += "\\f";
                    break;
                default:  // other controls and DEL
                    out += "\\u00";
                    out.push_back(hex[c >> 4]);
                    out.push_back(hex[c & 15]);
            }
            s.remove_prefix(1);
            continue;
        }
        size_t n = utf8_sequence_length(s);
        if (n == 0) {
            out += "\\ufffd";
            s.remove_prefix(1);
        } else if (n == 3 && c == 0xe2 && static_cast<unsigned char>(s[1]) == 0x80 &&
                   (static_cast<unsigned char>(s[2]) & 0xfe) == 0xa8) {
            // U+2028 and U+2029 are valid JSON but end lines in JavaScript source.
            out += static_cast<unsigned char>(s[2]) == 0xa8 ? "\\u2028" : "\\u2029";
            s.remove_prefix(3);
        } else {
            out.append(s.substr(0, n));
            s.remove_prefix(n);
        }
    }
    out.push_back('"');
}

std::string scrub_utf8(std::string_view s) {
    if (is_valid_utf8(s)) return std::string(s);
    std::string out;
    while (!s.empty()) {
        size_t n = utf8_sequence_length(s);
        if (n == 0) {
            out += "\xef\xbf\xbd";
            s.remove_prefix(1);
        } else {
            out.append(s.substr(0, n));
            s.remove_prefix(n);
        }
    }
    return out;
}

void append_json_bytes(std::string& out, bytes_view b) {
    const std::string_view s(reinterpret_cast<const char*>(b.data()), b.size());
    if (is_valid_utf8(s)) return append_json_string(out, s);
    out += "{\"base64\":\"";
    out += base64_encode(s);
    out += "\"}";
}

}  // namespace sluice::sql

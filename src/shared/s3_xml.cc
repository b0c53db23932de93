#include "shared/s3_xml.h"

#include <charconv>
#include <cstdint>

namespace sluice::shared::s3_xml {

namespace {

// Appends code point `cp` as UTF-8.
void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// The element's inner text from `from` on: [begin, end) of the first <tag>..</tag>, and
// the position after its end tag; npos begin when absent. An empty element (<tag/>)
// counts as present with no text.
struct span_found {
    size_t begin = std::string_view::npos;
    size_t end = 0;
    size_t next = 0;
};

span_found find_element(std::string_view xml, std::string_view tag, size_t from) {
    std::string open = "<" + std::string(tag);
    std::string close = "</" + std::string(tag) + ">";
    while (true) {
        size_t at = xml.find(open, from);
        if (at == std::string_view::npos) return {};
        size_t after = at + open.size();
        if (after >= xml.size()) return {};
        char c = xml[after];
        if (c == '/') {  // <tag/>
            size_t gt = xml.find('>', after);
            if (gt == std::string_view::npos) return {};
            return {gt + 1, gt + 1, gt + 1};
        }
        if (c != '>' && c != ' ') {  // a longer name (<KeyCount> when looking for <Key>)
            from = after;
            continue;
        }
        size_t gt = xml.find('>', after);
        if (gt == std::string_view::npos) return {};
        size_t end = xml.find(close, gt + 1);
        if (end == std::string_view::npos) return {};
        return {gt + 1, end, end + close.size()};
    }
}

}  // namespace

std::string decode_entities(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '&') {
            out += text[i];
            continue;
        }
        size_t semi = text.find(';', i);
        if (semi == std::string_view::npos) {
            out += text.substr(i);
            break;
        }
        std::string_view name = text.substr(i + 1, semi - i - 1);
        if (name == "amp")
            out += '&';
        else if (name == "lt")
            out += '<';
        else if (name == "gt")
            out += '>';
        else if (name == "quot")
            out += '"';
        else if (name == "apos")
            out += '\'';
        else if (name.size() > 1 && name[0] == '#') {
            uint32_t cp = 0;
            bool hex = name[1] == 'x' || name[1] == 'X';
            std::string_view digits = name.substr(hex ? 2 : 1);
            auto [p, ec] =
                std::from_chars(digits.data(), digits.data() + digits.size(), cp, hex ? 16 : 10);
            if (ec != std::errc() || p != digits.data() + digits.size()) {
                out += text.substr(i, semi - i + 1);
            } else {
                append_utf8(out, cp);
            }
        } else {
            out += text.substr(i, semi - i + 1);  // unknown: kept as written
        }
        i = semi;
    }
    return out;
}

std::string first_text(std::string_view xml, std::string_view tag) {
    span_found f = find_element(xml, tag, 0);
    if (f.begin == std::string_view::npos) return {};
    return decode_entities(xml.substr(f.begin, f.end - f.begin));
}

std::vector<std::string_view> elements(std::string_view xml, std::string_view tag) {
    std::vector<std::string_view> out;
    size_t from = 0;
    while (true) {
        span_found f = find_element(xml, tag, from);
        if (f.begin == std::string_view::npos) break;
        out.push_back(xml.substr(f.begin, f.end - f.begin));
        from = f.next;
    }
    return out;
}

int64_t parse_time_ms(std::string_view text) {
    // YYYY-MM-DDTHH:MM:SS[.fff]Z
    auto num = [&](size_t at, size_t len, int& out) {
        if (at + len > text.size()) return false;
        auto [p, ec] = std::from_chars(text.data() + at, text.data() + at + len, out);
        return ec == std::errc() && p == text.data() + at + len;
    };
    int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
    if (!num(0, 4, y) || !num(5, 2, mo) || !num(8, 2, d) || !num(11, 2, h) || !num(14, 2, mi) ||
        !num(17, 2, sec) || text[4] != '-' || text[7] != '-' || text[10] != 'T')
        return -1;
    if (text.size() >= 23 && text[19] == '.' && !num(20, 3, ms)) return -1;
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    const int yy = y - (mo <= 2 ? 1 : 0);
    const int era = (yy >= 0 ? yy : yy - 399) / 400;
    const int yoe = yy - era * 400;
    const int doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const int64_t days = int64_t{era} * 146097 + doe - 719468;
    return ((days * 24 + h) * 60 + mi) * 60000 + int64_t{sec} * 1000 + ms;
}

}  // namespace sluice::shared::s3_xml

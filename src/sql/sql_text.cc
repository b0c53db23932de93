#include "sql/sql_text.h"

namespace sluice::sql {

size_t skip_space(std::string_view s, size_t pos) {
    while (pos < s.size()) {
        const char c = s[pos];
        if (std::isspace(static_cast<unsigned char>(c))) {
            ++pos;
        } else if (c == '-' && pos + 1 < s.size() && s[pos + 1] == '-') {
            const auto nl = s.find('\n', pos);
            pos = nl == std::string_view::npos ? s.size() : nl + 1;
        } else if (c == '/' && pos + 1 < s.size() && s[pos + 1] == '*') {
            const auto close = s.find("*/", pos + 2);
            pos = close == std::string_view::npos ? s.size() : close + 2;
        } else {
            break;
        }
    }
    return pos;
}

size_t skip_separators(std::string_view s, size_t pos) {
    for (;;) {
        pos = skip_space(s, pos);
        if (pos >= s.size() || s[pos] != ';') return pos;
        ++pos;
    }
}

namespace {

std::string quoted(std::string_view s, char q) {
    std::string out(1, q);
    for (char c : s) {
        out += c;
        if (c == q) out += q;
    }
    return out + q;
}

}  // namespace

std::string quote_ident(std::string_view s) {
    return quoted(s, '"');
}
std::string quote_literal(std::string_view s) {
    return quoted(s, '\'');
}

std::string to_upper(std::string_view s) {
    std::string u(s);
    for (char& c : u) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return u;
}

std::string to_lower(std::string_view s) {
    std::string u(s);
    for (char& c : u) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return u;
}

}  // namespace sluice::sql

#pragma once

// Small lexical helpers for the few statements the engine reads itself (CREATE SCHEMA,
// command tags); SQLite parses everything else.

#include <cctype>
#include <string>
#include <string_view>

namespace sluice::sql {

// The position of the first character at or after `i` that is neither white space nor
// inside a comment (-- to end of line, /* */); s.size() when none is.
inline size_t skip_space_and_comments(std::string_view s, size_t i = 0) {
    while (i < s.size()) {
        if (std::isspace(static_cast<unsigned char>(s[i]))) {
            ++i;
        } else if (s.substr(i, 2) == "--") {
            i = s.find('\n', i);
            if (i == std::string_view::npos) return s.size();
        } else if (s.substr(i, 2) == "/*") {
            i = s.find("*/", i + 2);
            if (i == std::string_view::npos) return s.size();
            i += 2;
        } else {
            break;
        }
    }
    return i;
}

// The word (letters, digits, '_') at `i`, upper-cased; `i` moves past it and the space
// and comments after it.
inline std::string next_word(std::string_view s, size_t& i) {
    std::string w;
    while (i < s.size() && (std::isalnum(static_cast<unsigned char>(s[i])) || s[i] == '_'))
        w += static_cast<char>(std::toupper(static_cast<unsigned char>(s[i++])));
    i = skip_space_and_comments(s, i);
    return w;
}

}  // namespace sluice::sql

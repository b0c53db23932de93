#pragma once

// Small lexical helpers for the few statements the engine and its front ends read
// themselves (CREATE SCHEMA, command tags, where a string of statements ends); SQLite
// parses everything else.

#include <cctype>
#include <string>
#include <string_view>

namespace sluice::sql {

// Past whitespace and comments (-- to the end of the line, /* ... */; an unterminated
// one runs to the end): the position of the next token, or sql.size().
size_t skip_space(std::string_view sql, size_t pos = 0);
// Past whitespace, comments and empty statements (stray ';').
size_t skip_separators(std::string_view sql, size_t pos = 0);
// Whether `sql` holds no statement at all.
inline bool is_blank_sql(std::string_view sql) {
    return skip_separators(sql) == sql.size();
}

// "name" and 'text' with their quote characters doubled, for statements the engine
// builds itself.
std::string quote_ident(std::string_view s);
std::string quote_literal(std::string_view s);

// ASCII case folding, as SQLite compares names.
std::string to_upper(std::string_view s);
std::string to_lower(std::string_view s);

}  // namespace sluice::sql

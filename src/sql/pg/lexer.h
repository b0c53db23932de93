#pragma once

// Just enough lexing of SQL text for the front end: where a statement ends, what its
// leading keywords are, and the tokens of the PostgreSQL commands SQLite lacks (SET,
// SHOW, RESET, ...). The engine parses everything else.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "sql/sql_text.h"

namespace sluice::sql::pg {

// skip_space and skip_separators come from sql/sql_text.h.
using sql::skip_separators;
using sql::skip_space;

struct token {
    enum class kind {
        word,    // keyword or identifier, as written
        string,  // '...' (text() is the body with '' still doubled: see unquote)
        quoted,  // "..." or `...` identifier
        number,  // 12, 1.5, 1e3
        punct,   // one character: ; , = ( ) . and the rest
        end,     // no more tokens
    };
    kind k = kind::end;
    std::string_view text;  // without quotes for string/quoted
    size_t begin = 0;       // offset in the source
    size_t end = 0;

    bool is_punct(char c) const { return k == kind::punct && text.size() == 1 && text[0] == c; }
    // Case-insensitive keyword test.
    bool is_word(std::string_view w) const;
};

class tokenizer {
  public:
    explicit tokenizer(std::string_view sql, size_t pos = 0) : _s(sql), _pos(pos) {}
    token next();
    token peek();
    size_t pos() const { return _pos; }

  private:
    std::string_view _s;
    size_t _pos;
};

// Offset of the ';' ending the statement that starts at `pos` (quotes and parentheses
// respected), or sql.size().
size_t statement_end(std::string_view sql, size_t pos = 0);
// The first `max` words of the statement, upper-cased, stopping at any other token.
std::vector<std::string> leading_words(std::string_view sql, size_t max);
// The verb of a statement starting WITH: the first of SELECT, INSERT, UPDATE, DELETE,
// REPLACE, VALUES outside parentheses (upper-cased); "SELECT" when none is found.
std::string verb_after_with(std::string_view sql);

// A '...' string's body with '' undoubled.
std::string unquote(std::string_view body, char quote = '\'');

}  // namespace sluice::sql::pg

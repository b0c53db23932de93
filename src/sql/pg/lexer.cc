#include "sql/pg/lexer.h"

#include <cctype>

#include "sql/sql_text.h"

namespace sluice::sql::pg {

namespace {

bool is_word_start(char c) {
    auto u = static_cast<unsigned char>(c);
    return std::isalpha(u) || c == '_' || u >= 0x80;  // UTF-8 letters in identifiers
}
bool is_word_char(char c) {
    return is_word_start(c) || std::isdigit(static_cast<unsigned char>(c)) || c == '$';
}

}  // namespace

bool token::is_word(std::string_view w) const {
    if (k != kind::word || text.size() != w.size()) return false;
    for (size_t i = 0; i < w.size(); ++i)
        if (std::toupper(static_cast<unsigned char>(text[i])) !=
            std::toupper(static_cast<unsigned char>(w[i])))
            return false;
    return true;
}

token tokenizer::next() {
    _pos = skip_space(_s, _pos);
    token t;
    t.begin = _pos;
    if (_pos >= _s.size()) {
        t.end = _pos;
        return t;
    }
    char c = _s[_pos];
    if (c == '\'' || c == '"' || c == '`') {
        // Quotes are escaped by doubling; an unterminated string runs to the end.
        size_t i = _pos + 1;
        for (;;) {
            auto q = _s.find(c, i);
            if (q == std::string_view::npos) {
                i = _s.size();
                break;
            }
            if (q + 1 < _s.size() && _s[q + 1] == c) {
                i = q + 2;
                continue;
            }
            i = q + 1;
            break;
        }
        t.k = c == '\'' ? token::kind::string : token::kind::quoted;
        size_t body_end = (i > _pos + 1 && _s[i - 1] == c) ? i - 1 : i;
        t.text = _s.substr(_pos + 1, body_end - _pos - 1);
        _pos = i;
    } else if (is_word_start(c)) {
        size_t i = _pos + 1;
        while (i < _s.size() && is_word_char(_s[i])) ++i;
        t.k = token::kind::word;
        t.text = _s.substr(_pos, i - _pos);
        _pos = i;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && _pos + 1 < _s.size() &&
                std::isdigit(static_cast<unsigned char>(_s[_pos + 1])))) {
        size_t i = _pos;
        while (i < _s.size() && (std::isdigit(static_cast<unsigned char>(_s[i])) || _s[i] == '.'))
            ++i;
        if (i < _s.size() && (_s[i] == 'e' || _s[i] == 'E')) {
            size_t j = i + 1;
            if (j < _s.size() && (_s[j] == '+' || _s[j] == '-')) ++j;
            if (j < _s.size() && std::isdigit(static_cast<unsigned char>(_s[j]))) {
                while (j < _s.size() && std::isdigit(static_cast<unsigned char>(_s[j]))) ++j;
                i = j;
            }
        }
        t.k = token::kind::number;
        t.text = _s.substr(_pos, i - _pos);
        _pos = i;
    } else {
        t.k = token::kind::punct;
        t.text = _s.substr(_pos, 1);
        ++_pos;
    }
    t.end = _pos;
    return t;
}

token tokenizer::peek() {
    size_t saved = _pos;
    token t = next();
    _pos = saved;
    return t;
}

size_t statement_end(std::string_view s, size_t pos) {
    tokenizer tz(s, pos);
    int depth = 0;
    for (;;) {
        token t = tz.next();
        if (t.k == token::kind::end) return s.size();
        if (t.is_punct('(')) ++depth;
        if (t.is_punct(')') && depth > 0) --depth;
        if (t.is_punct(';') && depth == 0) return t.begin;
    }
}

std::vector<std::string> leading_words(std::string_view sql, size_t max) {
    std::vector<std::string> words;
    tokenizer tz(sql);
    while (words.size() < max) {
        token t = tz.next();
        if (t.k != token::kind::word) break;
        words.push_back(to_upper(t.text));
    }
    return words;
}

std::string verb_after_with(std::string_view sql) {
    tokenizer tz(sql);
    int depth = 0;
    for (;;) {
        token t = tz.next();
        if (t.k == token::kind::end || (t.is_punct(';') && depth == 0)) return "SELECT";
        if (t.is_punct('(')) ++depth;
        if (t.is_punct(')') && depth > 0) --depth;
        if (depth != 0 || t.k != token::kind::word) continue;
        for (const char* verb : {"SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "VALUES"})
            if (t.is_word(verb)) return verb;
    }
}

std::string unquote(std::string_view body, char quote) {
    std::string out;
    out.reserve(body.size());
    for (size_t i = 0; i < body.size(); ++i) {
        out.push_back(body[i]);
        if (body[i] == quote && i + 1 < body.size() && body[i + 1] == quote) ++i;
    }
    return out;
}

}  // namespace sluice::sql::pg

#include "sql/topic_names.h"

#include <cctype>

#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

constexpr std::string_view escape_mark = "~";  // never in a topic name
constexpr char upper_mark = '^';                // never in a topic name
constexpr std::string_view topics_schema = "kafka_topics";

// A token of SQLite's grammar, as far as finding kafka_topics.<name> needs.
struct token {
    enum class kind { identifier, dot, other, end };
    kind k = kind::end;
    std::string name;  // an identifier's name, unquoted
    size_t begin = 0, end = 0;
};

bool bare_char(char c) {
    // SQLite's identifier characters: letters, digits, '_', '$' and any non-ASCII byte.
    const auto u = static_cast<unsigned char>(c);
    return std::isalnum(u) || c == '_' || c == '$' || u >= 0x80;
}

// The quoted token starting at `i` (its quote characters `open` ... `close`, a doubled
// `close` standing for one); an unterminated one runs to the end.
token quoted(std::string_view s, size_t i, char close) {
    token t{token::kind::identifier, {}, i, s.size()};
    for (size_t j = i + 1; j < s.size(); ++j) {
        if (s[j] != close) {
            t.name += s[j];
            continue;
        }
        if (close != ']' && j + 1 < s.size() && s[j + 1] == close) {
            t.name += close;
            ++j;
            continue;
        }
        t.end = j + 1;
        break;
    }
    return t;
}

token next_token(std::string_view s, size_t& pos) {
    pos = skip_space(s, pos);
    if (pos >= s.size()) return {token::kind::end, {}, pos, pos};
    const char c = s[pos];
    token t;
    if (c == '"' || c == '`') {
        t = quoted(s, pos, c);
    } else if (c == '[') {
        t = quoted(s, pos, ']');
    } else if (c == '\'') {
        t = quoted(s, pos, '\'');  // a string literal: not an identifier
        t.k = token::kind::other;
    } else if (bare_char(c)) {
        size_t j = pos;
        while (j < s.size() && bare_char(s[j])) ++j;
        // x'..' is a blob literal.
        if (j == pos + 1 && (c == 'x' || c == 'X') && j < s.size() && s[j] == '\'') {
            t = quoted(s, j, '\'');
            t.k = token::kind::other;
            t.begin = pos;
        } else {
            t = {token::kind::identifier, std::string(s.substr(pos, j - pos)), pos, j};
        }
    } else {
        t = {c == '.' ? token::kind::dot : token::kind::other, {}, pos, pos + 1};
    }
    pos = t.end;
    return t;
}

}  // namespace

bool reserved_table_name(std::string_view name) {
    return to_lower(name.substr(0, 7)) == "sqlite_";
}

std::string escaped_table_name(std::string_view topic) {
    std::string out(escape_mark);
    for (char c : topic) {
        if (std::isupper(static_cast<unsigned char>(c))) out += upper_mark;
        out += c;
    }
    return out;
}

std::string topic_of_table(std::string_view table) {
    if (table.substr(0, escape_mark.size()) != escape_mark) return std::string(table);
    std::string out;
    for (char c : table.substr(escape_mark.size()))
        if (c != upper_mark) out += c;
    return out;
}

std::string rewrite_topic_refs(
    std::string_view sql,
    const std::function<std::optional<std::string>(std::string_view name)>& table_for,
    std::vector<text_edit>* edits) {
    std::string out;
    size_t copied = 0, pos = 0;
    // The last two tokens before the current one.
    token before_dot, dot;
    for (;;) {
        token t = next_token(sql, pos);
        if (t.k == token::kind::end) break;
        // The first statement ends here, as far as references go: SQLite prepares one
        // statement at a time, and scanning the rest each time would cost a string of
        // n statements n times its length. (A trigger body's later statements are
        // left as they are.)
        if (t.k == token::kind::other && sql[t.begin] == ';') break;
        if (t.k == token::kind::identifier && dot.k == token::kind::dot &&
            before_dot.k == token::kind::identifier &&
            to_lower(before_dot.name) == topics_schema) {
            if (auto table = table_for(t.name); table && *table != t.name) {
                out.append(sql.substr(copied, t.begin - copied));
                const size_t new_from = out.size();
                out += quote_ident(*table);
                if (edits) edits->push_back({t.begin, t.end, new_from, out.size()});
                copied = t.end;
            }
        }
        before_dot = std::move(dot);
        dot = std::move(t);
    }
    if (copied == 0) return std::string(sql);
    out.append(sql.substr(copied));
    return out;
}

size_t original_position(const std::vector<text_edit>& edits, size_t pos) {
    size_t orig = pos;
    for (const auto& e : edits) {
        if (pos < e.new_to) return pos <= e.new_from ? orig : e.from;
        orig = e.to + (pos - e.new_to);
    }
    return orig;
}

}  // namespace sluice::sql

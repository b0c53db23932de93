#include "sql/pg/subquery_rewrite.h"

#include <fmt/format.h>

#include <initializer_list>
#include <set>
#include <vector>

#include "sql/pg/lexer.h"
#include "sql/sql_text.h"

namespace sluice::sql::pg {

namespace {

constexpr size_t no_token = static_cast<size_t>(-1);
// Statements are tokenized whole; larger ones are bulk INSERTs, not queries.
constexpr size_t max_rewritten_size = 1 << 20;
// Each pass rewrites the outermost INs; the ones inside them come in the next pass.
constexpr int max_passes = 8;

bool is_any_word(const token& t, std::initializer_list<std::string_view> words) {
    for (auto w : words)
        if (t.is_word(w)) return true;
    return false;
}

// The words that never name a column or a table in the shapes rewritten.
bool is_reserved(const token& t) {
    return is_any_word(t, {"SELECT", "FROM",  "WHERE", "AND",   "OR",        "NOT",
                           "ON",     "IN",    "EXISTS", "CASE", "WHEN",      "THEN",
                           "ELSE",   "END",   "IS",    "NULL",  "LIKE",      "BETWEEN",
                           "GROUP",  "ORDER", "LIMIT", "HAVING", "UNION",    "EXCEPT",
                           "INTERSECT", "WINDOW", "DISTINCT", "ALL", "AS", "JOIN",
                           "LEFT", "RIGHT", "FULL", "INNER", "OUTER", "CROSS", "NATURAL",
                           "USING", "INDEXED"});
}

class rewriter {
  public:
    explicit rewriter(std::string_view sql) : _sql(sql) {
        tokenizer tz(sql);
        for (token t = tz.next(); t.k != token::kind::end; t = tz.next()) _toks.push_back(t);
        _match.assign(_toks.size(), no_token);
        std::vector<size_t> open;
        for (size_t i = 0; i < _toks.size(); ++i) {
            if (_toks[i].is_punct('(')) {
                open.push_back(i);
            } else if (_toks[i].is_punct(')') && !open.empty()) {
                _match[i] = open.back();
                _match[open.back()] = i;
                open.pop_back();
            }
        }
    }

    std::optional<std::string> run() const {
        std::string out;
        size_t src = 0;
        bool changed = false;
        for (size_t i = 0; i < _toks.size(); ++i) {
            size_t s = 0, e = 0;
            std::string text;
            if (!_toks[i].is_word("IN") || !rewrite_at(i, s, e, text)) continue;
            out += _sql.substr(src, _toks[s].begin - src);
            out += text;
            src = _toks[e].end;
            changed = true;
            i = e;
        }
        if (!changed) return std::nullopt;
        out += _sql.substr(src);
        return out;
    }

  private:
    const token& at(size_t i) const {
        static const token end_token;
        return i < _toks.size() ? _toks[i] : end_token;
    }
    // The source text of tokens [a, b].
    std::string_view span(size_t a, size_t b) const {
        return _sql.substr(_toks[a].begin, _toks[b].end - _toks[a].begin);
    }
    bool is_name(size_t i) const {
        return i < _toks.size() && (at(i).k == token::kind::quoted ||
                                    (at(i).k == token::kind::word && !is_reserved(at(i))));
    }
    // The first token of the name chain (a.b.c) that ends at token `last`, or no_token.
    size_t chain_start(size_t last) const {
        if (!is_name(last)) return no_token;
        size_t s = last;
        while (s >= 2 && at(s - 1).is_punct('.') && is_name(s - 2)) s -= 2;
        return s;
    }
    // Past the name chain that starts at token `first`: its last token, or no_token.
    size_t chain_end(size_t first) const {
        if (!is_name(first)) return no_token;
        size_t e = first;
        while (at(e + 1).is_punct('.') && is_name(e + 2)) e += 2;
        return e;
    }

    // Whether the condition starting at token s is one of those a WHERE, ON or HAVING
    // joins with AND and OR, at the clause's level or in parentheses that are such a
    // condition themselves: no NOT before it, no CASE or BETWEEN around it. Under AND
    // and OR alone, a NULL that becomes false leaves every true result true.
    bool in_condition_list(size_t s) const {
        if (s == 0 || (!is_any_word(at(s - 1), {"WHERE", "ON", "HAVING", "AND", "OR"}) &&
                       !at(s - 1).is_punct('(')))
            return false;
        for (size_t k = s; k-- > 0;) {
            const token& t = at(k);
            if (t.is_punct(')')) {
                if (_match[k] == no_token) return false;
                k = _match[k];
                continue;
            }
            if (t.is_punct('('))
                return _match[k] != no_token && ends_condition(_match[k] + 1) &&
                       in_condition_list(k);
            if (t.is_punct(';')) return false;
            if (is_any_word(t, {"CASE", "WHEN", "THEN", "ELSE", "END", "SELECT", "BETWEEN"}))
                return false;
            if (is_any_word(t, {"WHERE", "ON", "HAVING"})) return true;
        }
        return false;
    }

    // Whether token j can follow a condition of such a list.
    bool ends_condition(size_t j) const {
        if (j >= _toks.size()) return true;
        const token& t = at(j);
        return t.is_punct(')') || t.is_punct(';') ||
               is_any_word(t, {"AND", "OR", "GROUP", "ORDER", "LIMIT", "HAVING", "UNION",
                               "EXCEPT", "INTERSECT", "WINDOW", "JOIN", "LEFT", "INNER",
                               "CROSS", "NATURAL", "WHERE", "RETURNING"});
    }

    // The names the FROM clause in tokens [from, where) gives its tables: each item's
    // alias, else its table's name (the last part of schema.table).
    std::set<std::string> from_names(size_t from, size_t where) const {
        std::set<std::string> names;
        bool expect_item = true;
        for (size_t j = from; j < where; ++j) {
            if (at(j).is_punct(',') || at(j).is_word("JOIN")) {
                expect_item = true;
                continue;
            }
            if (at(j).is_punct('(') && _match[j] != no_token && !expect_item) {
                j = _match[j];
                continue;
            }
            if (!expect_item) continue;
            expect_item = false;
            size_t last = j;
            if (at(j).is_punct('(') && _match[j] != no_token) {
                last = _match[j];  // a subquery, named by its alias only
            } else {
                last = chain_end(j);
                if (last == no_token) continue;
                if (at(last + 1).is_punct('(') && _match[last + 1] != no_token)
                    last = _match[last + 1];  // a table-valued function
            }
            size_t alias = last + 1;
            if (at(alias).is_word("AS")) ++alias;
            if (alias < where && is_name(alias)) {
                names.insert(to_lower(at(alias).text));
                j = alias;
            } else {
                if (!at(last).is_punct(')')) names.insert(to_lower(at(last).text));
                j = last;
            }
        }
        return names;
    }

    // Whether the WHERE (tokens (where, e)) of a subquery with FROM tokens [from, where)
    // names a table the FROM does not: a qualifier outside nested SELECTs that is none of
    // the FROM's names.
    bool correlated(size_t from, size_t where, size_t e) const {
        const std::set<std::string> names = from_names(from, where);
        for (size_t j = where + 1; j < e; ++j) {
            if (at(j).is_punct('(') && at(j + 1).is_word("SELECT") && _match[j] != no_token) {
                j = _match[j];
                continue;
            }
            if (is_name(j) && at(j + 1).is_punct('.') && is_name(j + 2) &&
                !at(j - 1).is_punct('.') && !names.count(to_lower(at(j).text)))
                return true;
        }
        return false;
    }

    // The IN at token i, from its column operand (token s) to the subquery's ')' (token
    // e), as EXISTS in `text`; false when it is not one of the shapes rewritten.
    bool rewrite_at(size_t i, size_t& s, size_t& e, std::string& text) const {
        if (i == 0 || !at(i + 1).is_punct('(') || _match[i + 1] == no_token ||
            !at(i + 2).is_word("SELECT"))
            return false;
        s = chain_start(i - 1);
        if (s == no_token || !in_condition_list(s)) return false;
        e = _match[i + 1];
        if (!ends_condition(e + 1)) return false;
        size_t col = i + 3;
        if (at(col).is_word("DISTINCT") || at(col).is_word("ALL")) ++col;
        const size_t col_end = chain_end(col);
        if (col_end == no_token || !at(col_end + 1).is_word("FROM")) return false;
        const size_t from = col_end + 2;
        size_t where = no_token;
        for (size_t j = from; j < e; ++j) {
            if (at(j).is_punct('(')) {
                if (_match[j] == no_token || _match[j] > e) return false;
                j = _match[j];
                continue;
            }
            if (is_any_word(at(j), {"GROUP", "ORDER", "LIMIT", "HAVING", "UNION", "EXCEPT",
                                    "INTERSECT", "WINDOW"}))
                return false;
            if (at(j).is_word("WHERE")) {
                if (where != no_token) return false;
                where = j;
            }
        }
        if (where == no_token || where == from || where + 1 >= e || !correlated(from, where, e))
            return false;
        text = fmt::format("EXISTS (SELECT 1 FROM {} WHERE ({}) AND {} = {})",
                           span(from, where - 1), span(where + 1, e - 1), span(col, col_end),
                           span(s, i - 1));
        return true;
    }

    std::string_view _sql;
    std::vector<token> _toks;
    std::vector<size_t> _match;  // the other parenthesis of each '(' and ')'
};

// Whether `sql` names SELECT twice (case ignored, in or out of quotes): a cheap first
// look before tokenizing.
bool has_subquery(std::string_view sql) {
    const std::string lower = to_lower(sql);
    const size_t first = lower.find("select");
    return first != std::string::npos && lower.find("select", first + 6) != std::string::npos;
}

}  // namespace

std::optional<std::string> rewrite_correlated_in(std::string_view sql) {
    if (sql.size() > max_rewritten_size || !has_subquery(sql)) return std::nullopt;
    std::optional<std::string> out;
    for (int pass = 0; pass < max_passes; ++pass) {
        auto next = rewriter(out ? std::string_view(*out) : sql).run();
        if (!next) break;
        out = std::move(next);
    }
    return out;
}

}  // namespace sluice::sql::pg

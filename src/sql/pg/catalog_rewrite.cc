#include "sql/pg/catalog_rewrite.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <optional>
#include <vector>

#include "sql/pg/lexer.h"

namespace sluice::sql::pg {

namespace {

using tokens = std::vector<token>;
using kind = token::kind;

tokens lex(std::string_view s) {
    tokens out;
    tokenizer tz(s);
    for (token t = tz.next(); t.k != kind::end; t = tz.next()) out.push_back(t);
    return out;
}

bool adjacent(const token& a, const token& b) {
    return a.end == b.begin;
}

bool is_name(const token& t) {
    return t.k == kind::word || t.k == kind::quoted;
}

// Words that end or join expressions: never an operand, nor a function's name.
bool is_keyword(const token& t) {
    static constexpr std::array<std::string_view, 28> words = {
        "AND",  "OR",   "NOT",   "IN",     "IS",     "SELECT", "WHERE",  "WHEN",  "THEN",  "ELSE",
        "CASE", "ON",   "FROM",  "BY",     "AS",     "LIKE",   "EXISTS", "JOIN",  "VALUES", "SET",
        "ANY",  "ALL",  "SOME",  "HAVING", "UNION",  "RETURNING", "DISTINCT", "BETWEEN"};
    if (t.k != kind::word) return false;
    return std::any_of(words.begin(), words.end(), [&](std::string_view w) { return t.is_word(w); });
}

bool ends_operand(const token& t) {
    if (t.k == kind::word) return !is_keyword(t);
    return t.k == kind::quoted || t.k == kind::string || t.k == kind::number || t.is_punct(')') ||
           t.is_punct(']');
}

// The index of the bracket closing the one at `open` ('(' or '['), or t.size().
size_t match_close(const tokens& t, size_t open) {
    const char o = t[open].text[0], c = o == '(' ? ')' : ']';
    int depth = 0;
    for (size_t i = open; i < t.size(); ++i) {
        if (t[i].is_punct(o)) ++depth;
        if (t[i].is_punct(c) && --depth == 0) return i;
    }
    return t.size();
}

size_t match_open(const tokens& t, size_t close) {
    const char c = t[close].text[0], o = c == ')' ? '(' : '[';
    int depth = 0;
    for (size_t i = close + 1; i-- > 0;) {
        if (t[i].is_punct(c)) ++depth;
        if (t[i].is_punct(o) && --depth == 0) return i;
    }
    return 0;
}

// The first token of the operand that ends at token `i`: a literal, a (qualified)
// name, a parenthesized expression, or a function call.
size_t operand_start(const tokens& t, size_t i) {
    size_t j = i;
    if (t[j].is_punct(')')) {
        j = match_open(t, j);
        if (j > 0 && is_name(t[j - 1]) && !is_keyword(t[j - 1])) --j;
        else return j;
    }
    while (j >= 2 && t[j - 1].is_punct('.') && is_name(t[j - 2])) j -= 2;
    return j;
}

std::string_view text_of(std::string_view s, const tokens& t, size_t from, size_t to) {
    return s.substr(t[from].begin, t[to].end - t[from].begin);
}

// Replaces tokens [from, to] by `with`.
void splice(std::string& s, const tokens& t, size_t from, size_t to, std::string_view with) {
    s.replace(t[from].begin, t[to].end - t[from].begin, with);
}

// ---- the rewrites: each makes at most one change and says whether it did ----

// E'...' with backslash escapes -> a standard string.
bool escape_string(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (!(t[i].is_word("E") && t[i + 1].k == kind::string && adjacent(t[i], t[i + 1])))
            continue;
        std::string body;
        const auto raw = t[i + 1].text;
        for (size_t k = 0; k < raw.size(); ++k) {
            char ch = raw[k];
            if (ch == '\\' && k + 1 < raw.size()) {
                char e = raw[++k];
                ch = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e;
            }
            body += ch;
            if (ch == '\'') body += '\'';
        }
        splice(s, t, i, i + 1, "'" + body + "'");
        return true;
    }
    return false;
}

// OPERATOR(pg_catalog.~) -> ~ (and the other operators alike).
bool operator_syntax(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (!t[i].is_word("OPERATOR") || !t[i + 1].is_punct('(')) continue;
        const size_t close = match_close(t, i + 1);
        if (close >= t.size()) return false;
        std::string op;
        for (size_t k = i + 2; k < close; ++k)
            if (t[k].k == kind::punct && !t[k].is_punct('.')) op += t[k].text;
        splice(s, t, i, close, " " + op + " ");
        return true;
    }
    return false;
}

// COLLATE pg_catalog.default / "default" / "C": SQLite's default (binary) collation.
bool default_collation(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (!t[i].is_word("COLLATE")) continue;
        size_t last = i + 1;
        if (last + 2 < t.size() && t[last].is_word("pg_catalog") && t[last + 1].is_punct('.'))
            last += 2;
        if (last >= t.size()) return false;
        const auto name = t[last].text;
        if (name == "default" || name == "C" || name == "POSIX") {
            splice(s, t, i, last, "");
            return true;
        }
    }
    return false;
}

// pg_catalog.f( -> f(; information_schema.f( -> f(
bool qualified_function(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 3 < t.size(); ++i)
        if ((t[i].is_word("pg_catalog") || t[i].is_word("information_schema")) &&
            t[i + 1].is_punct('.') && t[i + 2].k == kind::word && t[i + 3].is_punct('(') &&
            (i == 0 || !t[i - 1].is_punct('.'))) {
            splice(s, t, i, i + 1, "");
            return true;
        }
    return false;
}

// a ~ b, a !~ b, a ~* b, a !~* b
bool regex_match(std::string& s, const tokens& t) {
    for (size_t i = 1; i < t.size(); ++i) {
        if (!t[i].is_punct('~')) continue;
        size_t from = i;
        const bool negated = t[i - 1].is_punct('!') && adjacent(t[i - 1], t[i]);
        if (negated) --from;
        if (from == 0 || !ends_operand(t[from - 1])) continue;  // unary ~: SQLite's bit not
        size_t to = i;
        const bool icase = i + 1 < t.size() && t[i + 1].is_punct('*') && adjacent(t[i], t[i + 1]);
        if (icase) ++to;
        splice(s, t, from, to,
               fmt::format(" {}REGEXP {}", negated ? "NOT " : "", icase ? "'(?i)' || " : ""));
        return true;
    }
    return false;
}

// What x::type becomes.
std::string cast_to(std::string_view operand, std::string type) {
    type = to_lower(type);
    const bool array = type.size() > 2 && type.substr(type.size() - 2) == "[]";
    if (array) return fmt::format("({})", operand);
    if (type == "regclass") return fmt::format("pg_regclass({})", operand);
    if (type == "regtype") return fmt::format("pg_regtype({})", operand);
    if (type == "regnamespace") return fmt::format("pg_regnamespace({})", operand);
    static const std::array<std::string_view, 10> text = {
        "text", "name", "varchar", "char", "\"char\"", "bpchar", "character varying", "character",
        "regproc", "regprocedure"};
    static const std::array<std::string_view, 9> integer = {
        "int", "int2", "int4", "int8", "integer", "bigint", "smallint", "oid", "xid"};
    static const std::array<std::string_view, 6> real = {
        "float4", "float8", "real", "double precision", "numeric", "decimal"};
    auto in = [&](const auto& list) {
        return std::find(list.begin(), list.end(), type) != list.end();
    };
    // x::regclass::text is the relation's name, whichever way x names it.
    if (in(text) && operand.starts_with("pg_regclass(") && operand.ends_with(")"))
        return fmt::format("pg_regclass_text{}", operand.substr(11));
    if (in(text)) return fmt::format("CAST({} AS TEXT)", operand);
    if (in(integer)) return fmt::format("CAST({} AS INTEGER)", operand);
    if (in(real)) return fmt::format("CAST({} AS REAL)", operand);
    return fmt::format("({})", operand);  // int2vector, bool, ...: the value as it is
}

// x::type, x::pg_catalog.type, x::character varying(10), x::int2[]
bool cast(std::string& s, const tokens& t) {
    for (size_t i = 1; i + 2 < t.size(); ++i) {
        if (!(t[i].is_punct(':') && t[i + 1].is_punct(':') && adjacent(t[i], t[i + 1]))) continue;
        const size_t start = operand_start(t, i - 1);
        size_t k = i + 2;
        if (t[k].is_word("pg_catalog") && k + 2 < t.size() && t[k + 1].is_punct('.')) k += 2;
        if (!is_name(t[k])) return false;
        std::string type = t[k].k == kind::quoted ? "\"" + std::string(t[k].text) + "\""
                                                  : std::string(t[k].text);
        size_t last = k;
        for (const char* second : {"precision", "varying"})
            if (last + 1 < t.size() && t[last + 1].is_word(second))
                type += " " + std::string(t[++last].text);
        if (last + 1 < t.size() && t[last + 1].is_punct('(')) last = match_close(t, last + 1);
        if (last + 2 < t.size() && t[last + 1].is_punct('[') && t[last + 2].is_punct(']')) {
            type += "[]";
            last += 2;
        }
        if (last >= t.size()) return false;
        splice(s, t, start, last, cast_to(text_of(s, t, start, i - 1), type));
        return true;
    }
    return false;
}

// x = ANY (arr) -> x IN (...); x <> ALL (arr) -> x NOT IN (...)
bool any_all(std::string& s, const tokens& t) {
    for (size_t i = 1; i + 1 < t.size(); ++i) {
        const bool any = t[i].is_word("ANY") || t[i].is_word("SOME");
        if (!(any || t[i].is_word("ALL")) || !t[i + 1].is_punct('(')) continue;
        size_t op = i - 1;
        const bool eq = t[op].is_punct('=');
        const bool ne = (t[op].is_punct('>') && op > 0 && t[op - 1].is_punct('<')) ||
                        (t[op].is_punct('=') && op > 0 && t[op - 1].is_punct('!'));
        if (ne) --op;
        if (!(any && eq && !ne) && !(!any && ne)) continue;
        const size_t close = match_close(t, i + 1);
        if (close >= t.size()) return false;
        const auto inner = text_of(s, t, i + 2, close - 1);
        const bool query = t[i + 2].is_word("SELECT") || t[i + 2].is_word("WITH");
        const std::string list =
            query ? fmt::format("({})", inner)
                  : fmt::format("(SELECT value FROM json_each(pg_array_json({})))", inner);
        splice(s, t, op, close, fmt::format("{}IN {}", any ? "" : "NOT ", list));
        return true;
    }
    return false;
}

// ARRAY(SELECT y FROM ...) -> (SELECT pg_array_agg(_v) FROM (SELECT y AS _v FROM ...))
bool array_subquery(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 2 < t.size(); ++i) {
        if (!t[i].is_word("ARRAY") || !t[i + 1].is_punct('(') || !t[i + 2].is_word("SELECT"))
            continue;
        const size_t close = match_close(t, i + 1);
        if (close >= t.size()) return false;
        // The end of the single select item: the FROM (or the end) at this depth.
        size_t end = close, depth = 0;
        for (size_t k = i + 3; k < close; ++k) {
            if (t[k].is_punct('(')) ++depth;
            if (t[k].is_punct(')')) --depth;
            if (depth == 0 && t[k].is_word("FROM")) {
                end = k;
                break;
            }
        }
        const std::string item(text_of(s, t, i + 3, end - 1));
        const std::string rest = end < close ? std::string(text_of(s, t, end, close - 1)) : "";
        splice(s, t, i, close,
               fmt::format("(SELECT pg_array_agg(_v) FROM (SELECT {} AS _v {}))", item, rest));
        return true;
    }
    return false;
}

// arr[i] -> pg_array_get(arr, i)
bool subscript(std::string& s, const tokens& t) {
    for (size_t i = 1; i + 1 < t.size(); ++i) {
        if (!t[i].is_punct('[') || !adjacent(t[i - 1], t[i]) || !ends_operand(t[i - 1])) continue;
        if (t[i - 1].k == kind::string || t[i - 1].k == kind::number) continue;
        const size_t close = match_close(t, i);
        if (close >= t.size() || close == i + 1) continue;
        const size_t start = operand_start(t, i - 1);
        splice(s, t, start, close,
               fmt::format("pg_array_get({}, {})", text_of(s, t, start, i - 1),
                           text_of(s, t, i + 1, close - 1)));
        return true;
    }
    return false;
}

// Where the FROM list of the SELECT whose select list holds token `at` ends (the
// offset in `s` to insert a joined table at), or nullopt.
std::optional<size_t> from_list_end(const tokens& t, size_t at) {
    // Back to the SELECT enclosing the call: out of the parentheses around it, not into
    // those of the expressions before it.
    int level = 0, outer = 0;
    size_t select = t.size();
    for (size_t i = at + 1; i-- > 0;) {
        if (t[i].is_punct(')')) ++level;
        if (t[i].is_punct('(')) outer = std::min(outer, --level);
        if (level == outer && t[i].is_word("SELECT")) {
            select = i;
            break;
        }
    }
    if (select == t.size()) return std::nullopt;
    int depth = 0;
    bool in_from = false;
    for (size_t i = select + 1; i < t.size(); ++i) {
        if (t[i].is_punct('(')) ++depth;
        if (t[i].is_punct(')')) {
            if (depth == 0) return in_from ? std::optional(t[i].begin) : std::nullopt;
            --depth;
        }
        if (depth != 0) continue;
        if (t[i].is_word("FROM")) {
            if (i < at) return std::nullopt;  // the call is in FROM, not in the select list
            in_from = true;
        }
        if (!in_from || t[i].k != kind::word) continue;
        for (const char* w : {"WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "WINDOW", "UNION",
                              "EXCEPT", "INTERSECT"})
            if (t[i].is_word(w)) return t[i].begin;
    }
    return in_from ? std::optional(t.back().end) : std::nullopt;
}

// unnest(a), generate_subscripts(a, 1), _pg_expandarray(a) in a select list: the array's
// elements joined to the FROM list (json_each), one row per element.
bool set_returning(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        const bool unnest = t[i].is_word("unnest"), subs = t[i].is_word("generate_subscripts"),
                   expand = t[i].is_word("_pg_expandarray");
        if (!(unnest || subs || expand) || !t[i + 1].is_punct('(')) continue;
        if (i > 0 && t[i - 1].is_punct('.')) continue;
        const size_t close = match_close(t, i + 1);
        if (close >= t.size()) return false;
        size_t arg_end = close;  // generate_subscripts(a, dim): the array is before the ','
        for (size_t k = i + 2, d = 0; k < close; ++k) {
            if (t[k].is_punct('(')) ++d;
            if (t[k].is_punct(')')) --d;
            if (d == 0 && t[k].is_punct(',')) {
                arg_end = k;
                break;
            }
        }
        const std::string array(text_of(s, t, i + 2, arg_end - 1));
        const auto insert_at = from_list_end(t, i);
        if (!insert_at) return false;
        // One alias per array and position, so that unnest and generate_subscripts of one
        // array in one select list walk it together.
        const std::string alias = fmt::format("_srf{}", std::hash<std::string>{}(array) % 100000);
        const std::string join = fmt::format(", json_each(pg_array_json({})) AS {} ", array, alias);
        const std::string with = unnest ? alias + ".value"
                                 : subs ? fmt::format("({}.key + 1)", alias)
                                        : fmt::format("json_object('x', {0}.value, 'n', {0}.key + 1)",
                                                      alias);
        const bool joined = s.find(join) != std::string::npos;
        // Insert first (it lies after the call), then replace the call.
        if (!joined) s.insert(*insert_at, " " + join);
        splice(s, t, i, close, with);
        return true;
    }
    return false;
}

// (composite).field -> json_extract(composite, '$.field')
bool field_access(std::string& s, const tokens& t) {
    for (size_t i = 1; i + 2 < t.size(); ++i) {
        if (!t[i].is_punct(')') || !t[i + 1].is_punct('.') || t[i + 2].k != kind::word) continue;
        if (!adjacent(t[i], t[i + 1])) continue;
        const size_t open = match_open(t, i);
        if (open > 0 && is_name(t[open - 1]) && !is_keyword(t[open - 1])) continue;  // f(x).y
        splice(s, t, open, i + 2,
               fmt::format("json_extract({}, '$.{}')", text_of(s, t, open, i), t[i + 2].text));
        return true;
    }
    return false;
}

// FROM generate_series(...) s, FROM unnest(arr) x: PostgreSQL lets the alias stand for
// the function's value (x.value here); unnest becomes json_each over the array.
bool function_alias(std::string& s, const tokens& t) {
    for (size_t i = 1; i + 1 < t.size(); ++i) {
        const bool unnest = t[i].is_word("unnest");
        // json_each(pg_array_json(...)): an unnest rewritten, whose alias is yet to map.
        const bool array = t[i].is_word("json_each") && i + 2 < t.size() &&
                           t[i + 2].is_word("pg_array_json");
        if (!(unnest || array || t[i].is_word("generate_series")) || !t[i + 1].is_punct('('))
            continue;
        if (!t[i - 1].is_word("FROM") && !t[i - 1].is_punct(',') && !t[i - 1].is_word("JOIN"))
            continue;
        const size_t close = match_close(t, i + 1);
        if (close >= t.size()) return false;
        if (unnest) {
            splice(s, t, i, close,
                   fmt::format("json_each(pg_array_json({}))", text_of(s, t, i + 2, close - 1)));
            return true;
        }
        size_t a = close + 1;
        if (a < t.size() && t[a].is_word("AS")) ++a;
        if (a >= t.size() || t[a].k != kind::word || is_keyword(t[a])) continue;
        for (size_t k = t.size(); k-- > 0;) {
            if (k == a || !t[k].is_word(t[a].text)) continue;
            if ((k > 0 && t[k - 1].is_punct('.')) || (k + 1 < t.size() && t[k + 1].is_punct('.')))
                continue;
            splice(s, t, k, k, std::string(t[k].text) + ".value");
            return true;
        }
    }
    return false;
}

// bool_column = 't' (or 'f', 'true', 'false'): PostgreSQL's boolean literals, against the
// catalog's boolean columns, which hold 1 and 0 in SQLite.
bool bool_literal(std::string& s, const tokens& t) {
    static constexpr std::array<std::string_view, 6> prefixes = {"ind", "att", "rel", "con",
                                                                 "rol", "dat"};
    for (size_t i = 0; i + 2 < t.size(); ++i) {
        if (t[i].k != kind::word || !t[i + 1].is_punct('=') || t[i + 2].k != kind::string)
            continue;
        const auto col = to_lower(t[i].text);
        const auto lit = to_lower(t[i + 2].text);
        if (lit != "t" && lit != "f" && lit != "true" && lit != "false") continue;
        // The boolean columns: ind/att/rel/con/rol/dat + is/has/not/can/... ; relkind = 't'
        // (a TOAST table) is text and not one of them.
        const bool boolean =
            std::any_of(prefixes.begin(), prefixes.end(),
                        [&](std::string_view p) { return col.starts_with(p); }) &&
            (col.find("is", 3) == 3 || col.find("has", 3) == 3 || col == "attnotnull" ||
             col.starts_with("condefer") || col.starts_with("rolcan") ||
             col.starts_with("rolsuper") || col.starts_with("rolcreate") ||
             col.starts_with("datallow"));
        if (!boolean) continue;
        splice(s, t, i + 2, i + 2, lit[0] == 't' ? "1" : "0");
        return true;
    }
    return false;
}

// AS default: column aliases PostgreSQL takes that are SQLite keywords, quoted.
bool keyword_alias(std::string& s, const tokens& t) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
        if (!t[i].is_word("AS") || t[i + 1].k != kind::word) continue;
        for (const char* w : {"DEFAULT", "CHECK", "ORDER", "GROUP", "TABLE", "INDEX", "PRIMARY",
                              "UNIQUE", "REFERENCES", "COLLATE", "KEY"})
            if (t[i + 1].is_word(w)) return splice(s, t, i + 1, i + 1, "\"" + to_lower(w) + "\""), true;
    }
    return false;
}

// Bare current_user & co. -> calls; PostgreSQL functions with SQLite names.
bool renamed_functions(std::string& s, const tokens& t) {
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i].k != kind::word || (i > 0 && t[i - 1].is_punct('.'))) continue;
        const bool call = i + 1 < t.size() && t[i + 1].is_punct('(');
        if (call && t[i].is_word("string_agg")) return splice(s, t, i, i, "group_concat"), true;
        if (call && t[i].is_word("json_build_object"))
            return splice(s, t, i, i, "json_object"), true;
        if (call) continue;
        for (const char* w : {"current_user", "session_user", "current_role", "current_schema"})
            if (t[i].is_word(w)) return splice(s, t, i, i, to_lower(w) + "()"), true;
        if (t[i].is_word("current_catalog")) return splice(s, t, i, i, "current_database()"), true;
    }
    return false;
}

}  // namespace

bool names_catalog(std::string_view sql) {
    const std::string lower = to_lower(sql);
    for (const char* word : {"pg_", "information_schema", "current_user", "session_user",
                             "current_role", "current_catalog", "current_schema", "regclass",
                             "regtype", "regnamespace", "regproc"})
        if (lower.find(word) != std::string::npos) return true;
    return false;
}

std::string rewrite_catalog_sql(std::string_view sql) {
    using rewrite = bool (*)(std::string&, const tokens&);
    // In this order: literals and operators first, so that casts and calls see plain
    // operands; each construct rewritten leaves none of its kind behind, so the loop ends.
    static constexpr rewrite rewrites[] = {
        escape_string, operator_syntax, default_collation, qualified_function, regex_match,
        renamed_functions, keyword_alias, bool_literal, function_alias, cast, any_all, array_subquery, subscript, set_returning, field_access};
    std::string s(sql);
    // Bounded: a catalog query needs a few dozen rewrites.
    for (int round = 0; round < 10'000; ++round) {
        const auto t = lex(s);
        bool changed = false;
        for (auto r : rewrites)
            if ((changed = r(s, t))) break;
        if (!changed) break;
    }
    return s;
}

}  // namespace sluice::sql::pg

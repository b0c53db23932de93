#include "sql/pg/pg_dialect.h"

#include <algorithm>
#include <initializer_list>
#include <utility>
#include <vector>

#include "sql/pg/lexer.h"
#include "sql/sql_text.h"

namespace sluice::sql::pg {

namespace {

constexpr size_t none = std::string::npos;
constexpr size_t max_translated_size = 4 << 20;

// Whether `sql` holds '::' or a word that a rewrite starts from (case ignored), in or
// out of quotes: a cheap first look before tokenizing.
bool might_need_translation(std::string_view sql) {
    if (sql.find("::") != std::string_view::npos) return true;
    const std::string lower = to_lower(sql);
    if (sql.find('\\') != std::string_view::npos && lower.find("like") != std::string::npos)
        return true;
    // db.schema.table after FROM or JOIN: at least two dots.
    if (std::count(sql.begin(), sql.end(), '.') >= 2 &&
        (lower.find("from") != std::string::npos || lower.find("join") != std::string::npos))
        return true;
    for (const char* w : {"ilike", "offset", "fetch", "limit", "extract", "string_agg", "interval",
                          "timestamp", "date", "zone", "cast", "over", "filter"})
        if (lower.find(w) != std::string::npos) return true;
    return false;
}

// Words after which an operand cannot end: the expression before '::' is never one of
// them, and a '(' after them opens a group, not a function's arguments.
bool is_keyword(const token& t) {
    static constexpr std::string_view words[] = {
        "SELECT", "FROM",   "WHERE",     "AND",   "OR",    "NOT",    "AS",     "ON",
        "IN",     "IS",     "LIKE",      "GLOB",  "BETWEEN", "CASE", "WHEN",   "THEN",
        "ELSE",   "END",    "GROUP",     "ORDER", "BY",    "HAVING", "LIMIT",  "OFFSET",
        "UNION",  "ALL",    "DISTINCT",  "JOIN",  "USING", "WITH",   "VALUES", "SET",
        "INTO",   "INSERT", "UPDATE",    "DELETE", "EXISTS", "RETURNING", "DESC", "ASC",
        "ESCAPE", "EXCEPT", "INTERSECT", "OVER",  "FILTER", "WINDOW"};
    if (t.k != token::kind::word) return false;
    for (auto w : words)
        if (t.is_word(w)) return true;
    return false;
}

// What `x::type` becomes, by the type's words (upper-case, spaces between): a format
// with one %s for the operand. nullopt: not a type translated here.
std::optional<std::string_view> cast_format(const std::string& type) {
    struct mapping {
        std::string_view type;
        std::string_view format;
    };
    static constexpr mapping table[] = {
        {"TEXT", "CAST(%s AS TEXT)"},
        {"VARCHAR", "CAST(%s AS TEXT)"},
        {"CHAR", "CAST(%s AS TEXT)"},
        {"CHARACTER", "CAST(%s AS TEXT)"},
        {"CHARACTER VARYING", "CAST(%s AS TEXT)"},
        {"BPCHAR", "CAST(%s AS TEXT)"},
        {"NAME", "CAST(%s AS TEXT)"},
        {"UUID", "CAST(%s AS TEXT)"},
        {"INT", "CAST(%s AS INTEGER)"},
        {"INTEGER", "CAST(%s AS INTEGER)"},
        {"INT2", "CAST(%s AS INTEGER)"},
        {"INT4", "CAST(%s AS INTEGER)"},
        {"INT8", "CAST(%s AS INTEGER)"},
        {"SMALLINT", "CAST(%s AS INTEGER)"},
        {"BIGINT", "CAST(%s AS INTEGER)"},
        {"FLOAT", "CAST(%s AS REAL)"},
        {"FLOAT4", "CAST(%s AS REAL)"},
        {"FLOAT8", "CAST(%s AS REAL)"},
        {"REAL", "CAST(%s AS REAL)"},
        {"DOUBLE PRECISION", "CAST(%s AS REAL)"},
        {"NUMERIC", "CAST(%s AS NUMERIC)"},
        {"DECIMAL", "CAST(%s AS NUMERIC)"},
        {"BOOL", "pg_cast_bool(%s)"},
        {"BOOLEAN", "pg_cast_bool(%s)"},
        {"BYTEA", "pg_cast_bytea(%s)"},
        {"TIMESTAMP", "pg_cast_timestamptz(%s)"},
        {"TIMESTAMPTZ", "pg_cast_timestamptz(%s)"},
        {"TIMESTAMP WITH TIME ZONE", "pg_cast_timestamptz(%s)"},
        {"TIMESTAMP WITHOUT TIME ZONE", "pg_cast_timestamptz(%s)"},
        {"DATE", "pg_cast_date(%s)"},
        {"JSON", "pg_cast_json(%s)"},
    };
    if (type == "JSONB") return "pg_cast_json(%s)";
    for (const auto& m : table)
        if (m.type == type) return m.format;
    return std::nullopt;
}

std::string apply_format(std::string_view format, std::string_view operand) {
    std::string out;
    auto at = format.find("%s");
    out += format.substr(0, at);
    out += operand;
    out += format.substr(at + 2);
    return out;
}

struct frame {
    size_t start = 0;     // output position where the group (or function call) starts
    bool is_case = false;  // CASE ... END
    bool has_limit = false;
    size_t offset_at = none;  // output position of an OFFSET that has no LIMIT yet
    bool select_list = false;  // between SELECT and FROM (or the clause that ends it)
    size_t item_start = none;  // output position where the current select item starts
    std::string alias;  // a call rewritten to another name: the column name PostgreSQL gives
    bool is_cast = false;  // CAST( ... ): its AS type may be one SQLite's CAST gets wrong
};

// The column name PostgreSQL gives `x::type` in a select list: the operand's, when it
// is a column (its last part) or a call (the function's name), folded to lower case
// unless quoted. Empty for anything else (SQLite's name for the expression stays).
std::string operand_name(std::string_view operand) {
    tokenizer tz(operand);
    token first = tz.next();
    if (first.k == token::kind::word && tz.peek().is_punct('(')) {
        int depth = 0;
        for (token t = tz.next(); t.k != token::kind::end; t = tz.next()) {
            if (t.is_punct('(')) ++depth;
            if (t.is_punct(')') && --depth == 0) {
                token after = tz.next();  // a window or filter belongs to the call
                if (after.k != token::kind::end && !after.is_word("OVER") &&
                    !after.is_word("FILTER"))
                    return {};
                if (first.is_word("pg_extract")) return "extract";
                return first.is_word("group_concat") ? "string_agg" : to_lower(first.text);
            }
        }
        return {};
    }
    token last = first;
    for (;;) {
        if (last.k != token::kind::word && last.k != token::kind::quoted) return {};
        token t = tz.next();
        if (t.k == token::kind::end) break;
        if (!t.is_punct('.')) return {};
        last = tz.next();
    }
    if (last.k == token::kind::quoted) return unquote(last.text, '"');
    return to_lower(last.text);
}

bool ends_select_list(const token& t) {
    // Not OFFSET: the topic tables have a column of that name.
    for (auto w : {"FROM", "WHERE", "GROUP", "ORDER", "LIMIT", "HAVING", "UNION", "EXCEPT",
                   "INTERSECT", "WINDOW", "INTO"})
        if (t.is_word(w)) return true;
    return false;
}

class translator {
  public:
    explicit translator(std::string_view sql) : _sql(sql) {
        tokenizer tz(sql);
        for (token t = tz.next(); t.k != token::kind::end; t = tz.next()) _toks.push_back(t);
        push_frame(0);
    }

    std::optional<std::string> run() {
        for (size_t i = 0; i < _toks.size();) i = step(i);
        while (!_frames.empty()) close_frame();
        if (!_changed) return std::nullopt;
        _out += _sql.substr(_src);
        return _out;
    }

  private:
    const token& at(size_t i) const {
        static const token end_token;
        return i < _toks.size() ? _toks[i] : end_token;
    }
    std::string_view raw(size_t i) const {
        return _sql.substr(_toks[i].begin, _toks[i].end - _toks[i].begin);
    }
    bool adjacent(size_t i) const { return i > 0 && at(i).begin == at(i - 1).end; }
    bool is_name(size_t i) const {
        return at(i).k == token::kind::quoted || (at(i).k == token::kind::word && !is_keyword(at(i)));
    }
    // db.schema.table at i (not a call, not a longer chain).
    bool is_three_part_name(size_t i) const {
        return is_name(i) && at(i + 1).is_punct('.') && is_name(i + 2) && at(i + 3).is_punct('.') &&
               is_name(i + 4) && !at(i + 5).is_punct('.') && !at(i + 5).is_punct('(');
    }
    bool is_cast_at(size_t i) const {
        return at(i).is_punct(':') && at(i + 1).is_punct(':') && adjacent(i + 1);
    }

    // Copies the source up to token i, then `text` (the token itself when nullopt); the
    // output position where it starts.
    size_t emit(size_t i, std::optional<std::string_view> text = std::nullopt) {
        _out += _sql.substr(_src, _toks[i].begin - _src);
        size_t pos = _out.size();
        if (text) {
            _out += *text;
            _changed = true;
        } else {
            _out += raw(i);
        }
        _src = _toks[i].end;
        return pos;
    }
    // Drops tokens [i, j) and the space between them.
    void skip_to(size_t j) {
        _src = at(j - 1).end;
        _changed = true;
    }
    // Replaces the operand that ends the output (from `_last`) with `text`.
    void replace_operand(const std::string& text) {
        _out.resize(*_last);
        _out += text;
        _changed = true;
    }

    // The words of a type name from token i: "DOUBLE PRECISION", "NUMERIC" (a
    // modifier "(10, 2)" skipped), ...; `j` is past it. Empty when there is none or it
    // is an array.
    std::string type_at(size_t i, size_t& j) const {
        j = i;
        if (at(j).is_word("pg_catalog") && at(j + 1).is_punct('.')) j += 2;
        if (at(j).k != token::kind::word) return {};
        std::string type = to_upper(at(j++).text);
        auto more = [&](std::initializer_list<std::string_view> words) {
            for (size_t n = 0; n < words.size(); ++n)
                if (!at(j + n).is_word(*(words.begin() + n))) return false;
            for (auto w : words) type += " " + std::string(w);
            j += words.size();
            return true;
        };
        if (type == "DOUBLE") more({"PRECISION"});
        if (type == "CHARACTER" || type == "CHAR") more({"VARYING"});
        if (type == "TIMESTAMP" || type == "TIME")
            if (!more({"WITH", "TIME", "ZONE"})) more({"WITHOUT", "TIME", "ZONE"});
        if (at(j).is_punct('(')) {
            size_t k = j + 1;
            while (at(k).k == token::kind::number || at(k).is_punct(',')) ++k;
            if (at(k).is_punct(')')) j = k + 1;
        }
        if (at(j).is_punct('[')) return {};
        return type;
    }

    // An interval literal at token i: INTERVAL 'text' or 'text'::interval. The string's
    // token index, with `j` past the literal; none when there is none.
    size_t interval_at(size_t i, size_t& j) const {
        if (at(i).is_word("INTERVAL") && at(i + 1).k == token::kind::string) {
            j = i + 2;
            return i + 1;
        }
        size_t k = 0;
        if (at(i).k == token::kind::string && is_cast_at(i + 1) &&
            type_at(i + 3, k) == "INTERVAL") {
            j = k;
            return i;
        }
        return none;
    }

    // Whether the string at token i is compared with a topic table's timestamptz column:
    // `col OP 'text'`, `col BETWEEN 'text'` or `col BETWEEN 'text' AND 'text'`.
    bool compared_with_time_column(size_t i) const {
        auto is_time_column = [&](size_t k) {
            return k < _toks.size() && (at(k).k == token::kind::word ||
                                        at(k).k == token::kind::quoted) &&
                   (to_lower(at(k).text) == "timestamp_producer_tz" ||
                    to_lower(at(k).text) == "timestamp_broker_tz");
        };
        if (i < 2) return false;
        size_t k = i - 1;
        if (at(k).is_word("AND") && i >= 4 && at(k - 1).k == token::kind::string &&
            at(k - 2).is_word("BETWEEN"))
            return is_time_column(k - 3);
        if (at(k).is_word("BETWEEN")) return is_time_column(k - 1);
        // One or two characters of a comparison: = < > <= >= <> !=
        auto is_op = [&](size_t o) {
            return at(o).is_punct('=') || at(o).is_punct('<') || at(o).is_punct('>') ||
                   at(o).is_punct('!');
        };
        if (!is_op(k)) return false;
        if (k >= 1 && is_op(k - 1) && adjacent(k)) --k;
        return k >= 1 && is_time_column(k - 1);
    }

    // A select item that ends the output (from `_last`), with no alias and followed by
    // token j, gets the name PostgreSQL would give it.
    void name_item(const std::string& name, size_t j) {
        const frame& f = _frames.back();
        if (name.empty() || !_last || !f.select_list || f.item_start == none ||
            _out.find_first_not_of(" \t\r\n", f.item_start) != *_last)
            return;
        if (j < _toks.size() && !at(j).is_punct(',') && !at(j).is_punct(')') &&
            !at(j).is_word("FROM"))
            return;
        _out += " AS " + quote_ident(name);
    }

    void push_frame(size_t start, bool is_case = false) {
        frame f;
        f.start = start;
        f.is_case = is_case;
        _frames.push_back(std::move(f));
    }

    void close_frame() {
        frame f = _frames.back();
        _frames.pop_back();
        if (f.offset_at != none && !f.has_limit) {
            // SQLite wants a LIMIT before OFFSET; -1 is no limit.
            _out.insert(f.offset_at, "LIMIT -1 ");
            _changed = true;
        }
    }

    size_t step(size_t i);
    size_t on_word(size_t i);
    size_t on_clause_word(size_t i);
    size_t on_time_word(size_t i);
    size_t on_call_word(size_t i);
    size_t on_fetch(size_t i);

    std::string_view _sql;
    std::vector<token> _toks;
    std::string _out;
    size_t _src = 0;  // source copied up to here
    bool _changed = false;
    std::vector<frame> _frames;
    // Output position where the operand that ends the output starts (an identifier
    // chain, literal, parameter, call, group or CASE): what '::' and '+ interval' apply
    // to.
    std::optional<size_t> _last;
    std::optional<size_t> _pending_call;  // a function name just emitted: its start
    std::string _pending_alias;  // ... and the name of its column
    bool _pending_cast = false;  // ... which is CAST
    size_t _drop_row = none;     // the ROW/ROWS of OFFSET n ROWS
    std::optional<std::string> _chain_name;  // x::a::b: x's name, for the last cast
};

size_t translator::step(size_t i) {
    const token& t = _toks[i];
    std::optional<size_t> call = std::exchange(_pending_call, std::nullopt);
    std::string alias = std::exchange(_pending_alias, {});
    if (is_cast_at(i)) {
        size_t j = 0;
        std::string type = type_at(i + 2, j);
        if (type == "INTERVAL" && _last && *_last < _out.size() && _out[*_last] == '\'') {
            // 'text'::interval alone stays the text (what interval arithmetic reads).
            skip_to(j);
            return j;
        }
        if (auto format = cast_format(type); format && _last) {
            std::string_view operand = std::string_view(_out).substr(*_last);
            std::string name = _chain_name ? *std::exchange(_chain_name, std::nullopt)
                                           : operand_name(operand);
            replace_operand(apply_format(*format, operand));
            skip_to(j);
            if (is_cast_at(j))
                _chain_name = name;
            else
                name_item(name, j);
            return j;
        }
        // Left as written, its type included (which nothing else rewrites then).
        const size_t end = type.empty() ? i + 2 : j;
        for (size_t k = i; k < end; ++k) emit(k);
        _last.reset();
        return end;
    }
    if ((t.is_punct('+') || t.is_punct('-')) && _last) {
        size_t j = 0;
        size_t lit = interval_at(i + 1, j);
        if (lit != none) {
            std::string operand(std::string_view(_out).substr(*_last));
            replace_operand("pg_add_interval(" + operand + ", " + std::string(raw(lit)) + ", " +
                            (t.is_punct('-') ? "-1" : "1") + ")");
            skip_to(j);
            return j;
        }
    }
    if (t.k == token::kind::word) return on_word(i);
    if (t.k == token::kind::string && compared_with_time_column(i)) {
        // timestamp_broker_tz >= '2024-05-01T10:00:00Z' (Grafana's $__timeFilter): the
        // string is read as a timestamp, so that the two compare as instants.
        _last = emit(i, "pg_cast_timestamptz(" + std::string(raw(i)) + ")");
        return i + 1;
    }
    if (t.k == token::kind::quoted || t.k == token::kind::number || t.k == token::kind::string) {
        size_t pos = emit(i);
        // x'00ff', and the parts of a.b.c, are one operand.
        bool prefixed = t.k == token::kind::string && adjacent(i) &&
                        at(i - 1).k == token::kind::word && at(i - 1).text.size() == 1;
        bool chained = i > 0 && at(i - 1).is_punct('.') && _last;
        if (!prefixed && !chained) _last = pos;
        if (prefixed) _last = pos - 1;
        return i + 1;
    }
    // Punctuation.
    if (t.is_punct('(')) {
        size_t pos = emit(i);
        push_frame(call.value_or(pos));
        _frames.back().alias = std::move(alias);
        _frames.back().is_cast = std::exchange(_pending_cast, false);
        _last.reset();
        return i + 1;
    }
    if (t.is_punct(')')) {
        emit(i);
        if (_frames.size() > 1) {
            size_t start = _frames.back().start;
            std::string name = _frames.back().alias;
            close_frame();
            _last = start;
            if (!name.empty() && !is_cast_at(i + 1)) name_item(name, i + 1);
        } else {
            _last.reset();
        }
        return i + 1;
    }
    if (t.is_punct('.') && _last) {
        emit(i);  // the next identifier continues the operand
        return i + 1;
    }
    if (t.is_punct('$') && at(i + 1).k == token::kind::number && adjacent(i + 1)) {
        size_t pos = emit(i);
        emit(i + 1);
        _last = pos;
        return i + 2;
    }
    size_t pos = emit(i);
    _last.reset();
    if (t.is_punct('?')) _last = pos;
    if (t.is_punct(',') && _frames.back().select_list) _frames.back().item_start = _out.size();
    return i + 1;
}

// Clauses: SELECT lists, LIMIT, OFFSET, FETCH, CASE ... END. `none` when `i` is none.
size_t translator::on_clause_word(size_t i) {
    const token& t = _toks[i];
    frame& f = _frames.back();
    if (t.is_word("SELECT") || ((t.is_word("DISTINCT") || t.is_word("ALL")) && f.select_list &&
                                _out.find_first_not_of(" \t\r\n", f.item_start) == none)) {
        emit(i);
        f.select_list = true;
        f.item_start = _out.size();
        _last.reset();
        return i + 1;
    }
    if (t.is_word("LIMIT")) {
        f.has_limit = true;
        emit(i);
        _last.reset();
        if (at(i + 1).is_word("ALL")) {
            emit(i + 1, "-1");
            return i + 2;
        }
        return i + 1;
    }
    // OFFSET the clause, not the topic tables' column "offset": a count follows it.
    const token& next = at(i + 1);
    const bool offset_clause = next.k == token::kind::number || next.is_punct('?') ||
                               (next.is_punct('$') && at(i + 2).k == token::kind::number);
    if (t.is_word("OFFSET") && offset_clause && !(i > 0 && (at(i - 1).is_word("BY") ||
                                                          at(i - 1).is_punct('.') ||
                                                          at(i - 1).is_punct(',')))) {
        size_t pos = emit(i);
        if (!f.has_limit) f.offset_at = pos;
        // OFFSET n ROWS: the word after the count is dropped.
        const size_t after = i + (next.is_punct('$') ? 3 : 2);
        if (at(after).is_word("ROW") || at(after).is_word("ROWS")) _drop_row = after;
        _last.reset();
        return i + 1;
    }
    if (i == _drop_row) {
        skip_to(i + 1);
        return i + 1;
    }
    if (t.is_word("FETCH") && (at(i + 1).is_word("FIRST") || at(i + 1).is_word("NEXT")))
        return on_fetch(i);
    if (t.is_word("CASE")) {
        size_t pos = emit(i);
        push_frame(pos, true);
        _last.reset();
        return i + 1;
    }
    if (t.is_word("END") && f.is_case && _frames.size() > 1) {
        emit(i);
        _last = f.start;
        close_frame();
        return i + 1;
    }
    return none;
}

// Times: AT TIME ZONE 'UTC', current_timestamp, typed literals, interval literals.
size_t translator::on_time_word(size_t i) {
    const token& t = _toks[i];
    if (t.is_word("AT") && at(i + 1).is_word("TIME") && at(i + 2).is_word("ZONE") &&
        at(i + 3).k == token::kind::string && _last) {
        // x AT TIME ZONE 'UTC' is x: the engine's timestamps are UTC. Other zones stay,
        // and SQLite's error names them.
        const std::string zone = to_upper(at(i + 3).text);
        for (const char* utc : {"UTC", "GMT", "ETC/UTC", "Z", "+00", "+00:00", "UCT"})
            if (zone == utc) {
                skip_to(i + 4);
                return i + 4;
            }
    }
    if ((t.is_word("CURRENT_TIMESTAMP") || t.is_word("LOCALTIMESTAMP")) &&
        !(i > 0 && at(i - 1).is_punct('.'))) {
        // PostgreSQL's is a timestamptz; SQLite's a text without fractions or zone.
        size_t j = i + 1;
        if (at(j).is_punct('(') && at(j + 1).k == token::kind::number && at(j + 2).is_punct(')'))
            j += 3;
        // In a column's DEFAULT, SQLite wants an expression in parentheses.
        const bool in_default = i > 0 && at(i - 1).is_word("DEFAULT");
        _last = emit(i, in_default ? "(now())" : "now()");
        skip_to(j);
        return j;
    }
    if ((t.is_word("TIMESTAMP") || t.is_word("TIMESTAMPTZ") || t.is_word("DATE")) &&
        !(i > 0 && is_cast_at(i - 2))) {
        // Typed literals: timestamp '2024-05-01 12:00', date '2024-05-01'.
        size_t j = 0;
        std::string type = type_at(i, j);
        if (at(j).k == token::kind::string) {
            auto format = cast_format(type);
            if (format) {
                _last = emit(i, apply_format(*format, raw(j)));
                skip_to(j + 1);
                return j + 1;
            }
        }
    }
    if (t.is_word("INTERVAL") && at(i + 1).k == token::kind::string) {
        // A bare interval literal is its text (in parentheses, so that it never becomes a
        // typed literal with a word before it).
        _last = emit(i, "(" + std::string(raw(i + 1)) + ")");
        skip_to(i + 2);
        return i + 2;
    }
    return none;
}

// Calls: windows and filters, CAST(x AS type), string_agg, extract.
size_t translator::on_call_word(size_t i) {
    const token& t = _toks[i];
    frame& f = _frames.back();
    if ((t.is_word("OVER") || t.is_word("FILTER")) && _last && at(i + 1).is_punct('(')) {
        // count(*) OVER (...)::int: the window belongs to the call before it.
        size_t start = *_last;
        emit(i);
        _pending_call = start;
        return i + 1;
    }
    if (t.is_word("AS") && f.is_cast && _frames.size() > 1) {
        // CAST(x AS bool|date|timestamp|json|bytea): SQLite's CAST would give these
        // NUMERIC affinity ('2024-05-01' becomes 2024); the '::' functions instead.
        size_t j = 0;
        std::string type = type_at(i + 1, j);
        auto format = cast_format(type);
        if (format && format->rfind("pg_cast_", 0) == 0 && at(j).is_punct(')')) {
            // The output holds "CAST(" then the operand, from the frame's start.
            std::string operand = _out.substr(_out.find('(', f.start) + 1);
            while (!operand.empty() && operand.back() == ' ') operand.pop_back();
            _out.resize(f.start);
            _out += format->substr(0, format->find("%s"));
            _out += operand;
            f.is_cast = false;
            skip_to(j);
            _changed = true;
            return j;  // the ')' closes the call as written
        }
    }
    const bool is_call = at(i + 1).is_punct('(') && !is_keyword(t);
    if (is_call && t.is_word("string_agg")) {
        _pending_call = emit(i, "group_concat");
        _pending_alias = "string_agg";
        return i + 1;
    }
    if (is_call && t.is_word("extract") &&
        (at(i + 2).k == token::kind::word || at(i + 2).k == token::kind::string) &&
        at(i + 3).is_word("FROM")) {
        // extract(field FROM x) -> pg_extract('field', x)
        size_t pos = emit(i, "pg_extract");
        emit(i + 1);
        _out += quote_literal(to_lower(at(i + 2).text));
        _out += ",";
        push_frame(pos);
        _frames.back().alias = "extract";
        skip_to(i + 4);
        _last.reset();
        return i + 4;
    }
    return none;
}

size_t translator::on_word(size_t i) {
    const token& t = _toks[i];
    if (ends_select_list(t)) _frames.back().select_list = false;
    for (size_t (translator::*handler)(size_t) :
         {&translator::on_clause_word, &translator::on_time_word, &translator::on_call_word})
        if (size_t next = (this->*handler)(i); next != none) return next;
    if ((t.is_word("FROM") || t.is_word("JOIN")) && is_three_part_name(i + 1)) {
        // A table named with its database ("sluice"."kafka_topics"."t"), as PostgreSQL
        // allows for the current one and Trino's connector writes: SQLite knows
        // schema.table.
        emit(i);
        _out += ' ';
        skip_to(i + 3);
        _last.reset();
        return i + 3;
    }
    if (t.is_word("ILIKE") || t.is_word("LIKE")) {
        // SQLite's LIKE is PostgreSQL's ILIKE for ASCII. PostgreSQL's LIKE escapes with
        // '\\' unless told otherwise, SQLite's with nothing: JDBC's getTables sends
        // `nspname LIKE 'kafka\\_topics'`.
        if (t.is_word("ILIKE")) emit(i, "LIKE");
        else emit(i);
        _last.reset();
        const token& pattern = at(i + 1);
        if (pattern.k == token::kind::string && raw(i + 1).find('\\') != std::string_view::npos &&
            !at(i + 2).is_word("ESCAPE")) {
            emit(i + 1);
            _out += " ESCAPE '\\'";
            _changed = true;
            return i + 2;
        }
        return i + 1;
    }
    const bool is_call = at(i + 1).is_punct('(') && !is_keyword(t);
    bool chained = i > 0 && at(i - 1).is_punct('.') && _last;
    size_t pos = emit(i);
    if (is_keyword(t)) {
        _last.reset();
    } else if (!chained) {
        _last = pos;
    }
    if (is_call) _pending_call = chained ? *_last : pos;
    _pending_cast = is_call && !chained && t.is_word("CAST");
    return i + 1;
}

size_t translator::on_fetch(size_t i) {
    // FETCH {FIRST|NEXT} [n] {ROW|ROWS} ONLY -> LIMIT n (before an OFFSET already written).
    size_t j = i + 2;
    size_t count_begin = j;
    while (j < _toks.size() && !at(j).is_word("ROW") && !at(j).is_word("ROWS")) ++j;
    if (!at(j + 1).is_word("ONLY")) {
        emit(i);
        _last.reset();
        return i + 1;
    }
    std::string count = "1";
    if (j > count_begin)
        count = std::string(
            _sql.substr(at(count_begin).begin, at(j - 1).end - at(count_begin).begin));
    frame& f = _frames.back();
    if (f.offset_at != none) {
        _out.insert(f.offset_at, "LIMIT " + count + " ");
        f.offset_at = none;
        _changed = true;
    } else {
        emit(i, "LIMIT " + count);
    }
    f.has_limit = true;
    skip_to(j + 2);
    _last.reset();
    return j + 2;
}

}  // namespace

std::optional<std::string> translate_statement(std::string_view sql) {
    // The tokens are held in memory: a statement this large is a bulk INSERT, not a
    // query typed by an analyst, and goes to SQLite as it is.
    if (sql.size() > max_translated_size) return std::nullopt;
    // Most statements hold none of the words rewritten: no tokens for them.
    if (!might_need_translation(sql)) return std::nullopt;
    return translator(sql).run();
}

}  // namespace sluice::sql::pg

#include "sql/pg/pg_commands.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

#include "sql/pg/lexer.h"
#include "sql/pg/pg_server.h"
#include "sql/sql_text.h"

namespace sluice::sql::pg {

namespace {

// A statement the front end answers itself (SET, SHOW, ...): `run` does the work on the
// first step and gives the rows.
class canned_statement final : public statement {
  public:
    using producer = std::function<std::vector<std::vector<value>>()>;
    canned_statement(std::string text, std::string verb, std::vector<column> cols, producer run)
        : _text(std::move(text)),
          _verb(std::move(verb)),
          _columns(std::move(cols)),
          _run(std::move(run)) {}

    const std::string& text() const override { return _text; }
    int param_count() const override { return 0; }
    outcome<bool> bind(const std::vector<value>& params) override {
        if (!params.empty())
            return query_error{failure::invalid_parameter, "this command takes no parameters"};
        return true;
    }
    const std::vector<column>& columns() const override { return _columns; }
    step_state step() override {
        if (!_ran) {
            _rows = _run ? _run() : std::vector<std::vector<value>>{};
            _ran = true;
            _next = 0;
        }
        if (_next >= _rows.size()) return step_state::done;
        _row = _rows[_next++];
        return step_state::row;
    }
    const std::vector<value>& row() const override { return _row; }
    const query_error& error() const override { return _error; }
    int64_t changes() const override { return 0; }
    std::string verb() const override { return _verb; }
    void reset() override { _ran = false; }

  private:
    std::string _text;
    std::string _verb;
    std::vector<column> _columns;
    producer _run;
    bool _ran = false;
    std::vector<std::vector<value>> _rows;
    size_t _next = 0;
    std::vector<value> _row;
    query_error _error;
};

pg_error syntax_error(std::string_view near) {
    if (near.empty()) return {"42601", "syntax error at end of input"};
    return {"42601", fmt::format("syntax error at or near \"{}\"", near)};
}

prepared_query canned(std::string_view text, std::string tag, std::vector<column> cols,
                      canned_statement::producer run) {
    prepared_query q;
    q.stmt =
        std::make_unique<canned_statement>(std::string(text), tag, std::move(cols), std::move(run));
    q.info.tag = std::move(tag);
    return q;
}

// A parameter name: word ('.' word)*, or a quoted identifier. Lower-cased unless quoted.
std::optional<std::string> parse_name(tokenizer& tz) {
    token t = tz.next();
    if (t.k == token::kind::quoted) return unquote(t.text, '"');
    if (t.k != token::kind::word) return std::nullopt;
    std::string name = to_lower(t.text);
    while (tz.peek().is_punct('.')) {
        tz.next();
        token part = tz.next();
        if (part.k != token::kind::word && part.k != token::kind::quoted) return std::nullopt;
        name +=
            "." + (part.k == token::kind::quoted ? unquote(part.text, '"') : to_lower(part.text));
    }
    return name;
}

// A SET value list up to `end`: elements joined with ", ". nullopt in `out` for DEFAULT.
std::optional<pg_error> parse_values(tokenizer& tz, size_t end, std::optional<std::string>& out) {
    std::string joined;
    bool first = true;
    for (;;) {
        token t = tz.next();
        if (t.begin >= end || t.k == token::kind::end) {
            if (first) return syntax_error("");
            break;
        }
        if (first && t.is_word("DEFAULT") && tz.peek().begin >= end) {
            out = std::nullopt;
            return std::nullopt;
        }
        std::string item;
        if (t.is_punct('-') || t.is_punct('+')) {
            item = std::string(t.text);
            t = tz.next();
            if (t.k != token::kind::number) return syntax_error(t.text);
        }
        if (t.k == token::kind::string) {
            item += unquote(t.text);
        } else if (t.k == token::kind::quoted) {
            item += unquote(t.text, '"');
        } else if (t.k == token::kind::number || t.k == token::kind::word) {
            item += t.text;
            // 500ms: a number with its unit attached.
            if (t.k == token::kind::number && tz.peek().k == token::kind::word &&
                tz.peek().begin == t.end)
                item += tz.next().text;
        } else {
            return syntax_error(t.text);
        }
        if (!first) joined += ", ";
        joined += item;
        first = false;
        token sep = tz.peek();
        if (sep.begin >= end || sep.k == token::kind::end) break;
        if (!sep.is_punct(',')) return syntax_error(sep.text);
        tz.next();
    }
    out = std::move(joined);
    return std::nullopt;
}

prepare_result prepare_set(command_context& ctx, std::string_view text) {
    tokenizer tz(text);
    tz.next();  // SET
    size_t end = text.size();
    if (tz.peek().is_word("SESSION") || tz.peek().is_word("LOCAL")) {
        token scope = tz.next();
        // SET SESSION CHARACTERISTICS / AUTHORIZATION: accepted, nothing to do.
        if (scope.is_word("SESSION") &&
            (tz.peek().is_word("CHARACTERISTICS") || tz.peek().is_word("AUTHORIZATION")))
            return canned(text, "SET", {}, {});
    }
    // SQLite transactions are serializable; SET TRANSACTION and SET ROLE change nothing.
    if (tz.peek().is_word("TRANSACTION") || tz.peek().is_word("ROLE"))
        return canned(text, "SET", {}, {});
    std::string name;
    if (tz.peek().is_word("TIME")) {
        tz.next();
        if (!tz.next().is_word("ZONE")) return syntax_error("TIME");
        name = "timezone";
    } else {
        auto n = parse_name(tz);
        if (!n) return syntax_error(tz.peek().text);
        name = *n;
        token op = tz.next();
        if (!op.is_word("TO") && !op.is_punct('=')) return syntax_error(op.text);
    }
    std::optional<std::string> val;
    if (auto err = parse_values(tz, end, val)) return *err;
    if (auto err = ctx.params.check(name, val)) return *err;
    return canned(text, "SET", {}, [&ctx, name, val] {
        if (auto changed = ctx.params.apply(name, val))
            if (ctx.report) ctx.report(changed->first, changed->second);
        return std::vector<std::vector<value>>{};
    });
}

prepare_result prepare_reset(command_context& ctx, std::string_view text) {
    tokenizer tz(text);
    tz.next();  // RESET
    if (tz.peek().is_word("ALL")) {
        return canned(text, "RESET", {}, [&ctx] {
            ctx.params.reset_all();
            return std::vector<std::vector<value>>{};
        });
    }
    if (tz.peek().is_word("SESSION") || tz.peek().is_word("ROLE"))
        return canned(text, "RESET", {}, {});
    std::string name;
    if (tz.peek().is_word("TIME")) {
        name = "timezone";
    } else {
        auto n = parse_name(tz);
        if (!n) return syntax_error(tz.peek().text);
        name = *n;
    }
    if (auto err = ctx.params.check(name, std::nullopt)) return *err;
    return canned(text, "RESET", {}, [&ctx, name] {
        if (auto changed = ctx.params.apply(name, std::nullopt))
            if (ctx.report) ctx.report(changed->first, changed->second);
        return std::vector<std::vector<value>>{};
    });
}

prepare_result prepare_show(command_context& ctx, std::string_view text) {
    tokenizer tz(text);
    tz.next();  // SHOW
    if (tz.peek().is_word("ALL")) {
        std::vector<column> cols{{"name", "TEXT"}, {"setting", "TEXT"}, {"description", "TEXT"}};
        return canned(text, "SHOW", cols, [&ctx] {
            std::vector<std::vector<value>> rows;
            for (auto& r : ctx.params.show_all()) rows.push_back({r[0], r[1], r[2]});
            return rows;
        });
    }
    std::string name;
    if (tz.peek().is_word("TIME")) {
        name = "timezone";
    } else if (tz.peek().is_word("TRANSACTION")) {
        name = "transaction_isolation";
    } else {
        auto n = parse_name(tz);
        if (!n) return syntax_error(tz.peek().text);
        name = *n;
    }
    auto shown = ctx.params.show(name);
    if (!shown && ctx.params.is_engine_setting(name)) {
        // As current_setting() reads it, which refuses the settings naming the server's
        // paths. The name is one of the engine's: letters and underscores.
        const std::string key = to_lower(name);
        auto st = ctx.sess.prepare(
            fmt::format("SELECT CAST(current_setting('{}') AS VARCHAR) AS \"{}\"", key, key));
        if (!st) return to_pg_error(st.error());
        prepared_query q;
        q.stmt = std::move(*st);
        q.info.tag = "SHOW";
        return q;
    }
    if (!shown)
        return pg_error{"42704", fmt::format("unrecognized configuration parameter \"{}\"", name)};
    return canned(text, "SHOW", {{shown->first, "TEXT"}}, [&ctx, name] {
        auto now = ctx.params.show(name);
        return std::vector<std::vector<value>>{{now ? value(now->second) : value()}};
    });
}

prepare_result prepare_deallocate(command_context& ctx, std::string_view text) {
    tokenizer tz(text);
    tz.next();  // DEALLOCATE
    if (tz.peek().is_word("PREPARE")) tz.next();
    token t = tz.next();
    if (t.is_word("ALL")) {
        return canned(text, "DEALLOCATE ALL", {}, [&ctx] {
            if (ctx.deallocate) ctx.deallocate(std::nullopt);
            return std::vector<std::vector<value>>{};
        });
    }
    if (t.k != token::kind::word && t.k != token::kind::quoted) return syntax_error(t.text);
    std::string name = t.k == token::kind::quoted ? unquote(t.text, '"') : to_lower(t.text);
    return canned(text, "DEALLOCATE", {}, [&ctx, name] {
        if (ctx.deallocate) ctx.deallocate(name);
        return std::vector<std::vector<value>>{};
    });
}

// Whether every token of `text` after its first word is one of `allowed` words.
bool only_words(std::string_view text, std::initializer_list<std::string_view> allowed) {
    tokenizer tz(text);
    tz.next();
    for (;;) {
        token t = tz.next();
        if (t.k == token::kind::end) return true;
        if (std::none_of(allowed.begin(), allowed.end(),
                         [&](std::string_view w) { return t.is_word(w); }))
            return false;
    }
}

// PostgreSQL's BEGIN [WORK | TRANSACTION] and START TRANSACTION, then transaction modes
// separated by commas or blanks: ISOLATION LEVEL {SERIALIZABLE | REPEATABLE READ | READ
// COMMITTED | READ UNCOMMITTED}, READ {ONLY | WRITE}, [NOT] DEFERRABLE. The syntax error
// PostgreSQL gives at the first token that does not fit (SQLite's BEGIN DEFERRED,
// IMMEDIATE and EXCLUSIVE), or nullopt.
std::optional<pg_error> check_begin(std::string_view text) {
    tokenizer tz(text);
    auto misfit = [&text](const token& t) {
        return syntax_error(t.k == token::kind::end ? std::string_view{}
                                                    : text.substr(t.begin, t.end - t.begin));
    };
    // The next token, which must be one of `words`.
    auto want = [&](std::initializer_list<std::string_view> words) -> std::optional<pg_error> {
        token t = tz.next();
        for (auto w : words)
            if (t.is_word(w)) return std::nullopt;
        return misfit(t);
    };
    auto isolation_level = [&]() -> std::optional<pg_error> {
        if (auto err = want({"LEVEL"})) return err;
        token level = tz.next();
        if (level.is_word("READ")) return want({"COMMITTED", "UNCOMMITTED"});
        if (level.is_word("REPEATABLE")) return want({"READ"});
        if (level.is_word("SERIALIZABLE")) return std::nullopt;
        return misfit(level);
    };
    if (tz.next().is_word("START")) {
        if (auto err = want({"TRANSACTION"})) return err;
    } else if (tz.peek().is_word("WORK") || tz.peek().is_word("TRANSACTION")) {
        tz.next();
    }
    bool after_comma = false;
    for (;;) {
        token t = tz.next();
        if (t.k == token::kind::end) {
            if (after_comma) return misfit(t);
            return std::nullopt;
        }
        std::optional<pg_error> err;
        if (t.is_word("ISOLATION")) {
            err = isolation_level();
        } else if (t.is_word("READ")) {
            err = want({"ONLY", "WRITE"});
        } else if (t.is_word("NOT")) {
            err = want({"DEFERRABLE"});
        } else if (!t.is_word("DEFERRABLE")) {
            err = misfit(t);
        }
        if (err) return err;
        after_comma = tz.peek().is_punct(',');
        if (after_comma) tz.next();
    }
}

query_info info_for(const std::vector<std::string>& words, std::string_view sql) {
    query_info info;
    if (words.empty()) return info;
    const std::string& first = words[0];
    auto word = [&](size_t i) { return i < words.size() ? words[i] : std::string(); };
    if (first == "CREATE") {
        size_t i = 1;
        while (word(i) == "TEMP" || word(i) == "TEMPORARY" || word(i) == "UNIQUE" ||
               word(i) == "VIRTUAL")
            ++i;
        info.tag = word(i).empty() ? "CREATE" : "CREATE " + word(i);
    } else if (first == "DROP" || first == "ALTER") {
        info.tag = word(1).empty() ? first : first + " " + word(1);
    } else if (first == "INSERT" || first == "REPLACE") {
        info.tag = "INSERT";
    } else if (first == "SELECT" || first == "VALUES") {
        info.tag = "SELECT";
    } else if (first == "WITH") {
        auto verb = verb_after_with(sql);
        info.tag = verb == "REPLACE" ? "INSERT" : verb == "VALUES" ? "SELECT" : verb;
    } else if (first == "BEGIN" || first == "START") {
        info.tag = "BEGIN";
        info.tx = tx_effect::begin;
    } else if (first == "COMMIT" || first == "END") {
        info.tag = "COMMIT";
        info.tx = tx_effect::commit;
    } else if (first == "ROLLBACK" || first == "ABORT") {
        info.tag = "ROLLBACK";
        bool to =
            word(1) == "TO" || ((word(1) == "TRANSACTION" || word(1) == "WORK") && word(2) == "TO");
        info.tx = to ? tx_effect::rollback_to : tx_effect::rollback;
    } else {
        info.tag = first;
    }
    return info;
}

prepare_result engine_prepare(command_context& ctx, std::string_view sql, std::string_view* tail,
                              query_info info, std::span<const param_type> declared = {}) {
    auto st = ctx.sess.prepare_declared(sql, tail, declared);
    if (!st) return to_pg_error(st.error());
    prepared_query q;
    q.stmt = std::move(*st);
    q.info = std::move(info);
    return q;
}

}  // namespace

prepare_result prepare_query(command_context& ctx, std::string_view sql, std::string_view* tail,
                             std::span<const param_type> declared) {
    size_t start = skip_space(sql);
    auto words = leading_words(sql.substr(start), 4);
    if (words.empty()) return engine_prepare(ctx, sql, tail, {});

    // Commands handled here end at the next ';' of their own.
    size_t end = statement_end(sql, start);
    std::string_view text = sql.substr(start, end - start);
    auto set_tail = [&] {
        if (tail) *tail = sql.substr(std::min(end + 1, sql.size()));
    };
    const std::string& first = words[0];
    auto own = [&](prepare_result r) {
        set_tail();
        return r;
    };
    if (first == "SET") return own(prepare_set(ctx, text));
    if (first == "RESET") return own(prepare_reset(ctx, text));
    if (first == "SHOW") return own(prepare_show(ctx, text));
    if (first == "DEALLOCATE") return own(prepare_deallocate(ctx, text));
    if (first == "COPY")
        if (auto copy = prepare_copy(ctx, text)) return own(std::move(*copy));
    if (first == "DISCARD" && words.size() >= 2) {
        // What connection poolers send between clients: DISCARD ALL resets the session;
        // PLANS, SEQUENCES and TEMP have nothing to discard here.
        bool all = words[1] == "ALL";
        return own(canned(text, "DISCARD " + words[1], {}, [&ctx, all] {
            if (all) {
                ctx.params.reset_all();
                if (ctx.deallocate) ctx.deallocate(std::nullopt);
            }
            return std::vector<std::vector<value>>{};
        }));
    }
    // PostgreSQL's spellings of the transaction commands, as the plain BEGIN, COMMIT and
    // ROLLBACK the engine parses. The transaction modes (ISOLATION LEVEL, READ ONLY,
    // DEFERRABLE) change nothing. Everything else goes to the engine as the client wrote
    // it: DuckDB speaks PostgreSQL's dialect.
    query_info info = info_for(words, text);
    std::string_view rewritten;
    if (first == "START" || first == "BEGIN") {
        if (auto err = check_begin(text)) return own(*err);
        rewritten = "BEGIN";
    } else if ((first == "COMMIT" || first == "END") && !only_words(text, {"TRANSACTION"})) {
        rewritten = "COMMIT";
    } else if (info.tx == tx_effect::rollback &&
               (first == "ABORT" || !only_words(text, {"TRANSACTION"}))) {
        rewritten = "ROLLBACK";
    }
    if (!rewritten.empty()) {
        set_tail();
        return engine_prepare(ctx, rewritten, nullptr, std::move(info));
    }
    return engine_prepare(ctx, sql, tail, std::move(info), declared);
}

std::string command_tag(const query_info& info, statement& st, int64_t rows) {
    const std::string& t = info.tag;
    if (t == "INSERT") return fmt::format("INSERT 0 {}", st.changes());
    if (t == "UPDATE" || t == "DELETE") return fmt::format("{} {}", t, st.changes());
    if (t == "SHOW" || t == "EXPLAIN") return t;
    if (t == "SELECT" || !st.columns().empty()) return fmt::format("SELECT {}", rows);
    return t.empty() ? st.verb() : t;
}

pg_error to_pg_error(const query_error& e) {
    return {sqlstate(e.kind), e.message};
}

// ---- Durations ----

std::optional<int64_t> parse_duration_ms(std::string_view s) {
    std::string t = to_lower(s);
    size_t i = 0;
    while (i < t.size() && std::isspace(static_cast<unsigned char>(t[i]))) ++i;
    size_t num_start = i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) || t[i] == '.')) ++i;
    std::string num = t.substr(num_start, i - num_start);
    std::string unit = t.substr(i);
    unit.erase(std::remove_if(unit.begin(), unit.end(),
                              [](char c) { return std::isspace(static_cast<unsigned char>(c)); }),
               unit.end());
    if (num.empty()) return std::nullopt;
    char* endp = nullptr;
    double v = std::strtod(num.c_str(), &endp);
    if (endp != num.c_str() + num.size() || !std::isfinite(v) || v < 0) return std::nullopt;
    double scale = 0;
    if (unit.empty() || unit == "ms")
        scale = 1;
    else if (unit == "us")
        scale = 0.001;
    else if (unit == "s")
        scale = 1000;
    else if (unit == "min")
        scale = 60'000;
    else if (unit == "h")
        scale = 3'600'000;
    else if (unit == "d")
        scale = 86'400'000;
    else
        return std::nullopt;
    // Far beyond any engine default: the clamp applies anyway.
    return static_cast<int64_t>(std::min(std::round(v * scale), 1e15));
}

std::string format_duration_ms(int64_t ms) {
    if (ms == 0) return "0";
    struct unit {
        int64_t ms;
        const char* name;
    };
    for (unit u :
         {unit{86'400'000, "d"}, unit{3'600'000, "h"}, unit{60'000, "min"}, unit{1000, "s"}})
        if (ms % u.ms == 0) return fmt::format("{}{}", ms / u.ms, u.name);
    return fmt::format("{}ms", ms);
}

// ---- settings ----

namespace {
constexpr std::string_view timeout_name = "statement_timeout";
constexpr std::string_view max_rows_name = "sluice.max_rows";

// The engine's settings are the broker's: DuckDB's configuration is locked
// (lock_configuration), and several would widen what SQL reaches
// (enable_external_access, allowed_directories). PostgreSQL's answer to a SET a role may
// not make: 42501, naming the broker's flag where one sets it.
pg_error broker_setting(const std::string& key) {
    static const std::map<std::string_view, std::string_view> flags = {
        {"memory_limit", "--sql-memory"},
        {"max_memory", "--sql-memory"},
        {"threads", "--sql-threads"},
        {"worker_threads", "--sql-threads"},
        {"max_temp_directory_size", "--sql-temp-bytes"},
        {"temp_directory", "--data-dir"},
        {"allowed_directories", "--sql-export-dir"},
        {"allowed_paths", "--sql-export-dir"}};
    const auto f = flags.find(key);
    return {"42501",
            fmt::format("permission denied to set parameter \"{}\": it is a setting of the "
                        "broker's SQL engine, {}",
                        key,
                        f == flags.end() ? std::string("which SQL sessions cannot change")
                                         : fmt::format("set by the broker's {}", f->second))};
}

bool is_utf8_name(std::string_view v) {
    std::string u = to_upper(v);
    std::erase_if(u, [](char c) { return c == '-' || c == '_' || c == ' ' || c == '\''; });
    return u == "UTF8" || u == "UNICODE";
}
}  // namespace

settings::settings(session& s, const pg_options& opts) : _session(s) {
    auto add = [&](std::string canonical, std::string v, std::string desc, bool ro, bool rep) {
        std::string key = to_lower(canonical);
        _defaults[key] = v;
        _params[key] = param{std::move(canonical), std::move(v), std::move(desc), ro, rep};
    };
    add("server_version", opts.server_version, "Server version (Sluice's engine is DuckDB).", true,
        true);
    add("server_encoding", "UTF8", "Server encoding (always UTF8).", true, true);
    add("client_encoding", "UTF8", "Client encoding (UTF8 only).", false, true);
    add("DateStyle", "ISO, MDY", "Date display format (fixed).", false, true);
    add("IntervalStyle", "postgres", "Interval display format (fixed).", false, true);
    add("integer_datetimes", "on", "Datetimes are integer based.", true, true);
    add("standard_conforming_strings", "on", "Backslashes in '...' are literal (always on).", false,
        true);
    add("TimeZone", "UTC", "Time zone (fixed: UTC).", false, true);
    add("application_name", "", "Application name reported by the client.", false, true);
    add("is_superuser", "off", "Whether the session is a superuser.", true, true);
    add("transaction_isolation", "serializable", "Isolation of transactions (SQLite's).", true,
        false);
    add("default_transaction_isolation", "serializable", "Isolation of new transactions.", false,
        false);
    add("extra_float_digits", "1", "Floats are always sent in shortest exact form.", false, false);
    add("search_path", "\"$user\", public", "Schema search path (unused).", false, false);
    publish();
}

void settings::publish() {
    std::map<std::string, std::string> values;
    for (auto& row : show_all()) values[to_lower(row[0])] = std::move(row[1]);
    _session.set_client_parameters(values);
}

std::optional<std::pair<std::string, std::string>> settings::apply(
    std::string_view name, const std::optional<std::string>& value) {
    auto changed = change(name, value);
    publish();
    return changed;
}

std::vector<std::pair<std::string, std::string>> settings::reported() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& [key, p] : _params)
        if (p.reported) out.emplace_back(p.canonical, p.value);
    return out;
}

std::optional<pg_error> settings::check(std::string_view name,
                                        const std::optional<std::string>& value) const {
    std::string key = to_lower(name);
    auto invalid = [&] {
        return pg_error{"22023", fmt::format("invalid value for parameter \"{}\": \"{}\"", name,
                                             value.value_or(""))};
    };
    if (key == timeout_name) {
        if (value && !parse_duration_ms(*value)) return invalid();
        return std::nullopt;
    }
    if (key == max_rows_name) {
        if (!value) return std::nullopt;
        uint64_t n = 0;
        auto [p, ec] = std::from_chars(value->data(), value->data() + value->size(), n);
        if (ec != std::errc() || p != value->data() + value->size()) return invalid();
        return std::nullopt;
    }
    auto it = _params.find(key);
    if (it == _params.end()) {
        if (is_engine_setting(key)) return broker_setting(key);
        return std::nullopt;  // custom parameters are stored as given
    }
    if (it->second.read_only)
        return pg_error{"55P02", fmt::format("parameter \"{}\" cannot be changed", name)};
    if (!value) return std::nullopt;
    if (key == "client_encoding" && !is_utf8_name(*value))
        return pg_error{
            "22023", fmt::format("client_encoding \"{}\" is not supported: Sluice speaks UTF8 only",
                                 *value)};
    if (key == "standard_conforming_strings" && to_lower(*value) != "on" &&
        to_lower(*value) != "true" && *value != "1")
        return pg_error{"0A000", "standard_conforming_strings is always on"};
    return std::nullopt;
}

std::optional<std::pair<std::string, std::string>> settings::change(
    std::string_view name, const std::optional<std::string>& value) {
    std::string key = to_lower(name);
    if (key == timeout_name || key == max_rows_name) {
        limits l = _session.current_limits();
        limits defaults = _session.default_limits();
        if (key == timeout_name) {
            int64_t ms = value ? parse_duration_ms(*value).value_or(0) : 0;
            // 0 is the engine's default; a caller may only lower it.
            l.timeout = ms == 0 ? defaults.timeout
                                : std::min(defaults.timeout, std::chrono::milliseconds(ms));
        } else {
            uint64_t n = 0;
            if (value) std::from_chars(value->data(), value->data() + value->size(), n);
            l.max_rows = n == 0 ? defaults.max_rows : std::min(defaults.max_rows, n);
        }
        _session.set_limits(l);
        return std::nullopt;
    }
    auto it = _params.find(key);
    if (it == _params.end()) {
        // Custom parameters (any SET a driver sends): stored, shown, otherwise unused.
        if (value)
            _params[key] = param{key, *value, "Set by the client (unused).", false, false};
        else
            _params.erase(key);
        return std::nullopt;
    }
    // Fixed parameters keep their value: the engine always speaks UTF8, ISO and UTC.
    static const std::set<std::string> fixed = {"client_encoding", "datestyle",
                                                "intervalstyle",   "standard_conforming_strings",
                                                "timezone",        "extra_float_digits"};
    if (fixed.count(key)) return std::nullopt;
    it->second.value = value ? *value : _defaults[key];
    if (!it->second.reported) return std::nullopt;
    return std::make_pair(it->second.canonical, it->second.value);
}

void settings::reset_all() {
    _session.set_limits(_session.default_limits());
    for (auto it = _params.begin(); it != _params.end();) {
        auto d = _defaults.find(it->first);
        if (d == _defaults.end()) {
            it = _params.erase(it);
        } else {
            it->second.value = d->second;
            ++it;
        }
    }
    publish();
}

bool settings::is_engine_setting(std::string_view name) const {
    const std::string key = to_lower(name);
    // Custom parameters are dotted (myapp.x); no engine setting is.
    if (key == timeout_name || key.find('.') != std::string::npos || _params.count(key))
        return false;
    return _session.is_engine_setting(key);
}

std::string settings::timeout_text() const {
    return format_duration_ms(_session.current_limits().timeout.count());
}

std::optional<std::pair<std::string, std::string>> settings::show(std::string_view name) const {
    std::string key = to_lower(name);
    if (key == timeout_name) return std::make_pair(std::string(timeout_name), timeout_text());
    if (key == max_rows_name)
        return std::make_pair(std::string(max_rows_name),
                              std::to_string(_session.current_limits().max_rows));
    auto it = _params.find(key);
    if (it == _params.end()) return std::nullopt;
    return std::make_pair(it->second.canonical, it->second.value);
}

std::vector<std::vector<std::string>> settings::show_all() const {
    std::vector<std::vector<std::string>> rows;
    rows.push_back({std::string(timeout_name), timeout_text(),
                    "Time limit of a statement (at most the engine's default)."});
    rows.push_back({std::string(max_rows_name), std::to_string(_session.current_limits().max_rows),
                    "Row limit of a statement (at most the engine's default)."});
    for (const auto& [key, p] : _params) rows.push_back({p.canonical, p.value, p.description});
    std::sort(rows.begin(), rows.end());
    return rows;
}

}  // namespace sluice::sql::pg

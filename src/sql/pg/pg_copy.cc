// COPY ... TO STDOUT: a query's rows as CopyData messages, in the text, CSV or binary
// format (what DuckDB's postgres extension reads, and psql's \copy ... to). COPY FROM
// is not supported (docs/sql-pg.md).
//
// The columns are typed as a statement Describe types them (declared types, else
// text), without stepping: a client that described the query first (DuckDB does) then
// decodes the binary rows with the types it was told.

#include <fmt/format.h>

#include <string>
#include <utility>
#include <variant>

#include "sql/pg/lexer.h"
#include "sql/pg/pg_commands.h"
#include "sql/pg/pg_connection.h"
#include "sql/pg/types.h"
#include "sql/sql_text.h"

namespace sluice::sql::pg {

namespace {

pg_error copy_syntax(std::string_view near) {
    return {"42601", fmt::format("COPY: syntax error at or near \"{}\"", near)};
}

// The options after STDOUT: WITH (FORMAT x, HEADER [bool]), or BINARY, CSV [HEADER].
std::optional<pg_error> parse_copy_options(tokenizer& tz, query_info& info) {
    info.copy = copy_format::text;
    if (tz.peek().is_word("WITH")) tz.next();
    token t = tz.next();
    if (t.k == token::kind::end) return std::nullopt;
    if (t.is_word("BINARY")) {
        info.copy = copy_format::binary;
        return std::nullopt;
    }
    if (t.is_word("CSV")) {
        info.copy = copy_format::csv;
        if (tz.peek().is_word("HEADER")) {
            tz.next();
            info.copy_header = true;
        }
        return std::nullopt;
    }
    if (!t.is_punct('(')) return copy_syntax(t.text);
    for (;;) {
        token name = tz.next();
        token arg = tz.peek();
        bool has_arg = !arg.is_punct(',') && !arg.is_punct(')');
        if (has_arg) tz.next();
        std::string v = to_lower(arg.text);
        if (name.is_word("FORMAT") && has_arg) {
            if (v == "binary")
                info.copy = copy_format::binary;
            else if (v == "csv")
                info.copy = copy_format::csv;
            else if (v == "text")
                info.copy = copy_format::text;
            else
                return pg_error{"22023", fmt::format("COPY format \"{}\" not recognized", v)};
        } else if (name.is_word("HEADER")) {
            info.copy_header = !has_arg || v == "true" || v == "on" || v == "1";
        } else {
            return pg_error{
                "0A000", fmt::format("COPY option \"{}\" is not supported", to_lower(name.text))};
        }
        token sep = tz.next();
        if (sep.is_punct(')')) return std::nullopt;
        if (!sep.is_punct(',')) return copy_syntax(sep.text);
    }
}

// A text-format field: backslash, tab, newline and carriage return escaped.
void append_copy_text(std::string& out, std::string_view s) {
    for (char c : s) {
        switch (c) {
            case '\\':
                out += "\\\\";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                out += c;
        }
    }
}

void append_copy_csv(std::string& out, std::string_view s) {
    if (s.find_first_of(",\"\r\n") == std::string_view::npos && !s.empty()) {
        out += s;
        return;
    }
    out += '"';
    for (char c : s) {
        if (c == '"') out += '"';
        out += c;
    }
    out += '"';
}

}  // namespace

std::optional<prepare_result> prepare_copy(command_context& ctx, std::string_view text) {
    tokenizer tz(text);
    tz.next();  // COPY
    std::string query;
    token t = tz.next();
    if (t.is_punct('(')) {
        // The query runs to the matching ')'.
        size_t begin = tz.pos();
        int depth = 1;
        size_t end = begin;
        while (depth > 0) {
            token q = tz.next();
            if (q.k == token::kind::end) return copy_syntax("end of input");
            if (q.is_punct('(')) ++depth;
            if (q.is_punct(')') && --depth == 0) end = q.begin;
        }
        query = std::string(text.substr(begin, end - begin));
    } else if (t.k == token::kind::word || t.k == token::kind::quoted) {
        // COPY table [(columns)]: every column, or those named.
        size_t begin = t.begin;
        while (tz.peek().is_punct('.')) {
            tz.next();
            tz.next();
        }
        std::string table(text.substr(begin, tz.pos() - begin));
        std::string columns = "*";
        if (tz.peek().is_punct('(')) {
            size_t open = tz.next().end;
            token c;
            do {
                c = tz.next();
            } while (c.k != token::kind::end && !c.is_punct(')'));
            columns = std::string(text.substr(open, c.begin - open));
        }
        query = fmt::format("SELECT {} FROM {}", columns, table);
    } else {
        return prepare_result(copy_syntax(t.text));
    }
    token dir = tz.next();
    // DuckDB writes COPY ... TO 'file' itself, under --sql-export-dir, and says why it
    // refuses a file elsewhere (docs/sql.md); COPY ... FROM is refused here.
    if (dir.is_word("TO") && !tz.peek().is_word("STDOUT")) return std::nullopt;
    if (dir.is_word("FROM"))
        return prepare_result(pg_error{"0A000", "COPY FROM is not supported: use INSERT"});
    if (!dir.is_word("TO")) return prepare_result(copy_syntax(dir.text));
    token target = tz.next();
    if (!target.is_word("STDOUT"))
        return prepare_result(pg_error{"0A000", "COPY TO a file is not supported: use TO STDOUT"});
    query_info info;
    info.tag = "COPY";
    if (auto err = parse_copy_options(tz, info)) return prepare_result(*err);
    auto r = prepare_query(ctx, query, nullptr);
    if (auto* q = std::get_if<prepared_query>(&r)) {
        if (!q->stmt || q->stmt->columns().empty())
            return prepare_result(pg_error{"0A000", "COPY needs a query that returns rows"});
        q->info = info;
    }
    return r;
}

bool pg_connection::run_copy_out(prepared_query& q) {
    bool was_in_tx = _session->in_transaction();
    statement& st = *q.stmt;
    const auto& cols = st.columns();
    const copy_format format = q.info.copy;
    const auto oids = choose_oids(cols, nullptr);
    const int16_t field_format = format == copy_format::binary ? 1 : 0;
    {
        msg_writer w(_out, 'H');  // CopyOutResponse
        w.raw(std::string(1, static_cast<char>(field_format)));
        w.i16(static_cast<int16_t>(cols.size()));
        for (size_t i = 0; i < cols.size(); ++i) w.i16(field_format);
    }
    // The binary header goes out with the first row (or the trailer), as PostgreSQL
    // sends it: DuckDB reads it from the first CopyData with the row after it.
    std::string header;
    if (format == copy_format::binary) {
        header.assign("PGCOPY\n\377\r\n\0", 11);
        header.append(8, '\0');  // flags, header extension length
    } else if (format == copy_format::csv && q.info.copy_header) {
        msg_writer w(_out, 'd');
        for (size_t i = 0; i < cols.size(); ++i) {
            if (i) w.out() += ',';
            append_copy_csv(w.out(), cols[i].name);
        }
        w.out() += '\n';
    }
    int64_t rows = 0;
    auto s = st.step();
    for (; s == statement::step_state::row; s = st.step()) {
        const auto& row = st.row();
        std::string cells = std::exchange(header, {});
        if (format == copy_format::binary) {
            cells.push_back(static_cast<char>(cols.size() >> 8));
            cells.push_back(static_cast<char>(cols.size() & 0xFF));
        }
        for (size_t i = 0; i < cols.size(); ++i) {
            static const value null_value;
            const value& v = i < row.size() ? row[i] : null_value;
            if (format == copy_format::binary) {
                pg_error err;
                if (!append_cell(cells, v, oids[i], 1, err)) {
                    // An ErrorResponse ends the copy.
                    st.reset();
                    send_error(err, was_in_tx);
                    return false;
                }
                continue;
            }
            if (i) cells += format == copy_format::csv ? ',' : '\t';
            const bool null = std::holds_alternative<std::monostate>(v);
            if (format == copy_format::csv) {
                if (!null) append_copy_csv(cells, text_cell(v, oids[i]));
            } else if (null) {
                cells += "\\N";
            } else {
                append_copy_text(cells, text_cell(v, oids[i]));
            }
        }
        if (format != copy_format::binary) cells += '\n';
        msg_writer(_out, 'd').raw(cells);
        ++rows;
        if (!flush_if_large()) return false;
    }
    if (s == statement::step_state::failed) {
        send_error(to_pg_error(st.error()), was_in_tx);
        return false;
    }
    if (format == copy_format::binary) {
        msg_writer w(_out, 'd');
        w.raw(header);
        w.i16(-1);  // the trailer
    }
    put_empty(_out, 'c');  // CopyDone
    succeeded(q.info);
    put_command_complete(_out, fmt::format("COPY {}", rows));
    return true;
}

}  // namespace sluice::sql::pg

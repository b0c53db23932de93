#include "sql/http/result_format.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "sql/http/http_message.h"

namespace sluice::sql::http {

std::optional<result_format> parse_format(std::string_view name) {
    if (iequals(name, "json")) return result_format::json;
    if (iequals(name, "csv")) return result_format::csv;
    if (iequals(name, "ndjson")) return result_format::ndjson;
    return std::nullopt;
}

std::optional<result_format> format_from_accept(std::string_view accept) {
    // Media ranges in the client's order; quality values are not weighed (a client
    // naming one of these formats names it first in practice).
    while (!accept.empty()) {
        auto comma = accept.find(',');
        auto range = accept.substr(0, comma);
        range = range.substr(0, range.find(';'));
        while (!range.empty() && (range.front() == ' ' || range.front() == '\t'))
            range.remove_prefix(1);
        while (!range.empty() && (range.back() == ' ' || range.back() == '\t'))
            range.remove_suffix(1);
        if (iequals(range, "application/json")) return result_format::json;
        if (iequals(range, "text/csv")) return result_format::csv;
        if (iequals(range, "application/x-ndjson") || iequals(range, "application/ndjson"))
            return result_format::ndjson;
        if (comma == std::string_view::npos) break;
        accept.remove_prefix(comma + 1);
    }
    return std::nullopt;
}

std::string_view content_type(result_format f) {
    switch (f) {
        case result_format::csv:
            return "text/csv; charset=utf-8; header=present";
        case result_format::ndjson:
            return "application/x-ndjson";
        case result_format::json:
            break;
    }
    return "application/json";
}

std::string_view format_name(result_format f) {
    switch (f) {
        case result_format::csv:
            return "csv";
        case result_format::ndjson:
            return "ndjson";
        case result_format::json:
            break;
    }
    return "json";
}

std::string format_real(double d) {
    std::string s = fmt::format("{}", d);
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return s;
}

void append_json_value(std::string& out, const value& v) {
    switch (v.index()) {
        case 0:
            out += "null";
            return;
        case 1:
            out += fmt::format_int(std::get<int64_t>(v)).str();
            return;
        case 2: {
            double d = std::get<double>(v);
            out += std::isfinite(d) ? format_real(d) : "null";
            return;
        }
        case 3:
            append_json_string(out, std::get<std::string>(v));
            return;
        default: {
            auto b = as_chars(std::get<bytes>(v));
            if (is_valid_utf8(b)) {
                append_json_string(out, b);
            } else {
                out += "{\"base64\":\"";
                out += base64_encode(b);
                out += "\"}";
            }
        }
    }
}

std::string_view storage_class(const value& v) {
    switch (v.index()) {
        case 1:
            return "INTEGER";
        case 2:
            return "REAL";
        case 3:
            return "TEXT";
        case 4:
            return "BLOB";
        default:
            return "";
    }
}

std::string error_json(std::string_view kind, std::string_view sqlstate_code,
                       std::string_view message) {
    std::string out = "{\"error\":{\"kind\":";
    append_json_string(out, kind);
    if (!sqlstate_code.empty()) {
        out += ",\"sqlstate\":";
        append_json_string(out, sqlstate_code);
    }
    out += ",\"message\":";
    append_json_string(out, message);
    out += "}}";
    return out;
}

std::string error_json(const query_error& e) {
    return error_json(failure_name(e.kind), sqlstate(e.kind), e.message);
}

namespace {

std::string elapsed_text(double ms) {
    return fmt::format("{:.3f}", ms);
}

// {"columns":[...],"rows":[\n[...],\n...\n],"row_count":N,"elapsed_ms":x}, or with
// "error" before "elapsed_ms" when the statement failed after its first rows.
class json_writer : public result_writer {
  public:
    explicit json_writer(std::string& out) : _out(out) {}

    void begin_rows(const std::vector<column>& cols) override { _cols = cols; }

    void row(const std::vector<value>& r) override {
        if (!_head_written) write_head(&r);
        _out += _rows == 0 ? "\n[" : ",\n[";
        for (size_t i = 0; i < r.size(); ++i) {
            if (i) _out.push_back(',');
            append_json_value(_out, r[i]);
        }
        _out.push_back(']');
        ++_rows;
    }

    void no_rows(std::string_view command, int64_t changes) override {
        _out += "{\"columns\":[],\"rows\":[],\"command\":";
        append_json_string(_out, command);
        _out += ",\"changes\":" + std::to_string(changes);
        _head_written = true;
        _no_rows = true;
    }

    void finish(const result_summary& s) override {
        end_rows(s);
        _out += ",\"elapsed_ms\":" + elapsed_text(s.elapsed_ms) + "}\n";
    }

    void fail(const query_error& e, const result_summary& s) override {
        end_rows(s);
        std::string err = error_json(e);  // {"error":{...}}: take its member
        _out += ",";
        _out.append(err, 1, err.size() - 2);
        _out += ",\"elapsed_ms\":" + elapsed_text(s.elapsed_ms) + "}\n";
    }

  private:
    void write_head(const std::vector<value>* first) {
        _out += "{\"columns\":[";
        for (size_t i = 0; i < _cols.size(); ++i) {
            if (i) _out.push_back(',');
            _out += "{\"name\":";
            append_json_string(_out, _cols[i].name);
            _out += ",\"type\":";
            std::string_view type = _cols[i].decl_type;
            if (type.empty() && first && i < first->size()) type = storage_class((*first)[i]);
            if (type.empty())
                _out += "null";
            else
                append_json_string(_out, type);
            _out.push_back('}');
        }
        _out += "],\"rows\":[";
        _head_written = true;
    }

    void end_rows(const result_summary& s) {
        if (_no_rows) return;
        if (!_head_written) write_head(nullptr);
        _out += _rows == 0 ? "]" : "\n]";
        _out += ",\"row_count\":" + std::to_string(s.row_count);
    }

    std::string& _out;
    std::vector<column> _cols;
    uint64_t _rows = 0;
    bool _head_written = false;
    bool _no_rows = false;
};

void append_csv_field(std::string& out, std::string_view s) {
    // RFC 4180: quote a field holding a comma, quote or line break; double the quotes.
    // An empty string is quoted so that it differs from NULL (an empty field), as in
    // PostgreSQL's COPY ... CSV.
    if (!s.empty() && s.find_first_of(",\"\r\n") == std::string_view::npos) {
        out.append(s);
        return;
    }
    out.push_back('"');
    for (char c : s) {
        if (c == '"') out.push_back('"');
        out.push_back(c);
    }
    out.push_back('"');
}

void append_csv_value(std::string& out, const value& v) {
    switch (v.index()) {
        case 0:
            return;
        case 1:
            out += fmt::format_int(std::get<int64_t>(v)).str();
            return;
        case 2: {
            double d = std::get<double>(v);
            if (std::isnan(d))
                out += "NaN";
            else if (std::isinf(d))
                out += d > 0 ? "Infinity" : "-Infinity";
            else
                out += format_real(d);
            return;
        }
        case 3:
            append_csv_field(out, scrub_utf8(std::get<std::string>(v)));
            return;
        default: {
            auto b = as_chars(std::get<bytes>(v));
            append_csv_field(out, is_valid_utf8(b) ? std::string(b) : base64_encode(b));
        }
    }
}

// A header line of column names, then one line per row, CRLF-terminated. A failure
// after rows adds the line `#error,<kind>,<sqlstate>,<message>`.
class csv_writer : public result_writer {
  public:
    explicit csv_writer(std::string& out) : _out(out) {}

    void begin_rows(const std::vector<column>& cols) override {
        for (size_t i = 0; i < cols.size(); ++i) {
            if (i) _out.push_back(',');
            append_csv_field(_out, scrub_utf8(cols[i].name));
        }
        _out += "\r\n";
    }
    void row(const std::vector<value>& r) override {
        for (size_t i = 0; i < r.size(); ++i) {
            if (i) _out.push_back(',');
            append_csv_value(_out, r[i]);
        }
        _out += "\r\n";
    }
    void no_rows(std::string_view command, int64_t changes) override {
        _out += "command,changes\r\n";
        append_csv_field(_out, command);
        _out += "," + std::to_string(changes) + "\r\n";
    }
    void finish(const result_summary&) override {}
    void fail(const query_error& e, const result_summary&) override {
        _out += "#error,";
        _out += failure_name(e.kind);
        _out += ",";
        _out += sqlstate(e.kind);
        _out += ",";
        append_csv_field(_out, scrub_utf8(e.message));
        _out += "\r\n";
    }

  private:
    std::string& _out;
};

// One object per row keyed by column name, one per line. A failure after rows adds
// the line {"error":{...}}.
class ndjson_writer : public result_writer {
  public:
    explicit ndjson_writer(std::string& out) : _out(out) {}

    void begin_rows(const std::vector<column>& cols) override {
        _keys.clear();
        for (const auto& c : cols) {
            std::string k;
            append_json_string(k, c.name);
            _keys.push_back(std::move(k));
        }
    }
    void row(const std::vector<value>& r) override {
        _out.push_back('{');
        for (size_t i = 0; i < r.size() && i < _keys.size(); ++i) {
            if (i) _out.push_back(',');
            _out += _keys[i];
            _out.push_back(':');
            append_json_value(_out, r[i]);
        }
        _out += "}\n";
    }
    void no_rows(std::string_view command, int64_t changes) override {
        _out += "{\"command\":";
        append_json_string(_out, command);
        _out += ",\"changes\":" + std::to_string(changes) + "}\n";
    }
    void finish(const result_summary&) override {}
    void fail(const query_error& e, const result_summary&) override {
        _out += error_json(e) + "\n";
    }

  private:
    std::string& _out;
    std::vector<std::string> _keys;
};

}  // namespace

std::unique_ptr<result_writer> make_result_writer(result_format f, std::string& out) {
    switch (f) {
        case result_format::csv:
            return std::make_unique<csv_writer>(out);
        case result_format::ndjson:
            return std::make_unique<ndjson_writer>(out);
        case result_format::json:
            break;
    }
    return std::make_unique<json_writer>(out);
}

}  // namespace sluice::sql::http

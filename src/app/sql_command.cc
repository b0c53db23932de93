#include "app/sql_command.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <memory>

#include "app/http_admin.h"
#include "net/listener.h"
#include "sql/http/result_format.h"
#include "sql/http/sql_client.h"
#include "sql/http/table_format.h"

namespace sluice::app {
namespace {

namespace http = sql::http;

struct sql_options {
    server_flags server;
    std::string format;  // empty: table on a terminal, csv otherwise
    uint64_t timeout_ms = 0;
    uint64_t max_rows = 0;
    std::vector<std::string> params;
    std::string sql = "-";
};

// Exit codes: 0 success, 1 an error the server reported, 2 no usable connection.
constexpr int exit_query_error = 1;
constexpr int exit_connection = 2;

// Streams a result to stdout through a result writer, in pieces.
class stdout_sink : public http::result_sink {
  public:
    explicit stdout_sink(http::result_format f) : _inner(f, _buf) {}
    void begin_rows(const std::vector<sql::column>& cols) override { _inner.begin_rows(cols); }
    void row(const std::vector<sql::value>& r) override {
        _inner.row(r);
        // Write in pieces of about 64 KiB: few syscalls, little memory.
        if (_buf.size() >= 64 * 1024) flush();
    }
    void no_rows(std::string_view command, int64_t changes) override {
        _inner.no_rows(command, changes);
    }
    void finish(const http::result_summary& s) override { _inner.finish(s); }
    void flush() {
        std::fwrite(_buf.data(), 1, _buf.size(), stdout);
        _buf.clear();
    }

  private:
    std::string _buf;
    http::writer_sink _inner;
};

// Collects a result for the aligned table, which needs every width first.
class table_sink : public http::result_sink {
  public:
    void begin_rows(const std::vector<sql::column>& cols) override { _cols = cols; }
    void row(const std::vector<sql::value>& r) override { _rows.push_back(r); }
    void no_rows(std::string_view command, int64_t changes) override {
        _text = http::render_command(command, changes);
    }
    void finish(const http::result_summary&) override {
        if (_text.empty()) _text = http::render_table(_cols, _rows);
    }
    const std::string& text() const { return _text; }

  private:
    std::vector<sql::column> _cols;
    std::vector<std::vector<sql::value>> _rows;
    std::string _text;
};

int report(const http::client_error& e) {
    std::string where = !e.sqlstate.empty() ? "SQLSTATE " + e.sqlstate
                        : e.http_status     ? "HTTP " + std::to_string(e.http_status)
                                            : "";
    std::cerr << "error: " << e.message << (where.empty() ? "" : " (" + where + ")") << "\n";
    if (e.where == http::client_error::origin::connect)
        std::cerr << "hint: is a broker serving HTTP there (sluice serve --http HOST:PORT), "
                     "and is it https:// or http://?\n";
    return e.where == http::client_error::origin::server ? exit_query_error : exit_connection;
}

int run(const sql_options& o) {
    auto target = http::parse_server_flags(o.server.server, o.server.auth_user, o.server.tls_ca,
                                            o.server.tls_cert, o.server.tls_key);
    if (!target) {
        std::cerr << "error: " << target.err().message << "\n";
        return exit_connection;
    }
    const net::host_port* addr = &target->address;
    http::client_request req;
    if (o.sql.empty() || o.sql == "-") {
        req.sql.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    } else {
        req.sql = o.sql;
    }
    if (o.timeout_ms) req.timeout_ms = o.timeout_ms;
    if (o.max_rows) req.max_rows = o.max_rows;
    req.params = o.params;
    http::client_options copts = target->opts;
    // The server enforces the time limit; the client waits a little longer for its
    // answer, and indefinitely when no limit was asked (the server's default applies).
    if (o.timeout_ms)
        copts.read_timeout_ms =
            static_cast<int>(std::min<uint64_t>(o.timeout_ms + 10'000, INT32_MAX));

    std::string format = o.format.empty() ? (isatty(STDOUT_FILENO) ? "table" : "csv") : o.format;
    if (format == "table") {
        table_sink sink;
        if (auto e = http::run_sql(*addr, req, sink, copts)) return report(*e);
        std::fwrite(sink.text().data(), 1, sink.text().size(), stdout);
        return 0;
    }
    stdout_sink sink(*http::parse_format(format));
    auto e = http::run_sql(*addr, req, sink, copts);
    sink.flush();
    std::fflush(stdout);
    return e ? report(*e) : 0;
}

}  // namespace

void add_sql_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<sql_options>();
    auto* cmd = app.add_subcommand(
        "sql", "Run SQL on a broker's HTTP endpoint: a table on a terminal, CSV when piped");
    cmd->add_option("sql", opts->sql,
                    "The statement(s); several separated by ';' give the last one's result. "
                    "Omitted or '-': read from stdin");
    add_server_flags(cmd, opts->server);
    cmd->add_option("--format,-f", opts->format,
                    "Output: table, csv, json or ndjson (default: table on a terminal, else csv)")
        ->check(CLI::IsMember({"table", "csv", "json", "ndjson"}));
    cmd->add_option("--timeout-ms", opts->timeout_ms,
                    "Time limit in ms (only lowers the broker's limit)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--max-rows", opts->max_rows,
                    "Row limit (only lowers the broker's limit); more rows are an error")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--param,-p", opts->params,
                    "A value for $1, $2, ... in order (repeatable); 42 is an integer, 1.5 a "
                    "real, anything else text")
        ->allow_extra_args(false);  // one value per --param: the SQL may follow
    cmd->callback([opts, &exit_code] { exit_code = run(*opts); });
}

}  // namespace sluice::app

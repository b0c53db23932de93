#include "app/expansion_command.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "app/http_admin.h"
#include "sql/http/sql_client.h"
#include "sql/json_text.h"

namespace sluice::app {
namespace {

namespace http = sql::http;

struct create_options {
    std::string topic, target, schema_file, source = "value";
    bool flatten = false, copy_source = false, backfill = false, wait = false;
};

using common_options = server_flags;

// One call to the API; prints the broker's error and sets `code` on failure.
std::optional<http::http_reply> call(const common_options& c, std::string_view method,
                                     const std::string& target, const std::string& body,
                                     int& code) {
    return admin_call("sluice expansion", c, method, target, body, code);
}

std::string text_or_empty(simdjson::dom::element e, const char* key) {
    std::string_view v;
    if (e[key].get(v)) return {};
    return std::string(v);
}

int64_t int_or_zero(simdjson::dom::element e, const char* key) {
    int64_t v = 0;
    if (e[key].get(v)) return 0;
    return v;
}

std::string backfill_text(simdjson::dom::element e) {
    const int64_t total = int_or_zero(e["backfill"], "total");
    const int64_t done = int_or_zero(e["backfill"], "done");
    if (total == 0) return "-";
    return fmt::format("{}/{} ({:.0f}%)", done, total,
                       100.0 * static_cast<double>(done) / static_cast<double>(total));
}

int create(const common_options& c, const create_options& o) {
    std::ifstream in(o.schema_file);
    if (!in) {
        std::fprintf(stderr, "sluice expansion: cannot read %s\n", o.schema_file.c_str());
        return exit_refused;
    }
    std::stringstream schema;
    schema << in.rdbuf();
    std::string body = "{\"topic\":";
    sql::append_json_string(body, o.topic);
    body += ",\"target\":";
    sql::append_json_string(body, o.target);
    body += ",\"schema\":";
    sql::append_json_string(body, schema.str());
    body += ",\"source\":";
    sql::append_json_string(body, o.source);
    body += fmt::format(",\"flatten\":{},\"copy_source\":{},\"backfill\":{}}}", o.flatten,
                        o.copy_source, o.backfill);
    int code = 0;
    auto reply = call(c, "POST", "/v1/expansions", body, code);
    if (!reply) return code;
    simdjson::dom::parser p;
    simdjson::dom::element e;
    if (p.parse(reply->body).get(e)) {
        std::fputs(reply->body.c_str(), stdout);
        return 0;
    }
    std::printf("created expansion %s of topic '%s'; its table's columns:\n",
                text_or_empty(e, "target").c_str(), text_or_empty(e, "topic").c_str());
    simdjson::dom::array cols;
    if (!e["columns"].get(cols))
        for (auto col : cols)
            std::printf("  %-32s %s\n", text_or_empty(col, "name").c_str(),
                        text_or_empty(col, "type").c_str());
    if (!o.backfill || !o.wait) {
        if (o.backfill)
            std::printf("backfilling in the background: `sluice expansion list` shows how far\n");
        return 0;
    }
    // --wait: report the backfill until it is done.
    const std::string path = "/v1/expansions/" + text_or_empty(e, "target");
    for (;;) {
        auto now = call(c, "GET", path, "", code);
        if (!now) return code;
        simdjson::dom::element s;
        if (p.parse(now->body).get(s)) return exit_refused;
        const auto state = text_or_empty(s, "state");
        std::printf("backfill: %s, %s\n", backfill_text(s).c_str(), state.c_str());
        std::fflush(stdout);
        if (state == "failed") {
            std::fprintf(stderr, "sluice expansion: %s\n", text_or_empty(s, "error").c_str());
            return exit_refused;
        }
        if (state != "backfilling") return 0;
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

int list(const common_options& c, bool json) {
    int code = 0;
    auto reply = call(c, "GET", "/v1/expansions", "", code);
    if (!reply) return code;
    if (json) {
        std::fputs(reply->body.c_str(), stdout);
        return 0;
    }
    simdjson::dom::parser p;
    simdjson::dom::array all;
    if (p.parse(reply->body)["expansions"].get(all)) {
        std::fprintf(stderr, "sluice expansion: unexpected answer: %s\n", reply->body.c_str());
        return exit_refused;
    }
    // ROWS: in the table now; SINCE START: written since the broker started.
    std::printf("%-32s %-24s %-6s %-12s %12s %12s %8s %s\n", "TARGET", "TOPIC", "SOURCE", "STATE",
                "ROWS", "SINCE START", "LAG", "BACKFILL");
    for (auto e : all) {
        int64_t rows = -1;
        const bool known = !e["rows"].get(rows);
        std::printf("%-32s %-24s %-6s %-12s %12s %12lld %8lld %s\n",
                    text_or_empty(e, "target").c_str(), text_or_empty(e, "topic").c_str(),
                    text_or_empty(e, "source").c_str(), text_or_empty(e, "state").c_str(),
                    known ? std::to_string(rows).c_str() : "?",
                    static_cast<long long>(int_or_zero(e, "rows_written")),
                    static_cast<long long>(int_or_zero(e, "lag")), backfill_text(e).c_str());
        if (auto err = text_or_empty(e, "error"); !err.empty())
            std::printf("  error: %s\n", err.c_str());
    }
    return 0;
}

int drop(const common_options& c, const std::string& target, bool drop_target) {
    int code = 0;
    auto reply =
        call(c, "DELETE", "/v1/expansions/" + target + (drop_target ? "?drop_target=true" : ""), "",
             code);
    if (!reply) return code;
    std::printf("dropped expansion %s%s\n", target.c_str(),
                drop_target ? " and its table" : "; its table stays");
    return 0;
}

}  // namespace

void add_expansion_commands(CLI::App& app, int& exit_code) {
    auto* cmd = app.add_subcommand(
        "expansion",
        "Expand a topic's JSON events into typed rows of a SQL table, on a running "
        "broker (its HTTP address)");
    cmd->require_subcommand(1);
    auto c = std::make_shared<common_options>();
    auto server = [c](CLI::App* sub) { add_server_flags(sub, *c); };

    auto o = std::make_shared<create_options>();
    auto* mk = cmd->add_subcommand("create", "Create an expansion");
    server(mk);
    mk->add_option("--topic,-t", o->topic, "Topic whose events are expanded")->required();
    mk->add_option("--target", o->target,
                   "SCHEMA.TABLE the rows go to (created when absent, with its schema)")
        ->required();
    mk->add_option("--schema", o->schema_file,
                   "JSON file: {\"fields\": [{\"name\": ..., \"type\": ...}, ...]}")
        ->required();
    mk->add_option("--source", o->source, "Which part of each event is the JSON: value or key")
        ->check(CLI::IsMember({"value", "key"}))
        ->capture_default_str();
    mk->add_flag("--flatten", o->flatten,
                 "Struct fields become columns parent__child (without: the struct as JSON text)");
    mk->add_flag("--copy-source", o->copy_source, "Keep each event's source bytes in _source");
    mk->add_flag("--backfill", o->backfill,
                 "Also expand the events already in the topic, in the background");
    mk->add_flag("--wait", o->wait, "With --backfill: report progress until it is done");
    mk->callback([c, o, &exit_code] { exit_code = create(*c, *o); });

    auto json = std::make_shared<bool>(false);
    auto* ls = cmd->add_subcommand("list", "List expansions: state, rows, lag, backfill");
    server(ls);
    ls->add_flag("--json", *json, "Print the API's JSON");
    ls->callback([c, json, &exit_code] { exit_code = list(*c, *json); });

    auto target = std::make_shared<std::string>();
    auto drop_target = std::make_shared<bool>(false);
    auto* rm = cmd->add_subcommand("drop", "Drop an expansion (named by its target)");
    server(rm);
    rm->add_option("target", *target, "SCHEMA.TABLE")->required();
    rm->add_flag("--drop-target", *drop_target, "Drop the target table too");
    rm->callback(
        [c, target, drop_target, &exit_code] { exit_code = drop(*c, *target, *drop_target); });
}

}  // namespace sluice::app

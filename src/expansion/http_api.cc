#include "expansion/http_api.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/logging.h"
#include "security/gate.h"
#include "sql/http/http_server.h"
#include "sql/json_text.h"

namespace sluice::expansion {
namespace {

using sql::append_json_string;
using sql::http::http_request;
using sql::http::http_response;

// The create request's body: {"topic", "target", "schema" (object, or its text),
// "source", "flatten", "copy_source", "backfill"}.
result<create_request> parse_create(const std::string& body) {
    auto bad = [](std::string why) { return error{errc::invalid_argument, std::move(why)}; };
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto e = parser.parse(body).get(doc))
        return bad(fmt::format("the body is not JSON: {}", simdjson::error_message(e)));
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) return bad("the body must be a JSON object");
    create_request r;
    bool has_topic = false, has_target = false, has_schema = false;
    for (auto member : obj) {
        const std::string_view key = member.key;
        const simdjson::dom::element value = member.value;
        auto text = [&](std::string& out) -> result<void> {
            std::string_view v;
            if (value.get_string().get(v)) return bad(fmt::format("\"{}\" must be a string", key));
            out = std::string(v);
            return {};
        };
        auto flag = [&](bool& out) -> result<void> {
            if (value.get_bool().get(out))
                return bad(fmt::format("\"{}\" must be true or false", key));
            return {};
        };
        result<void> r_ok = {};
        if (key == "topic") {
            r_ok = text(r.topic), has_topic = true;
        } else if (key == "target") {
            r_ok = text(r.target), has_target = true;
        } else if (key == "schema") {
            has_schema = true;
            if (value.is_string())
                r_ok = text(r.schema);
            else
                r.schema = simdjson::minify(value);
        } else if (key == "source") {
            r_ok = text(r.source);
        } else if (key == "flatten") {
            r_ok = flag(r.flatten);
        } else if (key == "copy_source") {
            r_ok = flag(r.copy_source);
        } else if (key == "backfill") {
            r_ok = flag(r.backfill);
        } else {
            return bad(
                fmt::format("unknown key \"{}\" (known: topic, target, schema, source, "
                            "flatten, copy_source, backfill)",
                            key));
        }
        if (!r_ok) return r_ok.err();
    }
    if (!has_topic || !has_target || !has_schema)
        return bad("\"topic\", \"target\" and \"schema\" are required");
    return r;
}

}  // namespace

std::string status_json(const status& s) {
    std::string out = "{\"target\":";
    append_json_string(out, s.info.target);
    out += ",\"topic\":";
    append_json_string(out, s.info.topic);
    out += ",\"source\":";
    append_json_string(out, s.info.source);
    out += fmt::format(",\"flatten\":{},\"copy_source\":{},\"created_ms\":{}", s.info.flatten,
                       s.info.copy_source, s.info.created_ms);
    out += ",\"state\":";
    append_json_string(out, s.state);
    out += ",\"error\":";
    if (s.error.empty())
        out += "null";
    else
        append_json_string(out, s.error);
    out += ",\"rows\":" + (s.rows < 0 ? std::string("null") : std::to_string(s.rows));
    out += fmt::format(",\"rows_written\":{},\"lag\":{},\"backfill\":{{\"total\":{},\"done\":{}}}",
                       s.rows_written, s.lag, s.backfill_total, s.backfill_done);
    out += ",\"columns\":[";
    for (size_t i = 0; i < s.columns.size(); ++i) {
        out += i ? ",{\"name\":" : "{\"name\":";
        append_json_string(out, s.columns[i].name);
        out += ",\"type\":";
        append_json_string(out, s.columns[i].decl_type);
        out += '}';
    }
    out += "],\"schema\":";
    out += s.info.schema;
    out += '}';
    return out;
}

void add_http_routes(sql::http_server& server, service& svc) {
    using security::action;
    const sql::http_server& srv = server;
    server.add_route(
        "POST", "/v1/expansions", [&svc, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::alter, "expansion")) return;
            auto r = parse_create(req.body);
            if (!r) return sql::send_error(resp, r.err());
            // The target table will hold the topic's records: whoever creates it must be
            // allowed to read them.
            if (!sql::authorize(srv, req, resp, action::read,
                                {security::resource_kind::topic, r->topic}, "expansion"))
                return;
            auto s = svc.create(*r);
            if (!s) {
                log_warn("expansion", "create {} refused: {}", r->target, s.err().message);
                return sql::send_error(resp, s.err());
            }
            resp.send(201, "application/json", status_json(*s) + "\n");
        });
    server.add_route("GET", "/v1/expansions",
                     [&svc, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::describe, "expansion"))
                             return;
                         std::string out = "{\"expansions\":[";
                         bool first = true;
                         for (const auto& s : svc.list()) {
                             if (!first) out += ',';
                             first = false;
                             out += status_json(s);
                         }
                         out += "]}\n";
                         resp.send(200, "application/json", out);
                     });
    server.add_route(
        "GET", "/v1/expansions/*", [&svc, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::describe, "expansion")) return;
            auto s = svc.find(req.path_suffix);
            if (!s)
                return sql::send_error(
                    resp,
                    {errc::not_found, fmt::format("no expansion has target {}", req.path_suffix)});
            resp.send(200, "application/json", status_json(*s) + "\n");
        });
    server.add_route(
        "DELETE", "/v1/expansions/*", [&svc, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::alter, "expansion")) return;
            bool drop_table = false;
            auto params = req.query_params();
            if (!params) return sql::send_error(resp, {errc::invalid_argument, "malformed query"});
            for (const auto& [k, v] : *params) {
                if (k != "drop_target")
                    return sql::send_error(
                        resp, {errc::invalid_argument, fmt::format("unknown parameter '{}' (known: "
                                                                   "drop_target)",
                                                                   k)});
                if (v != "true" && v != "false" && v != "1" && v != "0")
                    return sql::send_error(
                        resp, {errc::invalid_argument, "drop_target must be true or false"});
                drop_table = v == "true" || v == "1";
            }
            if (auto r = svc.drop(req.path_suffix, drop_table); !r)
                return sql::send_error(resp, r.err());
            std::string out = "{\"dropped\":";
            append_json_string(out, req.path_suffix);
            out += fmt::format(",\"target_dropped\":{}}}\n", drop_table);
            resp.send(200, "application/json", out);
        });
}

}  // namespace sluice::expansion

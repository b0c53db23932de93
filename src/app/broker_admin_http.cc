#include "app/broker_admin_http.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "broker/broker.h"
#include "common/logging.h"
#include "security/gate.h"
#include "sql/http/http_server.h"
#include "sql/json_text.h"

namespace sluice::app {
namespace {

namespace http = sql::http;
using security::action;
using security::resource_kind;

constexpr auto admin_loop_wait = std::chrono::seconds(30);

// What a change on the loop thread answers: 200 and a JSON body, or an error.
struct outcome {
    int status = 200;
    std::string kind;
    std::string body;  // the JSON body, or the error's message
};

outcome ok(std::string body) {
    return {200, {}, std::move(body)};
}
outcome refuse(int status, std::string kind, std::string message) {
    return {status, std::move(kind), std::move(message)};
}
outcome failed(const error& e) {
    switch (e.code) {
        case errc::not_found:
            return refuse(404, "not_found", e.message);
        case errc::invalid_config:
        case errc::invalid_argument:
            return refuse(400, "invalid", e.message);
        default:
            return refuse(500, "internal", e.message);
    }
}

// Runs fn on the broker's loop thread (where topics, logs and groups live) and waits for
// the outcome it hands to `done`.
template <typename Fn>
outcome on_loop(broker::broker& b, Fn fn) {
    auto p = std::make_shared<std::promise<outcome>>();
    auto f = p->get_future();
    b.loop().post(
        [fn = std::move(fn), p]() mutable { fn([p](outcome o) { p->set_value(std::move(o)); }); });
    if (f.wait_for(admin_loop_wait) != std::future_status::ready)
        return refuse(503, "busy", "the broker did not answer in time");
    return f.get();
}

void answer(http::http_response& resp, const outcome& o) {
    if (o.status == 200) {
        resp.send(200, "application/json", o.body);
    } else {
        resp.send_error(o.status, o.kind, o.body);
    }
}

// "NAME/configs" -> NAME.
std::optional<std::string> strip(const std::string& suffix, std::string_view tail) {
    if (suffix.size() <= tail.size() || !suffix.ends_with(tail)) return std::nullopt;
    return suffix.substr(0, suffix.size() - tail.size());
}

void put_topic_configs(sql::http_server& server, broker::broker& b, const http::http_request& req,
                       http::http_response& resp) {
    auto topic = strip(req.path_suffix, "/configs");
    if (!topic) return (void)resp.send_error(404, "not_found", "no endpoint at " + req.path);
    if (!sql::authorize(server, req, resp, action::alter_configs, {resource_kind::topic, *topic},
                        "admin"))
        return;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(req.body).get(doc) || !doc.is_object())
        return (void)resp.send_error(400, "invalid", "the body must be a JSON object");
    std::map<std::string, std::string> set;
    std::vector<std::string> drop;
    simdjson::dom::object set_obj;
    if (!doc["set"].get(set_obj)) {
        for (auto [k, v] : set_obj) {
            std::string_view s;
            if (v.get(s))
                return (void)resp.send_error(400, "invalid", "config values must be strings");
            set[std::string(k)] = std::string(s);
        }
    }
    simdjson::dom::array drop_arr;
    if (!doc["delete"].get(drop_arr)) {
        for (auto v : drop_arr) {
            std::string_view s;
            if (v.get(s)) return (void)resp.send_error(400, "invalid", "delete lists config names");
            drop.emplace_back(s);
        }
    }
    const std::string who = req.principal.to_string();
    answer(resp, on_loop(b, [&b, name = *topic, set, drop, who](auto done) {
               const broker::topic_state* t = b.topics().find(name);
               if (!t) return done(refuse(404, "not_found", "topic '" + name + "' does not exist"));
               auto configs = t->info.configs;
               for (const auto& d : drop) configs.erase(d);
               for (const auto& [k, v] : set) configs[k] = v;
               if (auto r = b.topics().set_configs(name, configs, false); !r)
                   return done(failed(r.err()));
               log_info("admin", "{} over HTTP: topic '{}' configs now {}", who, name,
                        configs.size());
               std::string out = "{\"topic\":";
               sql::append_json_string(out, name);
               out += ",\"configs\":{";
               bool first = true;
               for (const auto& [k, v] : configs) {
                   if (!first) out += ',';
                   first = false;
                   sql::append_json_string(out, k);
                   out += ':';
                   sql::append_json_string(out, v);
               }
               done(ok(out + "}}\n"));
           }));
}

struct reset_request {
    std::string group;
    std::string to;  // earliest, latest, timestamp
    int64_t timestamp_ms = 0;
    std::string topic;  // empty: every topic the group has offsets for
};

// The offset a reset moves a partition to.
result<int64_t> target_offset(const log::partition_store& plog, const reset_request& r) {
    if (r.to == "earliest") return plog.log_start_offset();
    if (r.to == "latest") return plog.high_watermark();
    auto found = plog.offset_for_timestamp(r.timestamp_ms);
    if (!found) return found.err();
    // No record at or after the time: the end, as kafka-consumer-groups does.
    return *found ? (*found)->offset : plog.high_watermark();
}

void reset_offsets(broker::broker& b, const reset_request& r,
                   const std::function<bool(const std::string&)>& may_read,
                   const std::function<void(outcome)>& done) {
    auto& groups = b.groups();
    if (groups.check_commit(r.group, {"", std::nullopt, -1}) != protocol::error_code::none)
        return done(refuse(409, "conflict",
                           "group '" + r.group + "' has active members: stop its consumers first"));
    std::vector<topic_partition> tps;
    if (!r.topic.empty()) {
        const broker::topic_state* t = b.topics().find(r.topic);
        if (!t) return done(refuse(404, "not_found", "topic '" + r.topic + "' does not exist"));
        for (int32_t p = 0; p < t->info.partitions; ++p) tps.push_back({r.topic, p});
    } else {
        for (const auto& e : groups.committed_all(r.group)) tps.push_back(e.tp);
    }
    if (tps.empty())
        return done(refuse(404, "not_found", "group '" + r.group + "' has no committed offsets"));
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    std::vector<catalog::offset_write> writes;
    std::vector<group::offset_entry> entries;
    std::string out = "{\"group\":";
    sql::append_json_string(out, r.group);
    out += ",\"offsets\":[";
    for (const auto& tp : tps) {
        if (!may_read(tp.topic))
            return done(
                refuse(403, "forbidden", "KafkaRead on sluice:topic:" + tp.topic + " is needed"));
        log::partition_log* plog = b.logs().get(tp.topic, tp.partition);
        if (!plog) continue;  // deleted meanwhile
        auto off = target_offset(*plog, r);
        if (!off) return done(failed(off.err()));
        group::committed_offset v{*off, -1, std::string{}, now, -1};
        writes.push_back({catalog::offset_write::kind::commit,
                          {r.group, tp.topic, tp.partition, v.offset, v.leader_epoch, v.metadata,
                           v.commit_ms, v.expire_ms}});
        out += fmt::format("{}{{\"topic\":", entries.empty() ? "" : ",");
        sql::append_json_string(out, tp.topic);
        out += fmt::format(",\"partition\":{},\"offset\":{}}}", tp.partition, *off);
        entries.push_back({tp, std::move(v)});
    }
    out += "]}\n";
    b.store_offsets(std::move(writes), [&b, group = r.group, entries = std::move(entries),
                                        out = std::move(out), done](const result<void>& w) {
        if (!w) return done(failed(w.err()));
        b.groups().store_offsets(group, entries);
        done(ok(out));
    });
}

void post_reset_offsets(sql::http_server& server, broker::broker& b, const http::http_request& req,
                        http::http_response& resp) {
    auto group = strip(req.path_suffix, "/reset-offsets");
    if (!group) return (void)resp.send_error(404, "not_found", "no endpoint at " + req.path);
    if (!sql::authorize(server, req, resp, action::read, {resource_kind::group, *group}, "admin"))
        return;
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (parser.parse(req.body).get(doc) || !doc.is_object())
        return (void)resp.send_error(400, "invalid", "the body must be a JSON object");
    reset_request r;
    r.group = *group;
    std::string_view s;
    if (!doc["to"].get(s)) r.to = s;
    if (r.to != "earliest" && r.to != "latest" && r.to != "timestamp")
        return (void)resp.send_error(400, "invalid",
                                     "\"to\" must be earliest, latest or timestamp");
    if (r.to == "timestamp" && doc["timestamp_ms"].get(r.timestamp_ms))
        return (void)resp.send_error(400, "invalid", "\"timestamp_ms\" (an integer) is needed");
    if (!doc["topic"].get(s)) r.topic = s;
    const security::gate* gate = server.gate();
    auto may_read = [gate, p = req.principal](const std::string& topic) {
        return !gate || gate->allowed(p, action::read, {resource_kind::topic, topic});
    };
    const std::string who = req.principal.to_string();
    auto o = on_loop(b, [&b, r, may_read](auto done) { reset_offsets(b, r, may_read, done); });
    if (o.status == 200)
        log_info("admin", "{} over HTTP: group '{}' offsets reset to {}", who, r.group, r.to);
    answer(resp, o);
}

}  // namespace

void add_broker_admin_routes(sql::http_server& server, broker::broker& b) {
    server.add_route("PUT", "/v1/topics/*",
                     [&server, &b](const http::http_request& req, http::http_response& resp) {
                         put_topic_configs(server, b, req, resp);
                     });
    server.add_route("POST", "/v1/groups/*",
                     [&server, &b](const http::http_request& req, http::http_response& resp) {
                         post_reset_offsets(server, b, req, resp);
                     });
}

}  // namespace sluice::app

#include "app/security_admin.h"

#include <fmt/format.h>
#include <simdjson.h>

#include "common/logging.h"
#include "security/authorizer.h"
#include "security/gate.h"
#include "security/policy.h"
#include "sql/http/http_server.h"
#include "sql/json_text.h"

namespace sluice::app {
namespace {

result<void> check_user_change(const user_change& u) {
    if (u.name.empty()) return {errc::invalid_argument, "a user name must not be empty"};
    if (u.name == security::every_user)
        return {errc::invalid_argument,
                "'*' is no user name: a policy attached to '*' applies to every user"};
    if (u.password.empty()) return {errc::invalid_argument, "a password must not be empty"};
    if (u.iterations < security::min_iterations || u.iterations > security::max_iterations)
        return {errc::invalid_argument,
                fmt::format("iterations must be {}..{}", security::min_iterations,
                            security::max_iterations)};
    return {};
}

result<void> store_credentials(catalog::security_store& cat, const user_change& u,
                               const std::vector<security::scram_mechanism>& mechanisms) {
    for (auto m : mechanisms) {
        auto c = security::make_credential(m, u.password, u.iterations);
        auto r =
            cat.upsert_credential({u.name, static_cast<int8_t>(m), std::move(c.salt), c.iterations,
                                   std::move(c.stored_key), std::move(c.server_key)});
        if (!r) return r;
    }
    return {};
}

}  // namespace

result<void> add_user(catalog::security_store& cat, const user_change& u) {
    if (auto r = check_user_change(u); !r) return r;
    if (!cat.credentials(u.name).empty())
        return {errc::already_exists, fmt::format("user '{}' already exists", u.name)};
    auto mechanisms = u.mechanisms;
    if (mechanisms.empty())
        mechanisms = {security::scram_mechanism::sha256, security::scram_mechanism::sha512};
    return store_credentials(cat, u, mechanisms);
}

result<void> change_password(catalog::security_store& cat, const user_change& u) {
    if (auto r = check_user_change(u); !r) return r;
    auto existing = cat.credentials(u.name);
    if (existing.empty()) return {errc::not_found, fmt::format("no user '{}'", u.name)};
    // One credential per mechanism, as Kafka's AlterUserScramCredentials keeps them: the
    // mechanisms named are set, the others keep their own password.
    auto mechanisms = u.mechanisms;
    if (mechanisms.empty())
        for (const auto& c : existing)
            mechanisms.push_back(static_cast<security::scram_mechanism>(c.mechanism));
    return store_credentials(cat, u, mechanisms);
}

result<void> remove_user(catalog::security_store& cat, const std::string& name) {
    return cat.delete_user(name);
}

result<void> attach_policy(catalog::security_store& cat, const std::string& policy,
                           const std::string& user, bool external) {
    if (!external && user != "ANONYMOUS" && user != security::every_user &&
        cat.credentials(user).empty())
        return {errc::not_found,
                fmt::format("no user '{}': add it first (sluice user add), or pass --external "
                            "(\"external\": true) for a principal that is no Sluice user, such "
                            "as a client certificate's common name",
                            user)};
    return cat.attach_policy(policy, user);
}

std::string users_json(const catalog::security_store& cat) {
    std::string out = "{\"users\":[";
    bool first = true;
    for (const auto& [name, creds] : cat.list_users()) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":";
        sql::append_json_string(out, name);
        auto name_of = [](const catalog::scram_record& c) {
            return security::mechanism_name(static_cast<security::scram_mechanism>(c.mechanism));
        };
        out += ",\"mechanisms\":[";
        for (size_t i = 0; i < creds.size(); ++i) {
            out += i ? "," : "";
            sql::append_json_string(out, name_of(creds[i]));
        }
        // Each mechanism's credential has its own iterations (and password).
        out += "],\"credentials\":[";
        for (size_t i = 0; i < creds.size(); ++i) {
            out += i ? ",{\"mechanism\":" : "{\"mechanism\":";
            sql::append_json_string(out, name_of(creds[i]));
            out += fmt::format(",\"iterations\":{}}}", creds[i].iterations);
        }
        out += fmt::format("],\"iterations\":{}}}", creds.empty() ? 0 : creds[0].iterations);
    }
    return out + "]}";
}

result<void> put_policy(catalog::security_store& cat, const std::string& name,
                        const std::string& document) {
    auto p = security::parse_policy(name, document);
    if (!p) return p.err();
    return cat.put_policy(name, document);
}

std::string policies_json(const catalog::security_store& cat) {
    std::string out = "{\"policies\":[";
    bool first = true;
    for (const auto& p : cat.list_policies()) {
        out += first ? "" : ",";
        first = false;
        out += "{\"name\":";
        sql::append_json_string(out, p.name);
        out += ",\"users\":[";
        for (size_t i = 0; i < p.users.size(); ++i) {
            out += i ? "," : "";
            sql::append_json_string(out, p.users[i]);
        }
        // Stored documents were validated as JSON, so they embed as they are.
        out += "],\"document\":" + p.document + "}";
    }
    return out + "]}";
}

namespace {

using sql::http::http_request;
using sql::http::http_response;

void answer(http_response& resp, const result<void>& r, int ok_status = 204) {
    if (r) {
        resp.send(ok_status, "application/json", "{}\n");
        return;
    }
    sql::send_error(resp, r.err());
}

// The body of POST /v1/users and PUT /v1/users/NAME:
// {"name", "password", "mechanisms": ["SCRAM-SHA-256", ...], "iterations"}.
result<user_change> parse_user(const std::string& body, std::string name) {
    auto bad = [](std::string why) { return error{errc::invalid_argument, std::move(why)}; };
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    if (parser.parse(body).get_object().get(obj)) return bad("the body must be a JSON object");
    user_change u;
    u.name = std::move(name);
    for (auto [key, value] : obj) {
        std::string_view text;
        if (key == "name" && u.name.empty() && !value.get(text)) {
            u.name = std::string(text);
        } else if (key == "password" && !value.get(text)) {
            u.password = std::string(text);
        } else if (key == "iterations") {
            int64_t n = 0;
            if (value.get(n) || n < 0 || n > INT32_MAX) return bad("iterations must be a number");
            u.iterations = static_cast<int32_t>(n);
        } else if (key == "mechanisms") {
            simdjson::dom::array list;
            if (value.get(list)) return bad("mechanisms must be a list of names");
            for (auto m : list) {
                std::optional<security::scram_mechanism> mech;
                if (!m.get(text)) mech = security::parse_scram_mechanism(text);
                if (!mech) return bad("mechanisms: SCRAM-SHA-256 or SCRAM-SHA-512");
                u.mechanisms.push_back(*mech);
            }
        } else if (key != "name") {
            return bad(fmt::format("unexpected field '{}'", key));
        }
    }
    return u;
}

struct attachment {
    std::string user;
    bool external = false;
};

// {"user": NAME, "external": true|false}; an empty user when the body is not that.
attachment attachment_of(const std::string& body) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    std::string_view user;
    if (parser.parse(body).get(doc) || doc["user"].get(user)) return {};
    bool external = false;
    if (auto e = doc["external"]; e.error() != simdjson::NO_SUCH_FIELD && e.get(external))
        return {};
    return {std::string(user), external};
}

}  // namespace

void add_security_routes(sql::http_server& server, catalog::security_store& cat) {
    using security::action;
    const sql::http_server& srv = server;
    server.add_route("GET", "/v1/users",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::describe, "security"))
                             return;
                         resp.send(200, "application/json", users_json(cat) + "\n");
                     });
    server.add_route("POST", "/v1/users",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::alter, "security"))
                             return;
                         auto u = parse_user(req.body, {});
                         if (!u) return answer(resp, u.err());
                         answer(resp, add_user(cat, *u), 201);
                     });
    server.add_route("PUT", "/v1/users/*",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::alter, "security"))
                             return;
                         auto u = parse_user(req.body, req.path_suffix);
                         if (!u) return answer(resp, u.err());
                         answer(resp, change_password(cat, *u));
                     });
    server.add_route("DELETE", "/v1/users/*",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::alter, "security"))
                             return;
                         answer(resp, remove_user(cat, req.path_suffix));
                     });
    server.add_route("GET", "/v1/policies",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::describe, "security"))
                             return;
                         resp.send(200, "application/json", policies_json(cat) + "\n");
                     });
    // /v1/policies/NAME: the document; /v1/policies/NAME/users[/USER]: its attachments.
    server.add_route(
        "GET", "/v1/policies/*", [&cat, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::describe, "security")) return;
            auto p = cat.find_policy(req.path_suffix);
            if (!p)
                return answer(resp, error{errc::not_found, "no policy '" + req.path_suffix + "'"});
            resp.send(200, "application/json", p->document + "\n");
        });
    server.add_route("PUT", "/v1/policies/*",
                     [&cat, &srv](const http_request& req, http_response& resp) {
                         if (!sql::authorize_cluster(srv, req, resp, action::alter, "security"))
                             return;
                         answer(resp, put_policy(cat, req.path_suffix, req.body));
                     });
    server.add_route(
        "DELETE", "/v1/policies/*", [&cat, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::alter, "security")) return;
            const std::string& rest = req.path_suffix;
            auto users = rest.find("/users/");
            if (users == std::string::npos) return answer(resp, cat.delete_policy(rest));
            answer(resp, cat.detach_policy(rest.substr(0, users), rest.substr(users + 7)));
        });
    server.add_route(
        "POST", "/v1/policies/*", [&cat, &srv](const http_request& req, http_response& resp) {
            if (!sql::authorize_cluster(srv, req, resp, action::alter, "security")) return;
            const std::string& rest = req.path_suffix;
            constexpr std::string_view suffix = "/users";
            if (rest.size() <= suffix.size() || !rest.ends_with(suffix))
                return answer(resp, error{errc::not_found, "POST /v1/policies/NAME/users"});
            auto a = attachment_of(req.body);
            if (a.user.empty())
                return answer(resp,
                              error{errc::invalid_argument,
                                    "the body must be {\"user\": NAME[, \"external\": true]}"});
            answer(
                resp,
                attach_policy(cat, rest.substr(0, rest.size() - suffix.size()), a.user, a.external),
                201);
        });
}

}  // namespace sluice::app

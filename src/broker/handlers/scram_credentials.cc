#include <map>
#include <set>

#include "broker/broker.h"
#include "broker/handlers/handlers.h"
#include "protocol/messages/scram_credentials.h"
#include "security/credential.h"

namespace sluice::broker {

using protocol::error_code;
using security::resource_kind;

void handle_describe_user_scram_credentials(const request_context& ctx, request_body body) {
    protocol::describe_user_scram_credentials_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::describe_user_scram_credentials_response resp;
    if (!ctx.allowed(resource_kind::cluster)) {
        resp.error_code = code(error_code::cluster_authorization_failed);
        resp.error_message = "KafkaDescribe on sluice:cluster is needed to describe users";
        ctx.respond(resp);
        return;
    }
    auto& cat = ctx.b.access().store();
    auto describe = [&](const std::string& user, const std::vector<catalog::scram_record>& creds) {
        auto& out = resp.results.emplace_back();
        out.user = user;
        for (const auto& c : creds) out.credential_infos.push_back({c.mechanism, c.iterations});
    };
    if (!req.users || req.users->empty()) {
        for (const auto& [user, creds] : cat.list_users()) describe(user, creds);
        ctx.respond(resp);
        return;
    }
    std::map<std::string, int> asked;
    for (const auto& u : *req.users) ++asked[u.name];
    for (const auto& [name, times] : asked) {
        auto creds = cat.credentials(name);
        if (times > 1) {
            auto& out = resp.results.emplace_back();
            out.user = name;
            out.error_code = code(error_code::duplicate_resource);
            out.error_message = "user named more than once in the request";
        } else if (creds.empty()) {
            auto& out = resp.results.emplace_back();
            out.user = name;
            out.error_code = code(error_code::resource_not_found);
            out.error_message = "no SCRAM credential for user '" + name + "'";
        } else {
            describe(name, creds);
        }
    }
    ctx.respond(resp);
}

namespace {

// The first problem of one user's changes, or none.
std::pair<error_code, std::string> check_change(int8_t mechanism, const std::string& user,
                                                std::set<std::pair<std::string, int8_t>>& seen) {
    if (user.empty()) return {error_code::unacceptable_credential, "empty user name"};
    if (mechanism != static_cast<int8_t>(security::scram_mechanism::sha256) &&
        mechanism != static_cast<int8_t>(security::scram_mechanism::sha512))
        return {error_code::unsupported_sasl_mechanism,
                "unknown SCRAM mechanism " + std::to_string(mechanism)};
    if (!seen.insert({user, mechanism}).second)
        return {error_code::duplicate_resource,
                "a user's mechanism appears more than once in the request"};
    return {error_code::none, {}};
}

}  // namespace

void handle_alter_user_scram_credentials(const request_context& ctx, request_body body) {
    protocol::alter_user_scram_credentials_request req;
    if (!decode_request(ctx, body, req)) return;
    protocol::alter_user_scram_credentials_response resp;
    // One result per user: its first error, or success once all its changes applied.
    std::map<std::string, std::pair<error_code, std::string>> results;
    auto fail_user = [&](const std::string& user, error_code e, std::string msg) {
        auto& r = results[user];
        if (r.first == error_code::none) r = {e, std::move(msg)};
    };
    bool authorized = ctx.allowed(resource_kind::cluster);
    std::set<std::pair<std::string, int8_t>> seen;
    for (const auto& d : req.deletions) results.try_emplace(d.name);
    for (const auto& u : req.upsertions) results.try_emplace(u.name);
    if (!authorized) {
        for (auto& [user, r] : results)
            r = {error_code::cluster_authorization_failed,
                 "KafkaAlter on sluice:cluster is needed to change users"};
    } else {
        // Validate everything first, then apply the changes of users without errors.
        for (const auto& d : req.deletions) {
            auto [e, msg] = check_change(d.mechanism, d.name, seen);
            if (e != error_code::none) fail_user(d.name, e, std::move(msg));
        }
        for (const auto& u : req.upsertions) {
            auto [e, msg] = check_change(u.mechanism, u.name, seen);
            if (e == error_code::none && (u.iterations < security::min_iterations ||
                                          u.iterations > security::max_iterations)) {
                e = error_code::unacceptable_credential;
                msg = "iterations must be " + std::to_string(security::min_iterations) + ".." +
                      std::to_string(security::max_iterations);
            }
            if (e == error_code::none && (u.salt.empty() || u.salted_password.empty())) {
                e = error_code::unacceptable_credential;
                msg = "salt and salted password must not be empty";
            }
            if (e != error_code::none) fail_user(u.name, e, std::move(msg));
        }
        auto& cat = ctx.b.access().store();
        auto apply = [&](const std::string& user, const result<void>& r) {
            if (r) return;
            fail_user(user,
                      r.code() == errc::not_found
                          ? error_code::resource_not_found
                          : storage_error_or(r.code(), error_code::unknown_server_error),
                      r.err().message);
        };
        for (const auto& d : req.deletions) {
            if (results[d.name].first != error_code::none) continue;
            apply(d.name, cat.delete_credential(d.name, d.mechanism));
        }
        for (const auto& u : req.upsertions) {
            if (results[u.name].first != error_code::none) continue;
            auto mech = static_cast<security::scram_mechanism>(u.mechanism);
            auto c = security::credential_from_salted(
                mech, std::string(u.salt.begin(), u.salt.end()),
                std::string_view(reinterpret_cast<const char*>(u.salted_password.data()),
                                 u.salted_password.size()),
                u.iterations);
            apply(u.name,
                  cat.upsert_credential({u.name, u.mechanism, std::move(c.salt), c.iterations,
                                         std::move(c.stored_key), std::move(c.server_key)}));
        }
    }
    for (auto& [user, r] : results) {
        auto& out = resp.results.emplace_back();
        out.user = user;
        out.error_code = code(r.first);
        if (r.first != error_code::none) {
            out.error_message = r.second;
            log_warn("security", "{}: AlterUserScramCredentials for '{}': {}: {}", ctx.client(),
                     user, protocol::error_name(r.first), r.second);
        }
    }
    ctx.respond(resp);
}

}  // namespace sluice::broker

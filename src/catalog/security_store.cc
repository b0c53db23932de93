// The catalog's users (SCRAM credentials) and identity policies.

#include <algorithm>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/sqlite_db.h"
#include "common/clock.h"
#include "common/logging.h"

namespace sluice::catalog {
namespace {

std::string as_string(std::span<const uint8_t> b) {
    return {b.begin(), b.end()};
}
std::span<const uint8_t> as_bytes(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}
const char* mechanism_text(int8_t m) {
    return m == 1 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}

}  // namespace

// Called by load() with _mu held.
result<void> catalog::load_security() {
    auto creds = _db->prepare(
        "SELECT user, mechanism, salt, iterations, stored_key, server_key FROM scram_credentials "
        "ORDER BY user, mechanism");
    if (!creds) return creds.err();
    for (;;) {
        auto r = creds->step();
        if (!r) return r.err();
        if (!*r) break;
        scram_record c;
        c.user = creds->column_text(0);
        c.mechanism = static_cast<int8_t>(creds->column_int64(1));
        c.salt = as_string(creds->column_blob(2));
        c.iterations = static_cast<int32_t>(creds->column_int64(3));
        c.stored_key = as_string(creds->column_blob(4));
        c.server_key = as_string(creds->column_blob(5));
        _users[c.user].push_back(std::move(c));
    }
    auto pols = _db->prepare("SELECT name, document, updated_ms FROM policies");
    if (!pols) return pols.err();
    for (;;) {
        auto r = pols->step();
        if (!r) return r.err();
        if (!*r) break;
        policy_record p;
        p.name = pols->column_text(0);
        p.document = pols->column_text(1);
        p.updated_ms = pols->column_int64(2);
        _policies.emplace(p.name, std::move(p));
    }
    auto att = _db->prepare("SELECT policy, user FROM policy_attachments ORDER BY policy, user");
    if (!att) return att.err();
    for (;;) {
        auto r = att->step();
        if (!r) return r.err();
        if (!*r) break;
        auto it = _policies.find(att->column_text(0));
        if (it != _policies.end()) it->second.users.push_back(att->column_text(1));
    }
    return {};
}

result<void> catalog::upsert_credential(const scram_record& c) {
    if (c.user.empty()) return {errc::invalid_argument, "a user name must not be empty"};
    if (c.mechanism != 1 && c.mechanism != 2)
        return {errc::invalid_argument, fmt::format("unknown SCRAM mechanism {}", c.mechanism)};
    std::lock_guard lock(_mu);
    auto st = _db->prepare(
        "INSERT OR REPLACE INTO scram_credentials (user, mechanism, salt, iterations, "
        "stored_key, server_key) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    if (!st) return st.err();
    st->bind(1, c.user).bind(2, int64_t{c.mechanism}).bind_blob(3, as_bytes(c.salt));
    st->bind(4, int64_t{c.iterations}).bind_blob(5, as_bytes(c.stored_key));
    if (auto r = st->bind_blob(6, as_bytes(c.server_key)).run(); !r) return r;
    auto& list = _users[c.user];
    auto it = std::find_if(list.begin(), list.end(),
                           [&](const scram_record& x) { return x.mechanism == c.mechanism; });
    bool replaced = it != list.end();
    if (replaced) {
        *it = c;
    } else {
        list.push_back(c);
        std::sort(list.begin(), list.end(),
                  [](const auto& a, const auto& b) { return a.mechanism < b.mechanism; });
    }
    ++_security_generation;
    log_info("catalog", "{} {} credential of user '{}'", replaced ? "replaced" : "added",
             mechanism_text(c.mechanism), c.user);
    return {};
}

result<void> catalog::delete_credential(const std::string& user, int8_t mechanism) {
    std::lock_guard lock(_mu);
    auto u = _users.find(user);
    auto has = [&](const scram_record& x) { return x.mechanism == mechanism; };
    if (u == _users.end() || std::none_of(u->second.begin(), u->second.end(), has)) {
        return {errc::not_found,
                fmt::format("user '{}' has no {} credential", user, mechanism_text(mechanism))};
    }
    auto st = _db->prepare("DELETE FROM scram_credentials WHERE user = ?1 AND mechanism = ?2");
    if (!st) return st.err();
    if (auto r = st->bind(1, user).bind(2, int64_t{mechanism}).run(); !r) return r;
    std::erase_if(u->second, has);
    if (u->second.empty()) _users.erase(u);
    ++_security_generation;
    log_info("catalog", "deleted {} credential of user '{}'", mechanism_text(mechanism), user);
    return {};
}

result<void> catalog::delete_user(const std::string& user) {
    std::lock_guard lock(_mu);
    if (!_users.contains(user)) return {errc::not_found, fmt::format("no user '{}'", user)};
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    for (const char* sql : {"DELETE FROM scram_credentials WHERE user = ?1",
                            "DELETE FROM policy_attachments WHERE user = ?1"}) {
        auto st = _db->prepare(sql);
        if (!st) return st.err();
        if (auto r = st->bind(1, user).run(); !r) return r;
    }
    if (auto r = txn->commit(); !r) return r;
    _users.erase(user);
    for (auto& [_, p] : _policies) std::erase(p.users, user);
    ++_security_generation;
    log_info("catalog", "deleted user '{}' and its policy attachments", user);
    return {};
}

std::vector<scram_record> catalog::credentials(const std::string& user) const {
    std::lock_guard lock(_mu);
    auto it = _users.find(user);
    return it == _users.end() ? std::vector<scram_record>{} : it->second;
}

std::map<std::string, std::vector<scram_record>> catalog::list_users() const {
    std::lock_guard lock(_mu);
    return _users;
}

result<void> catalog::put_policy(const std::string& name, const std::string& document) {
    if (name.empty()) return {errc::invalid_argument, "a policy name must not be empty"};
    int64_t now = now_ms();
    std::lock_guard lock(_mu);
    auto st = _db->prepare(
        "INSERT INTO policies (name, document, updated_ms) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (name) DO UPDATE SET document = excluded.document, "
        "updated_ms = excluded.updated_ms");
    if (!st) return st.err();
    if (auto r = st->bind(1, name).bind(2, document).bind(3, now).run(); !r) return r;
    auto& p = _policies[name];
    bool replaced = !p.name.empty();
    p.name = name;
    p.document = document;
    p.updated_ms = now;
    ++_security_generation;
    log_info("catalog", "{} policy '{}'", replaced ? "replaced" : "added", name);
    return {};
}

result<void> catalog::delete_policy(const std::string& name) {
    std::lock_guard lock(_mu);
    if (!_policies.contains(name)) return {errc::not_found, fmt::format("no policy '{}'", name)};
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    for (const char* sql : {"DELETE FROM policy_attachments WHERE policy = ?1",
                            "DELETE FROM policies WHERE name = ?1"}) {
        auto st = _db->prepare(sql);
        if (!st) return st.err();
        if (auto r = st->bind(1, name).run(); !r) return r;
    }
    if (auto r = txn->commit(); !r) return r;
    _policies.erase(name);
    ++_security_generation;
    log_info("catalog", "deleted policy '{}'", name);
    return {};
}

result<void> catalog::attach_policy(const std::string& name, const std::string& user) {
    if (user.empty()) return {errc::invalid_argument, "a user name must not be empty"};
    std::lock_guard lock(_mu);
    auto it = _policies.find(name);
    if (it == _policies.end()) return {errc::not_found, fmt::format("no policy '{}'", name)};
    auto& users = it->second.users;
    if (std::find(users.begin(), users.end(), user) != users.end()) {
        return {errc::already_exists,
                fmt::format("policy '{}' is already attached to user '{}'", name, user)};
    }
    auto st = _db->prepare("INSERT INTO policy_attachments (policy, user) VALUES (?1, ?2)");
    if (!st) return st.err();
    if (auto r = st->bind(1, name).bind(2, user).run(); !r) return r;
    users.insert(std::upper_bound(users.begin(), users.end(), user), user);
    ++_security_generation;
    log_info("catalog", "attached policy '{}' to user '{}'", name, user);
    return {};
}

result<void> catalog::detach_policy(const std::string& name, const std::string& user) {
    std::lock_guard lock(_mu);
    auto it = _policies.find(name);
    if (it == _policies.end()) return {errc::not_found, fmt::format("no policy '{}'", name)};
    auto& users = it->second.users;
    auto u = std::find(users.begin(), users.end(), user);
    if (u == users.end()) {
        return {errc::not_found,
                fmt::format("policy '{}' is not attached to user '{}'", name, user)};
    }
    auto st = _db->prepare("DELETE FROM policy_attachments WHERE policy = ?1 AND user = ?2");
    if (!st) return st.err();
    if (auto r = st->bind(1, name).bind(2, user).run(); !r) return r;
    users.erase(u);
    ++_security_generation;
    log_info("catalog", "detached policy '{}' from user '{}'", name, user);
    return {};
}

std::vector<policy_record> catalog::list_policies() const {
    std::lock_guard lock(_mu);
    std::vector<policy_record> out;
    out.reserve(_policies.size());
    for (const auto& [_, p] : _policies) out.push_back(p);
    return out;
}

std::optional<policy_record> catalog::find_policy(const std::string& name) const {
    std::lock_guard lock(_mu);
    auto it = _policies.find(name);
    if (it == _policies.end()) return std::nullopt;
    return it->second;
}

}  // namespace sluice::catalog

#include "shared/pg_security_store.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"
#include "shared/pg_codec.h"
#include "shared/pg_refresher.h"

namespace sluice::shared {

using catalog::policy_record;
using catalog::scram_record;

namespace {

constexpr const char* security_subject = "security";

const char* mechanism_text(int8_t m) {
    return m == 1 ? "SCRAM-SHA-256" : "SCRAM-SHA-512";
}
std::string hex(const std::string& s) {
    return bytea_hex(bytes(s.begin(), s.end()));
}
result<std::string> unhex(const std::string& s) {
    auto b = bytea_from_text(s);
    if (!b) return b.err();
    return std::string(b->begin(), b->end());
}

// Users and policies as the transaction sees them, with the version they are at.
result<pg_security_store::state> load_security(pg_transaction& tx) {
    pg_security_store::state out;
    auto version = read_change_version(tx, security_subject);
    if (!version) return version.err();
    out.version = *version;
    auto creds = tx.exec(
        "SELECT user_name, mechanism, salt, iterations, stored_key, server_key "
        "FROM sluice_scram_credentials");
    if (!creds) return creds.err();
    for (size_t r = 0; r < creds->size(); ++r) {
        scram_record c;
        c.user = creds->text(r, 0);
        c.mechanism = static_cast<int8_t>(creds->int64(r, 1));
        c.iterations = static_cast<int32_t>(creds->int64(r, 3));
        auto salt = unhex(creds->text(r, 2));
        auto stored = unhex(creds->text(r, 4));
        auto server = unhex(creds->text(r, 5));
        if (!salt || !stored || !server)
            return error{errc::corrupt,
                         fmt::format("the credential of user '{}' is not BYTEA", c.user)};
        c.salt = std::move(*salt);
        c.stored_key = std::move(*stored);
        c.server_key = std::move(*server);
        out.users[c.user].push_back(std::move(c));
    }
    // Ordered here, not by the database's collation: bytewise, as the SQLite catalog's.
    for (auto& [_, list] : out.users)
        std::sort(list.begin(), list.end(),
                  [](const auto& a, const auto& b) { return a.mechanism < b.mechanism; });
    auto pols = tx.exec("SELECT policy_name, document, updated_ms FROM sluice_policies");
    if (!pols) return pols.err();
    for (size_t r = 0; r < pols->size(); ++r) {
        policy_record p;
        p.name = pols->text(r, 0);
        p.document = pols->text(r, 1);
        p.updated_ms = pols->int64(r, 2);
        out.policies.emplace(p.name, std::move(p));
    }
    auto att = tx.exec("SELECT policy_name, user_name FROM sluice_policy_attachments");
    if (!att) return att.err();
    for (size_t r = 0; r < att->size(); ++r)
        if (auto it = out.policies.find(att->text(r, 0)); it != out.policies.end())
            it->second.users.push_back(att->text(r, 1));
    for (auto& [_, p] : out.policies) std::sort(p.users.begin(), p.users.end());
    return out;
}

result<bool> policy_exists(pg_transaction& tx, const std::string& name) {
    auto row = tx.exec("SELECT 1 FROM sluice_policies WHERE policy_name = $1", {name});
    if (!row) return row.err();
    return row->size() > 0;
}

}  // namespace

result<std::unique_ptr<pg_security_store>> pg_security_store::open(const pg_config& config) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    auto s = std::make_unique<pg_security_store>(std::move(*db));
    if (auto r = s->refresh(); !r) return r.err();
    return s;
}

void pg_security_store::install(state s) {
    std::lock_guard lock(_mu);
    // A refresh that read an older snapshot than a write installed meanwhile is dropped.
    if (s.version <= _state.version) return;
    bool changed = s.users != _state.users || s.policies != _state.policies;
    _state = std::move(s);
    if (changed) _generation.fetch_add(1);
}

result<bool> pg_security_store::refresh() {
    int64_t seen;
    {
        std::lock_guard lock(_mu);
        seen = _state.version;
    }
    auto loaded = load_if_moved<state>(*_db, security_subject, seen, load_security);
    if (!loaded) return loaded.err();
    if (!*loaded) return false;
    uint64_t before = _generation.load();
    install(std::move(**loaded));
    return _generation.load() != before;
}

result<void> pg_security_store::write(const std::function<result<void>(pg_transaction&)>& body) {
    auto s =
        change_and_load<state>(*_db, security_subject, security_channel, "", body, load_security);
    if (!s) return s.err();
    install(std::move(*s));
    return {};
}

result<void> pg_security_store::upsert_credential(const scram_record& c) {
    if (c.user.empty()) return {errc::invalid_argument, "a user name must not be empty"};
    if (c.mechanism != 1 && c.mechanism != 2)
        return {errc::invalid_argument, fmt::format("unknown SCRAM mechanism {}", c.mechanism)};
    bool replaced = false;
    auto r = write([&](pg_transaction& tx) -> result<void> {
        const std::vector<pg_param> key{c.user, std::to_string(c.mechanism)};
        auto del = tx.exec(
            "DELETE FROM sluice_scram_credentials WHERE user_name = $1 AND mechanism = "
            "CAST($2 AS SMALLINT)",
            key);
        if (!del) return del.err();
        replaced = del->affected > 0;
        auto ins = tx.exec(
            "INSERT INTO sluice_scram_credentials (user_name, mechanism, salt, iterations, "
            "stored_key, server_key) VALUES ($1, CAST($2 AS SMALLINT), CAST($3 AS BYTEA), "
            "CAST($4 AS INTEGER), CAST($5 AS BYTEA), CAST($6 AS BYTEA))",
            {c.user, std::to_string(c.mechanism), hex(c.salt), std::to_string(c.iterations),
             hex(c.stored_key), hex(c.server_key)});
        if (!ins) return ins.err();
        return {};
    });
    if (!r) return r;
    log_info("catalog", "{} {} credential of user '{}' in the shared catalog",
             replaced ? "replaced" : "added", mechanism_text(c.mechanism), c.user);
    return {};
}

result<void> pg_security_store::delete_credential(const std::string& user, int8_t mechanism) {
    auto r = write([&](pg_transaction& tx) -> result<void> {
        auto del = tx.exec(
            "DELETE FROM sluice_scram_credentials WHERE user_name = $1 AND mechanism = "
            "CAST($2 AS SMALLINT)",
            {user, std::to_string(mechanism)});
        if (!del) return del.err();
        if (del->affected == 0)
            return {errc::not_found,
                    fmt::format("user '{}' has no {} credential", user, mechanism_text(mechanism))};
        return {};
    });
    if (!r) return r;
    log_info("catalog", "deleted {} credential of user '{}' in the shared catalog",
             mechanism_text(mechanism), user);
    return {};
}

result<void> pg_security_store::delete_user(const std::string& user) {
    auto r = write([&](pg_transaction& tx) -> result<void> {
        auto del = tx.exec("DELETE FROM sluice_scram_credentials WHERE user_name = $1", {user});
        if (!del) return del.err();
        if (del->affected == 0) return {errc::not_found, fmt::format("no user '{}'", user)};
        auto att = tx.exec("DELETE FROM sluice_policy_attachments WHERE user_name = $1", {user});
        if (!att) return att.err();
        return {};
    });
    if (!r) return r;
    log_info("catalog", "deleted user '{}' and its policy attachments in the shared catalog", user);
    return {};
}

std::vector<scram_record> pg_security_store::credentials(const std::string& user) const {
    std::lock_guard lock(_mu);
    auto it = _state.users.find(user);
    return it == _state.users.end() ? std::vector<scram_record>{} : it->second;
}

std::map<std::string, std::vector<scram_record>> pg_security_store::list_users() const {
    std::lock_guard lock(_mu);
    return _state.users;
}

result<void> pg_security_store::put_policy(const std::string& name, const std::string& document) {
    if (name.empty()) return {errc::invalid_argument, "a policy name must not be empty"};
    const std::string now = std::to_string(now_ms());
    bool replaced = false;
    auto r = write([&](pg_transaction& tx) -> result<void> {
        // No ON CONFLICT (docs/formats/shared-catalog.md): the version's row lock keeps
        // other writers out between the two statements.
        auto up = tx.exec(
            "UPDATE sluice_policies SET document = $2, updated_ms = CAST($3 AS BIGINT) WHERE "
            "policy_name = $1",
            {name, document, now});
        if (!up) return up.err();
        replaced = up->affected > 0;
        if (replaced) return {};
        auto ins = tx.exec(
            "INSERT INTO sluice_policies (policy_name, document, updated_ms) VALUES ($1, $2, "
            "CAST($3 AS BIGINT))",
            {name, document, now});
        if (!ins) return ins.err();
        return {};
    });
    if (!r) return r;
    log_info("catalog", "{} policy '{}' in the shared catalog", replaced ? "replaced" : "added",
             name);
    return {};
}

result<void> pg_security_store::delete_policy(const std::string& name) {
    auto r = write([&](pg_transaction& tx) -> result<void> {
        // Attachments first: the foreign key forbids them without their policy.
        auto att = tx.exec("DELETE FROM sluice_policy_attachments WHERE policy_name = $1", {name});
        if (!att) return att.err();
        auto del = tx.exec("DELETE FROM sluice_policies WHERE policy_name = $1", {name});
        if (!del) return del.err();
        if (del->affected == 0) return {errc::not_found, fmt::format("no policy '{}'", name)};
        return {};
    });
    if (!r) return r;
    log_info("catalog", "deleted policy '{}' in the shared catalog", name);
    return {};
}

result<void> pg_security_store::attach_policy(const std::string& name, const std::string& user) {
    if (user.empty()) return {errc::invalid_argument, "a user name must not be empty"};
    auto r = write([&](pg_transaction& tx) -> result<void> {
        auto exists = policy_exists(tx, name);
        if (!exists) return exists.err();
        if (!*exists) return {errc::not_found, fmt::format("no policy '{}'", name)};
        auto att = tx.exec(
            "SELECT 1 FROM sluice_policy_attachments WHERE policy_name = $1 AND user_name = $2",
            {name, user});
        if (!att) return att.err();
        if (att->size() > 0)
            return {errc::already_exists,
                    fmt::format("policy '{}' is already attached to user '{}'", name, user)};
        auto ins = tx.exec(
            "INSERT INTO sluice_policy_attachments (policy_name, user_name) VALUES ($1, $2)",
            {name, user});
        if (!ins) return ins.err();
        return {};
    });
    if (!r) return r;
    log_info("catalog", "attached policy '{}' to user '{}' in the shared catalog", name, user);
    return {};
}

result<void> pg_security_store::detach_policy(const std::string& name, const std::string& user) {
    auto r = write([&](pg_transaction& tx) -> result<void> {
        auto exists = policy_exists(tx, name);
        if (!exists) return exists.err();
        if (!*exists) return {errc::not_found, fmt::format("no policy '{}'", name)};
        auto del = tx.exec(
            "DELETE FROM sluice_policy_attachments WHERE policy_name = $1 AND user_name = $2",
            {name, user});
        if (!del) return del.err();
        if (del->affected == 0)
            return {errc::not_found,
                    fmt::format("policy '{}' is not attached to user '{}'", name, user)};
        return {};
    });
    if (!r) return r;
    log_info("catalog", "detached policy '{}' from user '{}' in the shared catalog", name, user);
    return {};
}

std::vector<policy_record> pg_security_store::list_policies() const {
    std::lock_guard lock(_mu);
    std::vector<policy_record> out;
    out.reserve(_state.policies.size());
    for (const auto& [_, p] : _state.policies) out.push_back(p);
    return out;
}

std::optional<policy_record> pg_security_store::find_policy(const std::string& name) const {
    std::lock_guard lock(_mu);
    auto it = _state.policies.find(name);
    if (it == _state.policies.end()) return std::nullopt;
    return it->second;
}

}  // namespace sluice::shared

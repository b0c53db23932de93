// The catalog's broker settings changed at run time (table broker_configs) and group
// configs (table group_configs).

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/sqlite_db.h"
#include "common/logging.h"

namespace sluice::catalog {
result<void> check_broker_config_scope(const std::string& scope) {
    if (scope.empty() || scope == "broker") return {};
    return {errc::invalid_argument, fmt::format("unknown broker config scope '{}'", scope)};
}

result<std::map<std::string, std::string>> catalog::broker_configs(const std::string& scope) const {
    if (auto r = check_broker_config_scope(scope); !r) return r.err();
    std::lock_guard lock(_mu);
    auto st = _db->prepare("SELECT key, value FROM broker_configs WHERE scope = ?1 ORDER BY key");
    if (!st) return st.err();
    st->bind(1, scope);
    std::map<std::string, std::string> out;
    for (;;) {
        auto r = st->step();
        if (!r) return r.err();
        if (!*r) break;
        out[st->column_text(0)] = st->column_text(1);
    }
    return out;
}

result<void> catalog::set_broker_configs(const std::string& scope,
                                         const std::map<std::string, std::string>& configs) {
    if (auto r = check_broker_config_scope(scope); !r) return r;
    std::lock_guard lock(_mu);
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto del = _db->prepare("DELETE FROM broker_configs WHERE scope = ?1");
    if (!del) return del.err();
    if (auto r = del->bind(1, scope).run(); !r) return r;
    auto ins = _db->prepare("INSERT INTO broker_configs (scope, key, value) VALUES (?1, ?2, ?3)");
    if (!ins) return ins.err();
    for (const auto& [k, v] : configs) {
        if (auto c = ins->reset().bind(1, scope).bind(2, k).bind(3, v).run(); !c) return c;
    }
    if (auto c = txn->commit(); !c) return c;
    log_info("catalog", "broker configs ({}): {} set", scope.empty() ? "cluster default" : scope,
             configs.size());
    return {};
}

result<std::map<std::string, std::map<std::string, std::string>>> catalog::group_configs() const {
    std::lock_guard lock(_mu);
    auto st = _db->prepare("SELECT group_id, key, value FROM group_configs ORDER BY group_id, key");
    if (!st) return st.err();
    std::map<std::string, std::map<std::string, std::string>> out;
    for (;;) {
        auto r = st->step();
        if (!r) return r.err();
        if (!*r) break;
        out[st->column_text(0)][st->column_text(1)] = st->column_text(2);
    }
    return out;
}

result<void> catalog::set_group_configs(const std::string& group_id,
                                        const std::map<std::string, std::string>& configs) {
    std::lock_guard lock(_mu);
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto del = _db->prepare("DELETE FROM group_configs WHERE group_id = ?1");
    if (!del) return del.err();
    if (auto r = del->bind(1, group_id).run(); !r) return r;
    auto ins = _db->prepare("INSERT INTO group_configs (group_id, key, value) VALUES (?1, ?2, ?3)");
    if (!ins) return ins.err();
    for (const auto& [k, v] : configs) {
        if (auto c = ins->reset().bind(1, group_id).bind(2, k).bind(3, v).run(); !c) return c;
    }
    if (auto c = txn->commit(); !c) return c;
    log_info("catalog", "group '{}': {} group configs set", group_id, configs.size());
    return {};
}

}  // namespace sluice::catalog

#include "broker/acl_service.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "common/logging.h"

namespace sluice::broker {
namespace {

namespace acl = security::acl;

bool same_statement(const security::statement& a, const security::statement& b) {
    return a.eff == b.eff && a.actions == b.actions && a.resources == b.resources;
}

// The statements of a managed policy, none when it does not exist yet. A stored document
// that does not parse (only a hand-edited catalog has one; the authorizer denies its users
// everything) is an error: rewriting it would lose what it said.
result<std::vector<security::statement>> managed_statements(const catalog::security_store& cat,
                                                            const std::string& name) {
    auto p = cat.find_policy(name);
    if (!p) return std::vector<security::statement>{};
    auto parsed = security::parse_policy(p->name, p->document);
    if (!parsed)
        return {errc::corrupt, fmt::format("policy '{}' in the catalog does not parse ({}): put "
                                           "it again or delete it first",
                                           name, parsed.err().message)};
    return std::move(parsed->statements);
}

}  // namespace

result<void> acl_service::store(const std::string& name, const std::string& user,
                                const std::vector<security::statement>& statements) {
    if (statements.empty()) return _cat.delete_policy(name);
    std::string doc = acl::policy_document(statements);
    // A name with bytes JSON cannot carry (invalid UTF-8) fails here, not in the catalog.
    if (auto p = security::parse_policy(name, doc); !p)
        return {errc::invalid_argument, "the binding makes an invalid policy: " + p.err().message};
    if (auto r = _cat.put_policy(name, doc); !r) return r;
    // put and attach are two catalog transactions; a policy left unattached by a crash in
    // between is attached by the next CreateAcls for the principal.
    auto attached = _cat.find_policy(name);
    if (attached &&
        std::find(attached->users.begin(), attached->users.end(), user) == attached->users.end())
        return _cat.attach_policy(name, user);
    return {};
}

std::vector<result<void>> acl_service::create(const std::vector<acl::binding>& bindings) {
    std::lock_guard lock(_mu);
    // Each managed policy the request touches is read once and written once.
    struct change {
        std::string user;
        std::vector<security::statement> statements;
        std::optional<error> broken;
        std::vector<size_t> added;  // the bindings that add a statement
    };
    std::map<std::string, change> changes;
    std::vector<result<void>> out(bindings.size(), result<void>{});
    for (size_t i = 0; i < bindings.size(); ++i) {
        auto m = acl::to_statement(bindings[i]);
        if (!m) {
            out[i] = m.err();
            continue;
        }
        auto [it, fresh] = changes.try_emplace(acl::managed_policy_name(m->user));
        auto& c = it->second;
        if (fresh) {
            c.user = m->user;
            auto sts = managed_statements(_cat, it->first);
            if (sts)
                c.statements = std::move(*sts);
            else
                c.broken = sts.err();
        }
        if (c.broken) {
            out[i] = *c.broken;
            continue;
        }
        bool exists = std::any_of(c.statements.begin(), c.statements.end(),
                                  [&](const auto& st) { return same_statement(st, m->st); });
        if (exists) continue;  // as Kafka: creating an existing binding succeeds
        c.statements.push_back(std::move(m->st));
        c.added.push_back(i);
    }
    for (auto& [name, c] : changes) {
        if (c.added.empty()) continue;
        if (auto r = store(name, c.user, c.statements); !r)
            for (size_t i : c.added) out[i] = r.err();
    }
    return out;
}

std::vector<acl_service::found> acl_service::collect(const acl::filter& f) const {
    std::vector<found> out;
    for (const auto& rec : _cat.list_policies()) {
        auto parsed = security::parse_policy(rec.name, rec.document);
        if (!parsed) continue;  // its users are denied everything; nothing to show
        auto owner = acl::managed_user(rec.name);
        for (auto& x : acl::bindings_of(*parsed, rec.users)) {
            if (!acl::matches(f, x.b)) continue;
            std::optional<std::string> refused;
            if (!owner || x.b.principal != "User:" + *owner)
                refused = fmt::format(
                    "the binding comes from policy '{}', which the ACL APIs do not manage for "
                    "{}: change it with `sluice policy put`, or detach it",
                    rec.name, x.b.principal);
            else if (x.from_statement > 1)
                refused = fmt::format(
                    "the binding comes from statement {} of policy '{}', which holds {} "
                    "bindings: change it with `sluice policy put`",
                    x.statement, rec.name, x.from_statement);
            out.push_back({std::move(x.b), rec.name, x.statement, std::move(refused)});
        }
    }
    return out;
}

std::vector<acl::binding> acl_service::describe(const acl::filter& f) const {
    std::lock_guard lock(_mu);
    std::set<acl::binding> unique;
    for (auto& x : collect(f)) unique.insert(std::move(x.b));
    return {unique.begin(), unique.end()};
}

std::vector<acl_service::removal> acl_service::remove(const acl::filter& f) {
    std::lock_guard lock(_mu);
    auto matched = collect(f);
    std::map<std::string, std::set<size_t>> doomed;  // policy -> statements to remove
    for (const auto& x : matched)
        if (!x.refused) doomed[x.policy].insert(x.index);
    std::map<std::string, std::string> failed;  // policy -> the catalog's error
    for (const auto& [name, indexes] : doomed) {
        auto statements = managed_statements(_cat, name);
        if (!statements) {
            failed[name] = statements.err().message;
            continue;
        }
        std::vector<security::statement> kept;
        for (size_t i = 0; i < statements->size(); ++i)
            if (!indexes.contains(i)) kept.push_back(std::move((*statements)[i]));
        auto r = store(name, *acl::managed_user(name), kept);
        if (!r) failed[name] = r.err().message;
    }
    std::vector<removal> out;
    for (auto& x : matched) {
        if (!x.refused && failed.contains(x.policy)) x.refused = failed[x.policy];
        out.push_back({std::move(x.b), std::move(x.refused)});
    }
    return out;
}

}  // namespace sluice::broker

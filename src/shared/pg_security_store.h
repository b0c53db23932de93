#pragma once

// Users and identity policies (catalog/security_store.h) in the shared catalog:
// sluice_scram_credentials, sluice_policies and sluice_policy_attachments, with the
// 'security' row of sluice_change_versions (docs/formats/shared-catalog.md, version 4).

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/security_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// The channel every change of users and policies is announced on (NOTIFY, empty payload)
// when it commits; pg_refresher LISTENs on it and calls refresh().
inline constexpr const char* security_channel = "sluice_security";

// Thread-safe. Reads come from a copy in memory, so that authenticating and authorizing
// cost no round trip: this store's writes reach it when they commit (each write reads the
// whole state back in its transaction), other brokers' when refresh() runs. Owns its
// connection.
class pg_security_store final : public catalog::security_store {
  public:
    // Connects and loads users and policies. The catalog's schema must be in place.
    static result<std::unique_ptr<pg_security_store>> open(const pg_config& config);
    explicit pg_security_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    // Reads the 'security' change version (one row); when another broker changed users
    // or policies since the last load, reads them all again from one snapshot. Returns
    // whether anything changed.
    result<bool> refresh();

    result<void> upsert_credential(const catalog::scram_record& c) override;
    result<void> delete_credential(const std::string& user, int8_t mechanism) override;
    result<void> delete_user(const std::string& user) override;
    std::vector<catalog::scram_record> credentials(const std::string& user) const override;
    std::map<std::string, std::vector<catalog::scram_record>> list_users() const override;
    result<void> put_policy(const std::string& name, const std::string& document) override;
    result<void> delete_policy(const std::string& name) override;
    result<void> attach_policy(const std::string& name, const std::string& user) override;
    result<void> detach_policy(const std::string& name, const std::string& user) override;
    std::vector<catalog::policy_record> list_policies() const override;
    std::optional<catalog::policy_record> find_policy(const std::string& name) const override;
    uint64_t security_generation() const override { return _generation.load(); }

    struct state {
        int64_t version = -1;
        std::map<std::string, std::vector<catalog::scram_record>> users;
        std::map<std::string, catalog::policy_record> policies;
    };

  private:
    // Runs `body` in a transaction that first takes the security version's row lock and
    // moves it on, then reads the state back and announces the change; installs the
    // state once committed.
    result<void> write(const std::function<result<void>(pg_transaction&)>& body);
    void install(state s);

    std::unique_ptr<pg_database> _db;
    mutable std::mutex _mu;
    state _state;  // guarded by _mu
    std::atomic<uint64_t> _generation{1};
};

}  // namespace sluice::shared

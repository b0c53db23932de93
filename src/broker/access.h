#pragma once

// Who may do what. access_rules() is the one table from Kafka APIs to the actions they
// need on each kind of resource (docs/security.md publishes it); handlers ask
// request_context::allowed(), which reads it. access_control is the broker's view of the
// catalog's users and policies.

#include <atomic>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "catalog/security_store.h"
#include "protocol/api_key.h"
#include "security/authorizer.h"
#include "security/credential.h"
#include "security/gate.h"

namespace sluice::broker {

struct access_rule {
    protocol::api_key api;
    security::resource_kind kind;
    security::action act;
};
std::span<const access_rule> access_rules();
// The action `api` needs on a resource of `kind`; nullopt when the API never touches one.
std::optional<security::action> required_action(protocol::api_key api,
                                                security::resource_kind kind);

// Credentials for the SASL exchanges and decisions for the handlers, both read from the
// security store (the catalog's, or the shared catalog's in shared mode). A change to
// users, policies or attachments (through the HTTP API, the Kafka API, this process's
// store, or another broker's once the shared store refreshed) is seen by the next check:
// open connections included.
// Thread-safe (the SQL threads ask too).
class access_control final : public security::credential_source, public security::gate {
  public:
    access_control(catalog::security_store& store, security::authz_mode mode, bool authenticate);

    std::vector<security::scram_credential> credentials(const std::string& user) const override;
    bool allowed(const security::principal& p, security::action a,
                 const security::resource& r) const override;
    bool authentication_required() const override { return _authenticate; }
    const security::credential_source& credentials() const override { return *this; }
    uint64_t generation() const override;
    security::authz_mode mode() const { return _authz.mode(); }
    catalog::security_store& store() const { return _cat; }

  private:
    void refresh_if_changed() const;

    catalog::security_store& _cat;
    bool _authenticate;
    mutable security::authorizer _authz;
    mutable std::mutex _mu;                  // serialises refreshes
    mutable std::atomic<uint64_t> _seen{0};  // the store's security generation loaded
};

}  // namespace sluice::broker

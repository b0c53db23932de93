#pragma once

// Users and identity policies behind one interface (docs/security.md): SCRAM credentials,
// at most one per (user, mechanism), and policies (a JSON document each) attached to
// users. Kafka's ACLs are kept as policies too (`kafka-acl:User:NAME`, broker/acl_service.h).
// Implementations: catalog::catalog (the embedded SQLite catalog, docs/formats/catalog.md)
// and shared::pg_security_store (the shared catalog's database,
// docs/formats/shared-catalog.md).

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/security_info.h"
#include "common/result.h"

namespace sluice::catalog {

// Thread-safe: every member may be called concurrently. Reads are served from memory;
// a write reaches memory once it is durable, so a write is read back at once by the
// store that made it (other stores sharing a database see it after their refresh).
class security_store {
  public:
    virtual ~security_store() = default;

    // Adds or replaces the credential of c.user for c.mechanism. errc::invalid_argument
    // for an empty user or a mechanism other than 1 and 2.
    virtual result<void> upsert_credential(const scram_record& c) = 0;
    // errc::not_found when the user has no credential for that mechanism.
    virtual result<void> delete_credential(const std::string& user, int8_t mechanism) = 0;
    // Removes every credential of the user and detaches every policy from it, in one
    // transaction. errc::not_found when the user has no credential.
    virtual result<void> delete_user(const std::string& user) = 0;
    // Ordered by mechanism; empty for an unknown user.
    virtual std::vector<scram_record> credentials(const std::string& user) const = 0;
    // Users with at least one credential, ordered by name, with their credentials.
    virtual std::map<std::string, std::vector<scram_record>> list_users() const = 0;

    // Adds or replaces the document (attachments stay). errc::invalid_argument for an
    // empty name. The document is validated by the caller (security::parse_policy).
    virtual result<void> put_policy(const std::string& name, const std::string& document) = 0;
    // Detaches it from every user too. errc::not_found.
    virtual result<void> delete_policy(const std::string& name) = 0;
    // errc::invalid_argument for an empty user, errc::not_found without the policy,
    // errc::already_exists when attached already.
    virtual result<void> attach_policy(const std::string& name, const std::string& user) = 0;
    // errc::not_found without the policy or when not attached.
    virtual result<void> detach_policy(const std::string& name, const std::string& user) = 0;
    virtual std::vector<policy_record> list_policies() const = 0;  // ordered by name
    virtual std::optional<policy_record> find_policy(const std::string& name) const = 0;

    // Changes whenever what the reads return changes (a credential, policy or
    // attachment), here or, once refreshed, on another broker: the authorizer re-reads
    // the policies then.
    virtual uint64_t security_generation() const = 0;
};

}  // namespace sluice::catalog

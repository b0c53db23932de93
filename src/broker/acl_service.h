#pragma once

// Kafka's ACL APIs over the catalog's identity policies (docs/security.md, "Kafka
// ACLs"), kept in the security store: CreateAcls adds statements to the principal's managed policy
// (`kafka-acl:User:NAME`, attached to NAME), DescribeAcls reads every policy's statements
// as bindings, DeleteAcls removes statements from managed policies. The mapping itself is
// security/acl.h; this class reads and writes the store, one change at a time.

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/security_store.h"
#include "security/acl.h"

namespace sluice::broker {

class acl_service {
  public:
    explicit acl_service(catalog::security_store& store) : _cat(store) {}

    // One result per binding, in order; errc::invalid_argument for a binding that
    // cannot be expressed. Creating a binding that exists already succeeds (as Kafka).
    std::vector<result<void>> create(const std::vector<security::acl::binding>& bindings);
    // Every binding of every policy the filter matches, in order, without duplicates.
    std::vector<security::acl::binding> describe(const security::acl::filter& f) const;

    struct removal {
        security::acl::binding b;
        std::optional<std::string> refused;  // why it stays, or the catalog's error
    };
    // The bindings the filter matches: those of managed policies are removed (a policy
    // left empty is deleted); the others stay, each with the reason.
    std::vector<removal> remove(const security::acl::filter& f);

  private:
    struct found {
        security::acl::binding b;
        std::string policy;
        size_t index = 0;                    // of the statement in the policy
        std::optional<std::string> refused;  // why DeleteAcls cannot remove it
    };
    std::vector<found> collect(const security::acl::filter& f) const;
    result<void> store(const std::string& name, const std::string& user,
                       const std::vector<security::statement>& statements);

    catalog::security_store& _cat;
    mutable std::mutex _mu;  // one ACL change at a time: each is a read-modify-write
};

}  // namespace sluice::broker

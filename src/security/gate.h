#pragma once

// What the SQL endpoints (PostgreSQL wire, HTTP) need from the broker's security: who
// may log in, and what they may read. The broker's access_control implements it.

#include <cstdint>

#include "security/authorizer.h"
#include "security/credential.h"

namespace sluice::security {

class gate {
  public:
    virtual ~gate() = default;
    // Whether clients must log in (the broker authenticates on some Kafka listener).
    virtual bool authentication_required() const = 0;
    virtual const credential_source& credentials() const = 0;
    virtual bool allowed(const principal& p, action a, const resource& r) const = 0;
    // Changes whenever an answer of allowed() may have changed (users or policies), so
    // that what was derived from the answers can be kept until then.
    virtual uint64_t generation() const = 0;
};

}  // namespace sluice::security

#pragma once

// Expansions' definitions (docs/expansions.md): which topic's events become rows of which
// table, with the schema that says how. Their progress lives with their target tables,
// not here. Implementations: catalog::catalog (the embedded SQLite catalog,
// docs/formats/catalog.md) and shared::pg_expansion_store (the shared catalog's database,
// docs/formats/shared-catalog.md).

#include <string>
#include <vector>

#include "catalog/expansion_info.h"
#include "common/result.h"

namespace sluice::catalog {

// Thread-safe. Reads are served from memory; a write reaches memory once it is durable.
// A topic with expansions cannot be deleted (topic_store::delete_topic answers
// errc::in_use, naming them).
class expansion_store {
  public:
    virtual ~expansion_store() = default;
    // A created_ms of 0 is replaced by the current time. errc::not_found without the
    // topic, errc::already_exists for a taken target.
    virtual result<void> create_expansion(const expansion_info& e) = 0;
    // errc::not_found.
    virtual result<void> delete_expansion(const std::string& target) = 0;
    virtual std::vector<expansion_info> list_expansions() const = 0;  // ordered by target
};

}  // namespace sluice::catalog

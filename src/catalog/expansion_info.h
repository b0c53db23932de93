#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace sluice::catalog {

// Where an expansion starts in one partition: live expansion at live_from (the high
// watermark when it was created), a backfill from backfill_from (the log start then, or
// live_from without a backfill).
struct expansion_start {
    int64_t live_from = 0;
    int64_t backfill_from = 0;
    bool operator==(const expansion_start&) const = default;
};

// An expansion's definition (docs/expansions.md): events of `topic` become rows of the
// table `target` ("schema.table").
struct expansion_info {
    std::string target;
    std::string topic;
    std::string source = "value";  // "value" or "key"
    bool flatten = false;
    bool copy_source = false;
    std::string schema;  // the schema file, normalised JSON
    int64_t created_ms = 0;
    // By partition. Kept by the shared catalog only (shared::pg_expansion_store), where
    // every broker expands into a copy of the target of its own and starts there; the
    // embedded catalog leaves it empty (the target's progress says it).
    std::map<int32_t, expansion_start> starts;

    bool operator==(const expansion_info&) const = default;
};

}  // namespace sluice::catalog

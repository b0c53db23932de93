#pragma once

#include <cstdint>
#include <string>

namespace sluice::catalog {

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

    bool operator==(const expansion_info&) const = default;
};

}  // namespace sluice::catalog

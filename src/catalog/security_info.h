#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sluice::catalog {

// One SCRAM credential of a user (docs/formats/catalog.md): the salted keys, never the
// password. `mechanism` is Kafka's ScramMechanism id: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512.
struct scram_record {
    std::string user;
    int8_t mechanism = 1;
    std::string salt;
    int32_t iterations = 4096;
    std::string stored_key;
    std::string server_key;

    bool operator==(const scram_record&) const = default;
};

// An identity policy as stored: its JSON document (validated before it gets here) and
// the users it is attached to.
struct policy_record {
    std::string name;
    std::string document;
    int64_t updated_ms = 0;
    std::vector<std::string> users;  // ordered

    bool operator==(const policy_record&) const = default;
};

}  // namespace sluice::catalog

#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::catalog {

// A Kafka UUID (topic id, cluster id): 16 bytes, compared bytewise.
using uuid = std::array<uint8_t, 16>;

// A version 4 (random) UUID from the kernel's CSPRNG. Never all-zero, never Kafka's
// reserved metadata-topic id (0...01), and never one whose string form starts with '-'
// (Kafka avoids those too: such ids read as options on a command line).
// Throws std::system_error only if the kernel refuses randomness, which is unrecoverable.
uuid random_uuid();

// Kafka's printed form: URL-safe base64 (RFC 4648 section 5) without padding, 22 chars.
std::string uuid_to_string(const uuid& u);

// The inverse of uuid_to_string; nullopt unless s is exactly 22 base64url characters
// whose unused low bits are zero (so every uuid has exactly one string form).
std::optional<uuid> uuid_from_string(std::string_view s);

}  // namespace sluice::catalog

#pragma once

// RFC 4648 base64 with padding, shared by the SQL front ends (binary values in JSON) and
// the SCRAM exchanges.

#include <optional>
#include <string>
#include <string_view>

namespace sluice {

std::string base64_encode(std::string_view raw);
// Strict: nullopt on a length that is not a multiple of 4, a character outside the
// alphabet, misplaced padding, or non-zero bits under the padding.
std::optional<std::string> base64_decode(std::string_view text);

}  // namespace sluice

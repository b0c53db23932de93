#pragma once

// Text encodings of values shared by the SQL front ends and the topic tables' headers
// column: UTF-8 checks, JSON strings, base64. Bytes that are valid UTF-8 become a JSON
// string; other bytes become {"base64": "..."}, since a JSON string cannot carry them
// losslessly.

#include <optional>
#include <string>
#include <string_view>

#include "common/base64.h"
#include "common/types.h"

namespace sluice::sql {

// Length of the well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF) starting at s[0]; 0 when there is none.
size_t utf8_sequence_length(std::string_view s);
bool is_valid_utf8(std::string_view s);
// UTF-8 text with ill-formed bytes replaced by U+FFFD.
std::string scrub_utf8(std::string_view s);
std::string_view as_chars(const bytes& b);
// A JSON string literal of `s`; ill-formed UTF-8 bytes become U+FFFD.
void append_json_string(std::string& out, std::string_view s);
using ::sluice::base64_decode;
using ::sluice::base64_encode;
// A JSON string when b is valid UTF-8, else {"base64":"..."}.
void append_json_bytes(std::string& out, bytes_view b);

}  // namespace sluice::sql

#pragma once

// Values to and from the text form libpq exchanges (src/shared/pg_database.h): optional
// strings as NULL, bytes as BYTEA's hex form (\x0aff...), which PostgreSQL-compatible
// databases accept and print alike.

#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "common/types.h"
#include "shared/pg_database.h"

namespace sluice::shared {

inline pg_param text_or_null(const std::optional<std::string>& v) {
    return v ? pg_param(*v) : std::nullopt;
}
inline std::optional<std::string> optional_text(const pg_rows& rows, size_t row, size_t col) {
    if (rows.is_null(row, col)) return std::nullopt;
    return rows.text(row, col);
}

std::string bytea_hex(const bytes& b);
// errc::corrupt unless s is "\x" followed by an even number of hex digits.
result<bytes> bytea_from_text(std::string_view s);

}  // namespace sluice::shared

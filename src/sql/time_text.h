#pragma once

// Timestamps as the SQL engine writes them: text in PostgreSQL's ISO form, always UTC,
// "2024-05-01 12:00:00.25+00:00" (fractions without trailing zeros, none when whole):
// how the PostgreSQL front end writes a timestamp parameter for the engine, and
// recognises such a value in a result (docs/sql-pg.md).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::sql {

// Microseconds since 1970-01-01 00:00:00 UTC.
using micros = int64_t;

// The engine's text for an instant.
std::string format_timestamp(micros us);
// Reads "YYYY-MM-DD", "YYYY-MM-DD HH:MM[:SS[.ffffff]]" ('T' allowed for the space),
// with an optional zone "Z", "UTC", "+HH", "+HH:MM" or "+HHMM" (UTC when none).
std::optional<micros> parse_timestamp(std::string_view s);
// Whether `s` is exactly the engine's text for an instant (format_timestamp's form,
// with "+00" or "+00:00"): how a result column of such values is recognised.
bool is_timestamp_text(std::string_view s);

// The civil fields of an instant (UTC).
struct civil_time {
    int64_t year = 1970;
    unsigned month = 1, day = 1;  // 1-based
    unsigned hour = 0, minute = 0, second = 0;
    int64_t micro = 0;  // 0..999999
    unsigned weekday = 4;  // 0 = Sunday
    unsigned yearday = 1;  // 1-based
};
civil_time to_civil(micros t);
// Days from 1970-01-01 to y-m-d in the proleptic Gregorian calendar (H. Hinnant's
// days_from_civil).
int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
micros from_civil(int64_t year, unsigned month, unsigned day, int64_t us_of_day = 0);

}  // namespace sluice::sql

#include "sql/dialect_functions.h"

#include <fmt/format.h>

#include <cctype>
#include <chrono>
#include <cmath>
#include <optional>
#include <string>

#include "sql/json_text.h"
#include "sql/sql_text.h"
#include "sql/time_text.h"

namespace sluice::sql {

namespace {

constexpr micros us_per_second = 1'000'000;

std::string_view text_of(sqlite3_value* v) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_value_bytes(v))) : "";
}

void result_text(sqlite3_context* c, const std::string& s) {
    sqlite3_result_text(c, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

void result_error(sqlite3_context* c, const std::string& s) {
    sqlite3_result_error(c, s.data(), static_cast<int>(s.size()));
}

// A timestamp argument: text in any form parse_timestamp reads. Numbers are refused
// with a hint, since PostgreSQL has no timestamp of a bare number either.
std::optional<micros> timestamp_arg(sqlite3_context* c, sqlite3_value* v, const char* fn) {
    const int type = sqlite3_value_type(v);
    if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
        if (auto t = parse_timestamp(text_of(v))) return t;
        result_error(c, fmt::format("{}: invalid input syntax for type timestamp: \"{}\"", fn,
                                    text_of(v).substr(0, 64)));
        return std::nullopt;
    }
    result_error(c, fmt::format("{}: a number is not a timestamp; for milliseconds since the "
                                "epoch write to_timestamp(ms / 1000.0)",
                                fn));
    return std::nullopt;
}

bool any_null(int argc, sqlite3_value** argv) {
    for (int i = 0; i < argc; ++i)
        if (sqlite3_value_type(argv[i]) == SQLITE_NULL) return true;
    return false;
}

void now_fn(sqlite3_context* c, int, sqlite3_value**) {
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    result_text(c, format_timestamp(std::chrono::duration_cast<std::chrono::microseconds>(now).count()));
}

void to_timestamp_fn(sqlite3_context* c, int argc, sqlite3_value** argv) {
    if (argc != 1) {
        result_error(c, "to_timestamp(text, format) is not supported: use to_timestamp(seconds)");
        return;
    }
    if (any_null(argc, argv)) return sqlite3_result_null(c);
    const int type = sqlite3_value_numeric_type(argv[0]);
    if (type != SQLITE_INTEGER && type != SQLITE_FLOAT) {
        result_error(c, "to_timestamp: the argument is seconds since the epoch, a number");
        return;
    }
    const double secs = sqlite3_value_double(argv[0]);
    // 10,000 years either way: within int64 microseconds.
    if (!std::isfinite(secs) || std::fabs(secs) > 3.2e11) {
        result_error(c, "to_timestamp: timestamp out of range");
        return;
    }
    result_text(c, format_timestamp(std::llround(secs * us_per_second)));
}

void date_trunc_fn(sqlite3_context* c, int argc, sqlite3_value** argv) {
    if (any_null(argc, argv)) return sqlite3_result_null(c);
    auto t = timestamp_arg(c, argv[1], "date_trunc");
    if (!t) return;
    const std::string unit = to_lower(text_of(argv[0]));
    const civil_time ct = to_civil(*t);
    const micros day_start = from_civil(ct.year, ct.month, ct.day);
    micros out = 0;
    auto year_floor = [&](int64_t n) {  // decades, centuries, millennia
        int64_t y = ct.year;
        if (n == 1) return from_civil(y, 1, 1);
        // Centuries and millennia start at years ending in 1 (2001), decades at 0.
        int64_t base = n == 10 ? 0 : 1;
        y = base + ((y - base) >= 0 ? (y - base) / n : -((-(y - base) + n - 1) / n)) * n;
        return from_civil(y, 1, 1);
    };
    if (unit == "microseconds" || unit == "microsecond") {
        out = *t;
    } else if (unit == "milliseconds" || unit == "millisecond") {
        out = *t - ((*t % 1000) + 1000) % 1000;
    } else if (unit == "second" || unit == "seconds") {
        out = *t - ct.micro;
    } else if (unit == "minute" || unit == "minutes") {
        out = day_start + (ct.hour * 3600 + ct.minute * 60) * us_per_second;
    } else if (unit == "hour" || unit == "hours") {
        out = day_start + ct.hour * 3600 * us_per_second;
    } else if (unit == "day" || unit == "days") {
        out = day_start;
    } else if (unit == "week" || unit == "weeks") {
        out = day_start - static_cast<micros>((ct.weekday + 6) % 7) * 86'400 * us_per_second;
    } else if (unit == "month" || unit == "months") {
        out = from_civil(ct.year, ct.month, 1);
    } else if (unit == "quarter") {
        out = from_civil(ct.year, (ct.month - 1) / 3 * 3 + 1, 1);
    } else if (unit == "year" || unit == "years") {
        out = year_floor(1);
    } else if (unit == "decade") {
        out = year_floor(10);
    } else if (unit == "century") {
        out = year_floor(100);
    } else if (unit == "millennium") {
        out = year_floor(1000);
    } else {
        result_error(c, fmt::format("date_trunc: unit \"{}\" not recognized", unit));
        return;
    }
    result_text(c, format_timestamp(out));
}

// ISO 8601 week number of a civil date.
int64_t iso_week(const civil_time& ct) {
    const int64_t wday = (ct.weekday + 6) % 7;  // Monday 0
    const int64_t thursday_yday = static_cast<int64_t>(ct.yearday) - wday + 3;  // may leave the year
    const micros thursday = from_civil(ct.year, 1, 1) + (thursday_yday - 1) * 86'400 * us_per_second;
    return (to_civil(thursday).yearday - 1) / 7 + 1;
}

void date_part_fn(sqlite3_context* c, int argc, sqlite3_value** argv) {
    if (any_null(argc, argv)) return sqlite3_result_null(c);
    auto t = timestamp_arg(c, argv[1], "extract");
    if (!t) return;
    const std::string field = to_lower(text_of(argv[0]));
    const civil_time ct = to_civil(*t);
    const double seconds = ct.second + static_cast<double>(ct.micro) / us_per_second;
    std::optional<int64_t> i;
    if (field == "epoch") return sqlite3_result_double(c, static_cast<double>(*t) / us_per_second);
    if (field == "second" || field == "seconds") return sqlite3_result_double(c, seconds);
    if (field == "milliseconds") return sqlite3_result_double(c, seconds * 1000);
    if (field == "microseconds") i = ct.second * us_per_second + ct.micro;
    if (field == "minute" || field == "minutes") i = ct.minute;
    if (field == "hour" || field == "hours") i = ct.hour;
    if (field == "day" || field == "days") i = ct.day;
    if (field == "month" || field == "months") i = ct.month;
    if (field == "year" || field == "years") i = ct.year;
    if (field == "quarter") i = (ct.month - 1) / 3 + 1;
    if (field == "dow") i = ct.weekday;
    if (field == "isodow") i = ct.weekday == 0 ? 7 : ct.weekday;
    if (field == "doy") i = ct.yearday;
    if (field == "week") i = iso_week(ct);
    if (field == "decade") i = ct.year >= 0 ? ct.year / 10 : -((-ct.year + 9) / 10);
    if (field == "century") i = ct.year > 0 ? (ct.year + 99) / 100 : -((-ct.year + 99) / 100);
    if (field == "millennium") i = ct.year > 0 ? (ct.year + 999) / 1000 : -((-ct.year + 999) / 1000);
    if (!i) {
        result_error(c, fmt::format("extract: field \"{}\" not recognized", field));
        return;
    }
    sqlite3_result_int64(c, *i);
}

void add_interval_fn(sqlite3_context* c, int argc, sqlite3_value** argv) {
    if (any_null(argc, argv)) return sqlite3_result_null(c);
    auto t = timestamp_arg(c, argv[0], "interval arithmetic");
    if (!t) return;
    auto iv = parse_interval(text_of(argv[1]));
    if (!iv) {
        result_error(c, fmt::format("invalid input syntax for type interval: \"{}\"",
                                    text_of(argv[1]).substr(0, 64)));
        return;
    }
    result_text(c, format_timestamp(add_interval(*t, *iv, sqlite3_value_int(argv[2]) < 0 ? -1 : 1)));
}

void cast_bool_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    switch (sqlite3_value_type(argv[0])) {
        case SQLITE_NULL:
            return sqlite3_result_null(c);
        case SQLITE_INTEGER:
        case SQLITE_FLOAT:
            return sqlite3_result_int(c, sqlite3_value_double(argv[0]) != 0.0);
        default:
            break;
    }
    std::string s = to_lower(text_of(argv[0]));
    while (!s.empty() && s.back() == ' ') s.pop_back();
    while (!s.empty() && s.front() == ' ') s.erase(0, 1);
    for (const char* yes : {"t", "true", "y", "yes", "on", "1"})
        if (s == yes) return sqlite3_result_int(c, 1);
    for (const char* no : {"f", "false", "n", "no", "off", "0"})
        if (s == no) return sqlite3_result_int(c, 0);
    result_error(c, fmt::format("invalid input syntax for type boolean: \"{}\"", s.substr(0, 64)));
}

void cast_bytea_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    const int type = sqlite3_value_type(argv[0]);
    if (type == SQLITE_NULL) return sqlite3_result_null(c);
    std::string_view s = text_of(argv[0]);
    if (type == SQLITE_TEXT && s.size() >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X')) {
        // PostgreSQL's hex format, as drivers write bytes: '\x6b31'::bytea.
        std::string out;
        auto hex = [](char h) {
            if (h >= '0' && h <= '9') return h - '0';
            h = static_cast<char>(std::tolower(static_cast<unsigned char>(h)));
            return h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
        };
        for (size_t i = 2; i + 1 < s.size() + 1; i += 2) {
            if (i + 1 >= s.size() || hex(s[i]) < 0 || hex(s[i + 1]) < 0) {
                result_error(c, "invalid hexadecimal data in a bytea literal");
                return;
            }
            out.push_back(static_cast<char>(hex(s[i]) * 16 + hex(s[i + 1])));
        }
        return sqlite3_result_blob(c, out.data(), static_cast<int>(out.size()), SQLITE_TRANSIENT);
    }
    sqlite3_result_blob(c, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

void cast_timestamptz_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(c);
    if (auto t = timestamp_arg(c, argv[0], "::timestamptz")) result_text(c, format_timestamp(*t));
}

void cast_date_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(c);
    if (auto t = timestamp_arg(c, argv[0], "::date")) result_text(c, format_timestamp(*t).substr(0, 10));
}

void cast_json_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    const int type = sqlite3_value_type(argv[0]);
    if (type == SQLITE_NULL) return sqlite3_result_null(c);
    if (type == SQLITE_INTEGER || type == SQLITE_FLOAT) return sqlite3_result_value(c, argv[0]);
    std::string_view s = text_of(argv[0]);
    if (!is_valid_utf8(s)) {
        result_error(c, "invalid input syntax for type json: not UTF-8");
        return;
    }
    // The text as it is; json() then validates it in the query when it is read.
    sqlite3_result_text(c, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

void convert_from_fn(sqlite3_context* c, int, sqlite3_value** argv) {
    if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(c);
    std::string enc = to_upper(text_of(argv[1]));
    std::erase(enc, '-');
    std::erase(enc, '_');
    if (enc != "UTF8" && enc != "UNICODE") {
        result_error(c, fmt::format("convert_from: only UTF8 is supported, not \"{}\"", text_of(argv[1])));
        return;
    }
    std::string_view s = text_of(argv[0]);
    if (!is_valid_utf8(s)) {
        result_error(c, "invalid byte sequence for encoding \"UTF8\"");
        return;
    }
    sqlite3_result_text(c, s.data(), static_cast<int>(s.size()), SQLITE_TRANSIENT);
}

}  // namespace

outcome<bool> register_dialect_functions(sqlite3* db) {
    using fn = void (*)(sqlite3_context*, int, sqlite3_value**);
    struct def {
        const char* name;
        int args;
        fn f;
        bool deterministic;
    };
    static constexpr def defs[] = {
        {"now", 0, now_fn, false},
        {"transaction_timestamp", 0, now_fn, false},
        {"statement_timestamp", 0, now_fn, false},
        {"clock_timestamp", 0, now_fn, false},
        {"to_timestamp", -1, to_timestamp_fn, true},
        {"date_trunc", 2, date_trunc_fn, true},
        {"date_part", 2, date_part_fn, true},
        {"pg_extract", 2, date_part_fn, true},
        {"pg_add_interval", 3, add_interval_fn, true},
        {"pg_cast_bool", 1, cast_bool_fn, true},
        {"pg_cast_bytea", 1, cast_bytea_fn, true},
        {"pg_cast_timestamptz", 1, cast_timestamptz_fn, true},
        {"pg_cast_date", 1, cast_date_fn, true},
        {"pg_cast_json", 1, cast_json_fn, true},
        {"convert_from", 2, convert_from_fn, true},
    };
    for (const auto& d : defs) {
        const int flags = SQLITE_UTF8 | (d.deterministic ? SQLITE_DETERMINISTIC : 0);
        int rc = sqlite3_create_function_v2(db, d.name, d.args, flags, nullptr, d.f, nullptr,
                                            nullptr, nullptr);
        if (rc != SQLITE_OK)
            return query_error{failure::internal, fmt::format("{}: {}", d.name, sqlite3_errstr(rc))};
    }
    return true;
}

}  // namespace sluice::sql

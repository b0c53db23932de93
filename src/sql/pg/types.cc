#include "sql/pg/types.h"

#include "sql/json_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <vector>

#include "sql/pg/lexer.h"
#include "sql/pg_type_table.h"
#include "sql/sql_text.h"
#include "sql/time_text.h"

namespace sluice::sql::pg {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    return s;
}

// The natural text of a value: what SQLite's value would print as, floats as
// PostgreSQL prints them.
std::string natural_text(const value& v) {
    switch (v.index()) {
        case 1:
            return std::to_string(std::get<int64_t>(v));
        case 2:
            return format_float8(std::get<double>(v));
        case 3:
            return std::get<std::string>(v);
        case 4:
            return std::string(as_chars(std::get<bytes>(v)));
        default:
            return {};
    }
}

// Text and BLOB values as PostgreSQL booleans: "t"/"f" when they spell one.
std::optional<bool> parse_bool(std::string_view s) {
    auto l = to_lower(trim(s));
    if (l == "t" || l == "true" || l == "yes" || l == "on" || l == "1" || l == "y") return true;
    if (l == "f" || l == "false" || l == "no" || l == "off" || l == "0" || l == "n") return false;
    return std::nullopt;
}

std::optional<int64_t> parse_int(std::string_view s) {
    s = trim(s);
    if (!s.empty() && s.front() == '+') s.remove_prefix(1);
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
    return v;
}

std::optional<double> parse_double(std::string_view s) {
    std::string t(trim(s));
    if (t.empty()) return std::nullopt;
    auto l = to_lower(t);
    if (l == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (l == "infinity" || l == "+infinity" || l == "inf") return HUGE_VAL;
    if (l == "-infinity" || l == "-inf") return -HUGE_VAL;
    char* end = nullptr;
    double d = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size()) return std::nullopt;
    return d;
}

// An integer value of a non-integer storage class, when it holds one exactly.
std::optional<int64_t> as_int(const value& v) {
    switch (v.index()) {
        case 1:
            return std::get<int64_t>(v);
        case 2: {
            double d = std::get<double>(v);
            // 2^63 is exactly representable; anything at or above it is not an int64.
            if (std::trunc(d) == d && d >= -9223372036854775808.0 && d < 9223372036854775808.0)
                return static_cast<int64_t>(d);
            return std::nullopt;
        }
        case 3:
            return parse_int(std::get<std::string>(v));
        case 4:
            return parse_int(as_chars(std::get<bytes>(v)));
        default:
            return std::nullopt;
    }
}

std::optional<double> as_double(const value& v) {
    switch (v.index()) {
        case 1:
            return static_cast<double>(std::get<int64_t>(v));
        case 2:
            return std::get<double>(v);
        case 3:
            return parse_double(std::get<std::string>(v));
        case 4:
            return parse_double(as_chars(std::get<bytes>(v)));
        default:
            return std::nullopt;
    }
}

std::optional<bool> as_bool(const value& v) {
    switch (v.index()) {
        case 1:
            return std::get<int64_t>(v) != 0;
        case 2:
            return std::get<double>(v) != 0.0;
        case 3:
            return parse_bool(std::get<std::string>(v));
        case 4:
            return parse_bool(as_chars(std::get<bytes>(v)));
        default:
            return std::nullopt;
    }
}

// The text format of `v` in a column announced as `type_oid`.
std::string text_for(const value& v, uint32_t type_oid) {
    if (type_oid == oid::bytea) {
        // Everything in a bytea column is bytes: its text form is hex.
        if (auto* b = std::get_if<bytes>(&v)) return bytea_hex(as_chars(*b));
        return bytea_hex(natural_text(v));
    }
    if (type_oid == oid::boolean) {
        if (auto b = as_bool(v)) return *b ? "t" : "f";
    }
    if (type_oid == oid::timestamptz) {
        // PostgreSQL's own text: "+00", not the engine's "+00:00".
        if (auto* s = std::get_if<std::string>(&v))
            if (auto t = parse_timestamp(*s)) {
                std::string out = format_timestamp(*t);
                return out.substr(0, out.size() - 3);
            }
    }
    if (auto* b = std::get_if<bytes>(&v)) {
        // A BLOB in a text or number column: its bytes when they are text, else hex (the
        // client would reject invalid UTF-8 in a UTF8 session).
        auto s = as_chars(*b);
        if (is_valid_utf8(s) && s.find('\0') == std::string_view::npos) return std::string(s);
        return bytea_hex(s);
    }
    return natural_text(v);
}

template <typename T>
void append_be(std::string& out, T v) {
    using U = std::make_unsigned_t<T>;
    auto u = static_cast<U>(v);
    for (int shift = (sizeof(U) - 1) * 8; shift >= 0; shift -= 8)
        out.push_back(static_cast<char>(u >> shift));
}

template <typename T>
T read_be(std::string_view s) {
    using U = std::make_unsigned_t<T>;
    U u = 0;
    for (char c : s) u = static_cast<U>((u << 8) | static_cast<unsigned char>(c));
    return static_cast<T>(u);
}

void append_length(std::string& out, size_t n) {
    append_be(out, static_cast<int32_t>(n));
}

void append_sized(std::string& out, std::string_view s) {
    append_length(out, s.size());
    out.append(s);
}

// PostgreSQL's epoch, 2000-01-01 00:00:00 UTC, in microseconds since 1970's.
constexpr int64_t pg_epoch_us = 946'684'800'000'000;

pg_error cannot_convert(const value& v, uint32_t type_oid) {
    return {"22P03", fmt::format("cannot send the value '{}' in binary as type {}",
                                 natural_text(v).substr(0, 64), type_oid)};
}

}  // namespace

std::optional<uint32_t> oid_for_decl_type(std::string_view decl_type) {
    // One rule for the wire and the catalog (sql/pg_type_table.h).
    const int64_t o = pg_oid_for_decl(decl_type);
    if (o == 0) return std::nullopt;
    return static_cast<uint32_t>(o);
}

int32_t type_modifier_for_decl(std::string_view decl_type) {
    if (oid_for_decl_type(decl_type) != oid::numeric) return -1;
    // NUMERIC(p,s); NUMERIC without them has none.
    const size_t open = decl_type.find('('), comma = decl_type.find(',');
    if (open == std::string_view::npos || comma == std::string_view::npos) return -1;
    int precision = 0, scale = 0;
    const char* end = decl_type.data() + decl_type.size();
    auto p = std::from_chars(decl_type.data() + open + 1, decl_type.data() + comma, precision);
    auto q = std::from_chars(decl_type.data() + comma + 1, end, scale);
    if (p.ec != std::errc{} || q.ec != std::errc{} || q.ptr == end || *q.ptr != ')') return -1;
    return static_cast<int32_t>((precision << 16) | scale) + 4;
}

std::optional<uint32_t> oid_for_value(const value& v) {
    switch (v.index()) {
        case 1:
            return oid::int8;
        case 2:
            return oid::float8;
        case 3:
            // The engine's timestamps (now(), date_trunc(), ::timestamptz, ...) are text
            // in one exact form (sql/time_text.h).
            return is_timestamp_text(std::get<std::string>(v)) ? oid::timestamptz : oid::text;
        case 4:
            return oid::bytea;
        default:
            return std::nullopt;
    }
}

param_type param_type_of(uint32_t type_oid) {
    switch (type_oid) {
        case oid::boolean:
            return param_type::boolean;
        case oid::int2:
            return param_type::int16;
        case oid::int4:
            return param_type::int32;
        case oid::int8:
            return param_type::int64;
        case oid::float4:
            return param_type::float32;
        case oid::float8:
            return param_type::float64;
        case oid::numeric:
            return param_type::numeric;
        case oid::text:
        case oid::varchar:
        case oid::bpchar:
            return param_type::text;
        case oid::bytea:
            return param_type::bytes;
        case oid::date:
            return param_type::date;
        case oid::timestamp:
            return param_type::timestamp;
        case oid::timestamptz:
            return param_type::timestamptz;
        default:
            return param_type::unspecified;
    }
}

int16_t type_size(uint32_t type_oid) {
    switch (type_oid) {
        case oid::boolean:
            return 1;
        case oid::int2:
            return 2;
        case oid::int4:
        case oid::oid:
        case oid::float4:
            return 4;
        case oid::int8:
        case oid::float8:
        case oid::timestamptz:
            return 8;
        case oid::name:
            return 64;
        default:
            return -1;
    }
}

std::string format_float8(double d) {
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
    return fmt::format("{}", d);
}

namespace {

// Appends \x and the hex digits of `raw`, growing `out` once, to the exact size.
void append_hex(std::string& out, std::string_view raw) {
    static constexpr char digits[] = "0123456789abcdef";
    const size_t at = out.size();
    out.resize(at + 2 + raw.size() * 2);
    char* p = out.data() + at;
    *p++ = '\\';
    *p++ = 'x';
    for (char c : raw) {
        auto b = static_cast<unsigned char>(c);
        *p++ = digits[b >> 4];
        *p++ = digits[b & 0xF];
    }
}

// smallint[]'s binary format from its text form {1,2}: dimensions, a has-nulls flag and
// the element type, then each dimension's length and lower bound (1), then each
// element's length and value. False when the text is not a one-dimensional array of
// smallints without NULLs.
bool append_int2_array(std::string& out, std::string_view text) {
    if (text.size() < 2 || text.front() != '{' || text.back() != '}') return false;
    std::vector<int16_t> items;
    std::string_view body = text.substr(1, text.size() - 2);
    while (!body.empty()) {
        const size_t comma = body.find(',');
        const std::string_view item = body.substr(0, comma);
        int v = 0;
        auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc{} || end != item.data() + item.size() || v < INT16_MIN || v > INT16_MAX)
            return false;
        items.push_back(static_cast<int16_t>(v));
        body = comma == std::string_view::npos ? std::string_view{} : body.substr(comma + 1);
    }
    const bool empty = items.empty();
    append_length(out, (empty ? 12 : 20) + 6 * items.size());
    append_be(out, int32_t{empty ? 0 : 1});
    append_be(out, int32_t{0});
    append_be(out, static_cast<int32_t>(oid::int2));
    if (!empty) {
        append_be(out, static_cast<int32_t>(items.size()));
        append_be(out, int32_t{1});
    }
    for (int16_t v : items) {
        append_be(out, int32_t{2});
        append_be(out, v);
    }
    return true;
}

}  // namespace

bool append_numeric_binary(std::string& out, std::string_view text) {
    const bool negative = !text.empty() && text.front() == '-';
    if (negative) text.remove_prefix(1);
    const size_t dot = text.find('.');
    std::string_view whole = text.substr(0, dot);
    std::string_view frac =
        dot == std::string_view::npos ? std::string_view{} : text.substr(dot + 1);
    auto all_digits = [](std::string_view s) {
        return std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
    };
    if (whole.empty() || !all_digits(whole) || !all_digits(frac) ||
        (dot != std::string_view::npos && frac.empty()) || frac.size() > 0x3FFF)
        return false;
    // Base-10000 digits: the whole part padded on the left to groups of four, the
    // fraction on the right. The weight is the first group's power of 10000.
    std::string digits(3 - (whole.size() + 3) % 4, '0');
    digits.append(whole);
    const auto whole_groups = static_cast<int>(digits.size() / 4);
    digits.append(frac);
    digits.append(3 - (frac.size() + 3) % 4, '0');
    std::vector<int16_t> groups;
    for (size_t i = 0; i < digits.size(); i += 4)
        groups.push_back(static_cast<int16_t>(std::stoi(digits.substr(i, 4))));
    int weight = whole_groups - 1;
    size_t first = 0;
    while (first < groups.size() && groups[first] == 0) {
        ++first;
        --weight;
    }
    size_t last = groups.size();
    while (last > first && groups[last - 1] == 0) --last;
    const bool zero = first == last;
    if (zero) weight = 0;  // PostgreSQL's zero: no digits, weight 0, positive
    append_length(out, 8 + 2 * (last - first));
    append_be(out, static_cast<int16_t>(last - first));
    append_be(out, static_cast<int16_t>(weight));
    append_be(out, static_cast<uint16_t>(negative && !zero ? 0x4000 : 0));
    append_be(out, static_cast<int16_t>(frac.size()));
    for (size_t i = first; i < last; ++i) append_be(out, groups[i]);
    return true;
}

std::string bytea_hex(std::string_view raw) {
    std::string s;
    append_hex(s, raw);
    return s;
}

std::string text_cell(const value& v, uint32_t type_oid) {
    return text_for(v, type_oid);
}

bool append_cell(std::string& out, const value& v, uint32_t type_oid, int16_t format,
                 pg_error& err) {
    if (std::holds_alternative<std::monostate>(v)) {
        append_be(out, int32_t{-1});
        return true;
    }
    if (format == 0) {
        // A large blob's hex goes straight into the message, without a copy of its own:
        // its copies are what a statement's memory bound counts (sql/budget.h).
        if (auto* b = std::get_if<bytes>(&v); b && type_oid == oid::bytea) {
            append_length(out, 2 + b->size() * 2);
            append_hex(out, as_chars(*b));
            return true;
        }
        append_sized(out, text_for(v, type_oid));
        return true;
    }
    switch (type_oid) {
        case oid::int8:
        case oid::int4:
        case oid::int2: {
            auto i = as_int(v);
            if (!i) break;
            if (type_oid == oid::int8) {
                append_length(out, 8);
                append_be(out, *i);
            } else if (type_oid == oid::int4 && *i >= INT32_MIN && *i <= INT32_MAX) {
                append_length(out, 4);
                append_be(out, static_cast<int32_t>(*i));
            } else if (type_oid == oid::int2 && *i >= INT16_MIN && *i <= INT16_MAX) {
                append_length(out, 2);
                append_be(out, static_cast<int16_t>(*i));
            } else {
                break;
            }
            return true;
        }
        case oid::float8:
        case oid::float4: {
            auto d = as_double(v);
            if (!d) break;
            if (type_oid == oid::float8) {
                append_length(out, 8);
                append_be(out, std::bit_cast<int64_t>(*d));
            } else {
                append_length(out, 4);
                append_be(out, std::bit_cast<int32_t>(static_cast<float>(*d)));
            }
            return true;
        }
        case oid::boolean: {
            auto b = as_bool(v);
            if (!b) break;
            append_length(out, 1);
            out.push_back(*b ? 1 : 0);
            return true;
        }
        case oid::bytea:
            append_sized(out, natural_text(v));  // a BLOB's natural text is its bytes
            return true;
        case oid::timestamptz: {
            // Microseconds since 2000-01-01 00:00:00 UTC, PostgreSQL's epoch.
            auto* s = std::get_if<std::string>(&v);
            auto t = s ? parse_timestamp(*s) : std::nullopt;
            if (!t) break;
            append_length(out, 8);
            append_be(out, *t - pg_epoch_us);
            return true;
        }
        case oid::int2_array: {
            auto* s = std::get_if<std::string>(&v);
            if (s && append_int2_array(out, *s)) return true;
            break;
        }
        case oid::numeric:
            if (append_numeric_binary(out, natural_text(v))) return true;
            break;
        default:
            // text, varchar and the rest: the binary format of text is its UTF-8 bytes.
            append_sized(out, text_for(v, type_oid));
            return true;
    }
    err = cannot_convert(v, type_oid);
    return false;
}

namespace {

pg_error bad_text(std::string_view type_name, std::string_view s) {
    return {"22P02",
            fmt::format("invalid input syntax for type {}: \"{}\"", type_name, s.substr(0, 64))};
}

pg_error bad_binary(int index) {
    return {"22P03", fmt::format("incorrect binary data format in bind parameter {}", index)};
}

// bytea input: the hex format (\x...) or the escape format (\\ and \ooo octal).
std::optional<bytes> parse_bytea(std::string_view s) {
    bytes out;
    if (s.size() >= 2 && s[0] == '\\' && (s[1] == 'x' || s[1] == 'X')) {
        auto hexval = [](char c) -> int {
            if (c >= '0' && c <= '9') return c - '0';
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            if (c >= 'a' && c <= 'f') return c - 'a' + 10;
            return -1;
        };
        for (size_t i = 2; i < s.size();) {
            if (std::isspace(static_cast<unsigned char>(s[i]))) {
                ++i;
                continue;
            }
            if (i + 1 >= s.size()) return std::nullopt;
            int hi = hexval(s[i]), lo = hexval(s[i + 1]);
            if (hi < 0 || lo < 0) return std::nullopt;
            out.push_back(static_cast<uint8_t>(hi * 16 + lo));
            i += 2;
        }
        return out;
    }
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != '\\') {
            out.push_back(static_cast<uint8_t>(s[i]));
        } else if (i + 1 < s.size() && s[i + 1] == '\\') {
            out.push_back('\\');
            ++i;
        } else if (i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                   s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
            out.push_back(static_cast<uint8_t>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 +
                                               s[i + 3] - '0'));
            i += 3;
        } else {
            return std::nullopt;
        }
    }
    return out;
}

// A timestamp with an explicit zone, as JDBC's setTimestamp sends it untyped:
// "YYYY-MM-DD HH:MM[:SS[.f]]" then "Z" or an offset.
bool is_zoned_timestamp(std::string_view s) {
    if (s.size() < 17 || (s[10] != ' ' && s[10] != 'T') || s[4] != '-' || s[7] != '-' ||
        s[13] != ':')
        return false;
    const auto zone = s.find_first_of("+-Z", 16);
    return zone != std::string_view::npos && parse_timestamp(s).has_value();
}

// A date with a zone, as JDBC's setDate sends it untyped: "2024-05-01 +02".
bool is_zoned_date(std::string_view s) {
    return s.size() >= 14 && s.size() <= 17 && s[10] == ' ' && (s[11] == '+' || s[11] == '-') &&
           parse_timestamp(s).has_value();
}

param_result decode_text_param(std::string_view s, uint32_t type_oid) {
    if (type_oid == oid::unspecified && is_zoned_timestamp(s)) type_oid = oid::timestamptz;
    if (type_oid == oid::unspecified && is_zoned_date(s)) return {std::string(s.substr(0, 10)), {}};
    switch (type_oid) {
        case oid::int2:
        case oid::int4:
        case oid::int8:
        case oid::oid: {
            auto i = parse_int(s);
            const char* name = type_oid == oid::int2   ? "smallint"
                               : type_oid == oid::int4 ? "integer"
                               : type_oid == oid::oid  ? "oid"
                                                       : "bigint";
            if (!i) return {{}, bad_text(name, s)};
            bool fits = type_oid == oid::int2   ? (*i >= INT16_MIN && *i <= INT16_MAX)
                        : type_oid == oid::int4 ? (*i >= INT32_MIN && *i <= INT32_MAX)
                        : type_oid == oid::oid  ? (*i >= 0 && *i <= UINT32_MAX)
                                                : true;
            if (!fits)
                return {{},
                        pg_error{"22003",
                                 fmt::format("value \"{}\" is out of range for type {}", s, name)}};
            return {*i, {}};
        }
        case oid::float4:
        case oid::float8: {
            auto d = parse_double(s);
            if (!d) return {{}, bad_text("double precision", s)};
            return {*d, {}};
        }
        case oid::numeric: {
            if (auto i = parse_int(s)) return {*i, {}};
            if (auto d = parse_double(s)) return {*d, {}};
            return {{}, bad_text("numeric", s)};
        }
        case oid::boolean: {
            auto b = parse_bool(s);
            if (!b) return {{}, bad_text("boolean", s)};
            return {int64_t{*b ? 1 : 0}, {}};
        }
        case oid::bytea: {
            auto b = parse_bytea(s);
            if (!b) return {{}, bad_text("bytea", s)};
            return {std::move(*b), {}};
        }
        case oid::timestamptz:
        case oid::timestamp:
        case oid::date: {
            // Into the engine's timestamp text (sql/time_text.h), so that it compares
            // with the others: JDBC sends "2024-05-01 12:00:00.25+02".
            auto t = parse_timestamp(s);
            if (!t) return {{}, bad_text(type_oid == oid::date ? "date" : "timestamp", s)};
            std::string text = format_timestamp(*t);
            if (type_oid == oid::date) text.resize(10);
            return {std::move(text), {}};
        }
        default:
            // text, varchar, unspecified and types SQLite keeps as text (dates, uuids, json):
            // SQLite's column affinity converts '42' for an INTEGER column.
            return {std::string(s), {}};
    }
}

// numeric's binary format (what JDBC sends for a BigDecimal): int16 digit count,
// weight (of the first digit, in powers of 10000), sign and display scale, then the
// base-10000 digits. The decimal text, or nullopt when malformed.
std::optional<std::string> numeric_text(std::string_view s) {
    if (s.size() < 8) return std::nullopt;
    const int ndigits = read_be<int16_t>(s.substr(0, 2));
    const int weight = read_be<int16_t>(s.substr(2, 2));
    const auto sign = static_cast<uint16_t>(read_be<int16_t>(s.substr(4, 2)));
    const int dscale = read_be<int16_t>(s.substr(6, 2));
    if (ndigits < 0 || dscale < 0 || s.size() != 8 + 2 * static_cast<size_t>(ndigits))
        return std::nullopt;
    if (sign == 0xC000) return "NaN";
    if (sign == 0xD000) return "Infinity";
    if (sign == 0xF000) return "-Infinity";
    if (sign != 0 && sign != 0x4000) return std::nullopt;
    auto digit = [&](int i) -> int {  // the base-10000 digit at position i (0: first)
        return i >= 0 && i < ndigits ? read_be<int16_t>(s.substr(8 + 2 * static_cast<size_t>(i), 2))
                                     : 0;
    };
    std::string out = sign == 0x4000 ? "-" : "";
    if (weight < 0) {
        out += "0";
    } else {
        for (int i = 0; i <= weight; ++i)
            out += i == 0 ? std::to_string(digit(i)) : fmt::format("{:04}", digit(i));
    }
    if (dscale > 0) {
        std::string frac;
        for (int i = weight + 1; static_cast<int>(frac.size()) < dscale; ++i)
            frac += fmt::format("{:04}", digit(i));
        out += "." + frac.substr(0, static_cast<size_t>(dscale));
    }
    return out;
}

param_result decode_binary_param(std::string_view s, uint32_t type_oid, int index) {
    switch (type_oid) {
        case oid::numeric: {
            auto text = numeric_text(s);
            if (!text) return {{}, bad_binary(index)};
            return decode_text_param(*text, oid::numeric);
        }
        case oid::int2:
            if (s.size() != 2) return {{}, bad_binary(index)};
            return {int64_t{read_be<int16_t>(s)}, {}};
        case oid::int4:
            if (s.size() != 4) return {{}, bad_binary(index)};
            return {int64_t{read_be<int32_t>(s)}, {}};
        case oid::oid:
            if (s.size() != 4) return {{}, bad_binary(index)};
            return {int64_t{read_be<uint32_t>(s)}, {}};
        case oid::int8:
            if (s.size() != 8) return {{}, bad_binary(index)};
            return {read_be<int64_t>(s), {}};
        case oid::float4:
            if (s.size() != 4) return {{}, bad_binary(index)};
            return {static_cast<double>(std::bit_cast<float>(read_be<int32_t>(s))), {}};
        case oid::float8:
            if (s.size() != 8) return {{}, bad_binary(index)};
            return {std::bit_cast<double>(read_be<int64_t>(s)), {}};
        case oid::boolean:
            if (s.size() != 1) return {{}, bad_binary(index)};
            return {int64_t{s[0] != 0 ? 1 : 0}, {}};
        case oid::text:
        case oid::varchar:
        case oid::bpchar:
        case oid::name:
        case oid::unknown:
        case oid::json:
            return {std::string(s), {}};
        case oid::jsonb:
            // jsonb's binary format: a version byte (1), then the JSON text.
            if (s.empty() || s[0] != 1) return {{}, bad_binary(index)};
            return {std::string(s.substr(1)), {}};
        case oid::bytea:
        case oid::unspecified:
            return {bytes(s.begin(), s.end()), {}};
        case oid::timestamptz:
        case oid::timestamp:
            // Microseconds since 2000-01-01 00:00:00 UTC.
            if (s.size() != 8) return {{}, bad_binary(index)};
            return {format_timestamp(read_be<int64_t>(s) + pg_epoch_us), {}};
        case oid::date:
            // Days since 2000-01-01.
            if (s.size() != 4) return {{}, bad_binary(index)};
            return {format_timestamp(pg_epoch_us + read_be<int32_t>(s) * int64_t{86'400'000'000})
                        .substr(0, 10),
                    {}};
        default:
            return {{},
                    pg_error{"0A000",
                             fmt::format("binary format of parameter type {} (parameter {}) is not "
                                         "supported; send it as text",
                                         type_oid, index)}};
    }
}

}  // namespace

param_result decode_param(std::optional<std::string_view> data, uint32_t type_oid, int16_t format,
                          int index) {
    if (!data) return {std::monostate{}, {}};
    if (format == 1) return decode_binary_param(*data, type_oid, index);
    return decode_text_param(*data, type_oid);
}

}  // namespace sluice::sql::pg

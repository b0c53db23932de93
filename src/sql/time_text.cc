#include "sql/time_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

constexpr micros us_per_second = 1'000'000;
constexpr micros us_per_day = 86'400 * us_per_second;

void civil_from_days(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
}

bool leap(int64_t y) {
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned days_in_month(int64_t y, unsigned m) {
    static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : days[m - 1];
}

int64_t floor_div(int64_t a, int64_t b) {
    return a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
}

// Reads exactly `n` digits at s[i].
bool digits(std::string_view s, size_t& i, size_t n, unsigned& out) {
    if (i + n > s.size()) return false;
    out = 0;
    for (size_t k = 0; k < n; ++k) {
        const char c = s[i + k];
        if (!std::isdigit(static_cast<unsigned char>(c))) return false;
        out = out * 10 + static_cast<unsigned>(c - '0');
    }
    i += n;
    return true;
}

}  // namespace

int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
    y -= m <= 2;
    const int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

micros from_civil(int64_t year, unsigned month, unsigned day, int64_t us_of_day) {
    return days_from_civil(year, month, day) * us_per_day + us_of_day;
}

civil_time to_civil(micros t) {
    civil_time c;
    const int64_t days = floor_div(t, us_per_day);
    int64_t rest = t - days * us_per_day;
    civil_from_days(days, c.year, c.month, c.day);
    c.micro = rest % us_per_second;
    rest /= us_per_second;
    c.second = static_cast<unsigned>(rest % 60);
    c.minute = static_cast<unsigned>(rest / 60 % 60);
    c.hour = static_cast<unsigned>(rest / 3600);
    c.weekday = static_cast<unsigned>(((days % 7) + 11) % 7);  // 1970-01-01 was a Thursday
    c.yearday = static_cast<unsigned>(days - days_from_civil(c.year, 1, 1) + 1);
    return c;
}

std::string format_timestamp(micros us) {
    const civil_time c = to_civil(us);
    std::string out = fmt::format("{:04}-{:02}-{:02} {:02}:{:02}:{:02}", c.year, c.month, c.day,
                                  c.hour, c.minute, c.second);
    if (c.micro != 0) {
        std::string frac = fmt::format("{:06}", c.micro);
        while (frac.back() == '0') frac.pop_back();
        out += "." + frac;
    }
    return out + "+00:00";
}

std::optional<micros> parse_timestamp(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
    size_t i = 0;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    unsigned y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0;
    if (!digits(s, i, 4, y) || i >= s.size() || s[i++] != '-' || !digits(s, i, 2, mo) ||
        i >= s.size() || s[i++] != '-' || !digits(s, i, 2, d))
        return std::nullopt;
    if (mo < 1 || mo > 12 || d < 1 || d > days_in_month(y, mo)) return std::nullopt;
    int64_t us = 0;
    if (i < s.size() && (s[i] == ' ' || s[i] == 'T' || s[i] == 't') && i + 1 < s.size() &&
        std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
        ++i;
        if (!digits(s, i, 2, h) || i >= s.size() || s[i++] != ':' || !digits(s, i, 2, mi))
            return std::nullopt;
        if (i < s.size() && s[i] == ':') {
            ++i;
            if (!digits(s, i, 2, sec)) return std::nullopt;
            if (i < s.size() && s[i] == '.') {
                ++i;
                int64_t scale = 100'000;
                size_t n = 0;
                for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i, ++n)
                    if (scale > 0) {
                        us += (s[i] - '0') * scale;
                        scale /= 10;
                    }
                if (n == 0) return std::nullopt;
            }
        }
        if (h > 24 || mi > 59 || sec > 60) return std::nullopt;
    }
    us += (static_cast<int64_t>(h) * 3600 + mi * 60 + sec) * us_per_second;
    // The zone.
    while (i < s.size() && s[i] == ' ') ++i;
    std::string zone = to_upper(s.substr(i));
    int64_t offset = 0;
    if (!zone.empty() && zone != "Z" && zone != "UTC" && zone != "GMT") {
        if (zone[0] != '+' && zone[0] != '-') return std::nullopt;
        size_t k = 1;
        unsigned oh = 0, om = 0;
        if (!digits(zone, k, 2, oh)) return std::nullopt;
        if (k < zone.size() && zone[k] == ':') ++k;
        if (k < zone.size() && !digits(zone, k, 2, om)) return std::nullopt;
        if (k != zone.size() || oh > 15 || om > 59) return std::nullopt;
        offset = (static_cast<int64_t>(oh) * 3600 + om * 60) * us_per_second;
        if (zone[0] == '-') offset = -offset;
    }
    return from_civil(y, mo, d, us) - offset;
}

bool is_timestamp_text(std::string_view s) {
    // "YYYY-MM-DD HH:MM:SS", an optional fraction, then "+00" or "+00:00".
    if (s.size() < 22 || s[4] != '-' || s[7] != '-' || s[10] != ' ' || s[13] != ':' ||
        s[16] != ':')
        return false;
    std::string_view zone = s.substr(s.rfind('+') == std::string_view::npos ? 0 : s.rfind('+'));
    if (zone != "+00" && zone != "+00:00") return false;
    return parse_timestamp(s).has_value();
}

}  // namespace sluice::sql

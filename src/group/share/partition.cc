#include "group/share/partition.h"

#include <algorithm>
#include <charconv>
#include <cstdint>

namespace sluice::group::share {

using protocol::error_code;

void share_partition::release_one(in_flight_record& r, const partition_limits& lim) {
    // A record delivered delivery_count_limit times is not offered again (a poison
    // record stops there), as Kafka archives it.
    r.state = r.delivery_count >= lim.delivery_count_limit ? record_state::archived
                                                           : record_state::available;
    r.member.clear();
    r.lock_until_ms = 0;
}

void share_partition::advance_start() {
    while (_start < _end) {
        auto it = _records.find(_start);
        if (it != _records.end() && it->second.state != record_state::acknowledged &&
            it->second.state != record_state::archived)
            break;
        if (it != _records.end()) _records.erase(it);
        ++_start;
    }
}

bool share_partition::settle(int64_t now_ms, int64_t log_start, const partition_limits& lim) {
    bool changed = false;
    for (auto& [off, r] : _records)
        if (r.state == record_state::acquired && r.lock_until_ms <= now_ms) {
            release_one(r, lim);
            changed = true;
        }
    if (log_start > _start) {
        // Records deleted by retention or DeleteRecords are gone for the group as well.
        _records.erase(_records.begin(), _records.lower_bound(log_start));
        _start = log_start;
        _end = std::max(_end, log_start);
        changed = true;
    }
    const int64_t before = _start;
    advance_start();
    return changed || _start != before;
}

int64_t share_partition::fetch_position(int64_t high_watermark, const partition_limits& lim) const {
    for (const auto& [off, r] : _records)
        if (r.state == record_state::available) return off;
    if (_end < high_watermark && _end - _start < lim.max_in_flight) return _end;
    return -1;
}

std::vector<acquired_range> share_partition::acquire(const std::string& member, int64_t first,
                                                     int64_t last, int32_t max_records,
                                                     int64_t now_ms, const partition_limits& lim,
                                                     const std::vector<offset_range>& skip) {
    std::vector<acquired_range> out;
    int64_t budget = std::max(max_records, 1);
    bool archived = false;
    auto take = [&](int64_t off, in_flight_record& r) {
        if (std::any_of(skip.begin(), skip.end(),
                        [&](const offset_range& s) { return s.first <= off && off <= s.last; })) {
            r.state = record_state::archived;
            archived = true;
            return;
        }
        r.state = record_state::acquired;
        r.member = member;
        r.lock_until_ms = now_ms + lim.lock_ms;
        ++r.delivery_count;
        if (!out.empty() && out.back().last == off - 1 &&
            out.back().delivery_count == r.delivery_count)
            out.back().last = off;
        else
            out.push_back({off, off, r.delivery_count});
        --budget;
    };
    for (auto it = _records.lower_bound(std::max(first, _start));
         it != _records.end() && it->first <= last && budget > 0; ++it)
        if (it->second.state == record_state::available) take(it->first, it->second);
    // New records join the window while it has room.
    while (_end <= last && budget > 0 && _end - _start < lim.max_in_flight) {
        if (_end >= first) {
            take(_end, _records[_end]);
        } else {
            _records[_end];  // below what was read: stays available
        }
        ++_end;
    }
    if (archived) advance_start();
    return out;
}

error_code share_partition::acknowledge(const std::string& member, int64_t first, int64_t last,
                                        const std::vector<int8_t>& types, int64_t now_ms,
                                        const partition_limits& lim) {
    if (last < first || types.empty() ||
        (types.size() != 1 && static_cast<int64_t>(types.size()) != last - first + 1))
        return error_code::invalid_request;
    for (int8_t t : types)
        if (t < 0 || t > static_cast<int8_t>(ack_type::renew)) return error_code::invalid_request;
    for (int64_t off = first; off <= last; ++off) {
        auto it = _records.find(off);
        if (it == _records.end() || it->second.state != record_state::acquired ||
            it->second.member != member || it->second.lock_until_ms <= now_ms)
            return error_code::invalid_record_state;
    }
    for (int64_t off = first; off <= last; ++off) {
        auto& r = _records[off];
        auto t = static_cast<ack_type>(types.size() == 1 ? types[0] : types[off - first]);
        switch (t) {
            case ack_type::accept:
                r.state = record_state::acknowledged;
                break;
            case ack_type::release:
                release_one(r, lim);
                break;
            case ack_type::gap:
            case ack_type::reject:
                r.state = record_state::archived;
                break;
            case ack_type::renew:
                r.lock_until_ms = now_ms + lim.lock_ms;
                continue;
        }
        if (r.state != record_state::acquired) {
            r.member.clear();
            r.lock_until_ms = 0;
        }
    }
    advance_start();
    return error_code::none;
}

bool share_partition::release_member(const std::string& member, int64_t now_ms,
                                     const partition_limits& lim) {
    bool changed = false;
    for (auto& [off, r] : _records)
        if (r.state == record_state::acquired && r.member == member) {
            // A member that leaves gives its records back without using up a delivery.
            if (r.lock_until_ms > now_ms) --r.delivery_count;
            release_one(r, lim);
            changed = true;
        }
    return changed;
}

size_t share_partition::acquired_count() const {
    return static_cast<size_t>(std::count_if(_records.begin(), _records.end(), [](const auto& e) {
        return e.second.state == record_state::acquired;
    }));
}

}  // namespace sluice::group::share

namespace sluice::group::share {

namespace {
char state_letter(record_state s) {
    switch (s) {
        case record_state::acknowledged:
            return 'k';
        case record_state::archived:
            return 'x';
        default:
            return 'a';
    }
}
}  // namespace

std::string format_records(const std::map<int64_t, in_flight_record>& records) {
    std::string out;
    auto it = records.begin();
    while (it != records.end()) {
        const char s = state_letter(it->second.state);
        const int16_t count = it->second.delivery_count;
        const int64_t first = it->first;
        int64_t last = first;
        for (++it; it != records.end() && it->first == last + 1 &&
                   state_letter(it->second.state) == s && it->second.delivery_count == count;
             ++it)
            last = it->first;
        if (!out.empty()) out += ';';
        out += std::to_string(first) + '-' + std::to_string(last) + ':' + s + ':' +
               std::to_string(count);
    }
    return out;
}

std::optional<std::map<int64_t, in_flight_record>> parse_records(std::string_view s) {
    std::map<int64_t, in_flight_record> out;
    while (!s.empty()) {
        auto semi = s.find(';');
        std::string run(s.substr(0, semi));
        s = semi == std::string_view::npos ? std::string_view{} : s.substr(semi + 1);
        // FIRST-LAST:STATE:COUNT, every field whole.
        int64_t first = 0, last = 0;
        int count = 0;
        const char* p = run.data();
        const char* end = p + run.size();
        auto num = [&](auto& v) {
            auto [q, ec] = std::from_chars(p, end, v);
            if (ec != std::errc{} || q == p) return false;
            p = q;
            return true;
        };
        auto sep = [&](char c) { return p < end && *p++ == c; };
        char state = 0;
        if (!num(first) || !sep('-') || !num(last) || !sep(':') || p == end) return std::nullopt;
        state = *p++;
        if (!sep(':') || !num(count) || p != end || first < 0 || last < first || count < 0 ||
            count > INT16_MAX || (state != 'a' && state != 'k' && state != 'x'))
            return std::nullopt;
        const record_state st = state == 'k'   ? record_state::acknowledged
                                : state == 'x' ? record_state::archived
                                               : record_state::available;
        for (int64_t o = first; o <= last; ++o)
            out[o] = in_flight_record{st, static_cast<int16_t>(count), {}, 0};
    }
    return out;
}

std::optional<share_partition> parse_window(int64_t start, int64_t end, std::string_view records) {
    auto r = parse_records(records);
    if (!r || start > end ||
        (!r->empty() && (r->begin()->first < start || r->rbegin()->first >= end)))
        return std::nullopt;
    for (int64_t o = start; o < end; ++o) (*r)[o];
    return share_partition(start, end, std::move(*r));
}

}  // namespace sluice::group::share

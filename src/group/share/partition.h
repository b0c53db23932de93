#pragma once

// One share-partition's state (KIP-932): the in-flight window of a topic partition as a
// share group consumes it. Offsets below `start` are done (acknowledged or archived);
// offsets from `end` on were never handed out. In between, each offset is available (to
// be acquired, again after a release or an expired lock), acquired by one member until
// its lock expires, acknowledged, or archived (rejected, a gap, or delivered
// delivery_count_limit times). Invariant: start <= end, and start is never an offset
// that is still available or acquired.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/error_code.h"

namespace sluice::group::share {

enum class record_state : int8_t { available = 0, acquired = 1, acknowledged = 2, archived = 4 };

// Kafka's AcknowledgeType values on the wire.
enum class ack_type : int8_t { gap = 0, accept = 1, release = 2, reject = 3, renew = 4 };

struct in_flight_record {
    record_state state = record_state::available;
    int16_t delivery_count = 0;
    std::string member;         // while acquired
    int64_t lock_until_ms = 0;  // steady ms, while acquired
    bool operator==(const in_flight_record& o) const {
        return state == o.state && delivery_count == o.delivery_count;
    }
};

struct acquired_range {
    int64_t first = 0;
    int64_t last = 0;  // inclusive
    int16_t delivery_count = 0;
};

// Inclusive offsets [first, last].
struct offset_range {
    int64_t first = 0;
    int64_t last = 0;
};

struct partition_limits {
    int32_t lock_ms = 30000;
    int16_t delivery_count_limit = 5;
    int32_t max_in_flight = 2000;  // group.share.partition.max.record.locks
};

class share_partition {
  public:
    share_partition() = default;
    share_partition(int64_t start, int64_t end, std::map<int64_t, in_flight_record> records)
        : _start(start), _end(end), _records(std::move(records)) {}

    int64_t start() const { return _start; }
    int64_t end() const { return _end; }
    const std::map<int64_t, in_flight_record>& records() const { return _records; }

    // Expired locks become available again (or archived at the delivery limit); then
    // the window moves past a log start that overtook it. Returns whether anything
    // durable changed.
    bool settle(int64_t now_ms, int64_t log_start, const partition_limits& lim);
    // Where the next fetch reads: the first available offset in the window, else `end`
    // while the window has room and end < high_watermark; -1 when nothing can be acquired.
    int64_t fetch_position(int64_t high_watermark, const partition_limits& lim) const;
    // Acquires for `member` every available offset in [first, last] (the batches the
    // fetch read; offsets past `end` join the window), at most max_records and no more
    // than the window holds. Returns the ranges acquired, in offset order. Offsets in
    // `skip` (read_committed: control records and aborted transactions' records) are
    // archived instead, never handed out.
    std::vector<acquired_range> acquire(const std::string& member, int64_t first, int64_t last,
                                        int32_t max_records, int64_t now_ms,
                                        const partition_limits& lim,
                                        const std::vector<offset_range>& skip = {});
    // One acknowledgement batch of `member`: INVALID_RECORD_STATE when an offset is not
    // acquired by it (or its lock expired), INVALID_REQUEST for an unknown type. Applies
    // nothing when it fails.
    protocol::error_code acknowledge(const std::string& member, int64_t first, int64_t last,
                                     const std::vector<int8_t>& types, int64_t now_ms,
                                     const partition_limits& lim);
    // Releases what the member holds (it left or was removed). A record whose lock had
    // not expired yet was not a failed delivery: its count goes back down. Whether
    // anything changed.
    bool release_member(const std::string& member, int64_t now_ms, const partition_limits& lim);
    size_t acquired_count() const;

  private:
    void release_one(in_flight_record& r, const partition_limits& lim);
    void advance_start();

    int64_t _start = 0;
    int64_t _end = 0;
    // Invariant: one entry for every offset in [_start, _end).
    std::map<int64_t, in_flight_record> _records;
};

}  // namespace sluice::group::share

namespace sluice::group::share {

// A window's records as the catalog stores them (docs/formats/catalog.md, version 10):
// runs of consecutive offsets with one state and delivery count, "first-last:S:count"
// joined with ';', S being 'a' (available; an acquired record is stored as available,
// locks are not kept), 'k' (acknowledged) or 'x' (archived). "" for an empty window.
std::string format_records(const std::map<int64_t, in_flight_record>& records);
// nullopt when s is not in that form.
std::optional<std::map<int64_t, in_flight_record>> parse_records(std::string_view s);
// A stored window [start, end) with its records (format_records; offsets with no run are
// available); nullopt when they do not parse or lie outside the window.
std::optional<share_partition> parse_window(int64_t start, int64_t end, std::string_view records);

}  // namespace sluice::group::share

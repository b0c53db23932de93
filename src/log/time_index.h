#pragma once

// Sparse time index of a segment. Entry (t, o) states: every record of this segment
// with an offset below o has a timestamp <= t; o is a batch boundary. Entries are
// written at the same batches as the offset index, plus a final entry (segment max
// timestamp, segment end offset) when the segment is sealed or the broker shuts down.
// Both columns never decrease. File format: docs/formats/time-index.md.

#include <cstdint>
#include <limits>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace sluice::log {

// "No timestamp seen yet" for running maxima; below any timestamp a record can carry.
constexpr timestamp_ms no_timestamp = std::numeric_limits<timestamp_ms>::min();

class time_index {
  public:
    struct entry {
        timestamp_ms timestamp = 0;
        offset_t offset = 0;
        bool operator==(const entry&) const = default;
    };
    static constexpr size_t entry_size = 12;  // i64 timestamp + u32 relative offset

    explicit time_index(offset_t base = 0) : _base(base) {}

    // Adds (t, o); an entry for the same o as the last one only raises its timestamp.
    // Invariant kept by the caller: t and o never decrease.
    void append(timestamp_ms t, offset_t o);
    void clear() { _entries.clear(); }

    // Where a search for the first record with timestamp >= ts may start, considering
    // only entries with offset <= limit: the offset of the last such entry with t < ts,
    // or the segment base. Records below the returned offset all have timestamps < ts.
    offset_t start_for(timestamp_ms ts, offset_t limit) const;
    // Index of the last entry with offset <= limit, or -1.
    ptrdiff_t last_at_or_below(offset_t limit) const;

    bool empty() const { return _entries.empty(); }
    size_t size() const { return _entries.size(); }
    entry at(size_t i) const { return {_entries[i].timestamp, _base + _entries[i].offset}; }
    entry last() const { return at(_entries.size() - 1); }
    size_t memory_bytes() const { return _entries.capacity() * sizeof(rel); }
    bool operator==(const time_index& o) const;

    bytes encode(timestamp_ms created_ms) const;
    // Checks the header, the size, ordering and that offsets lie in [base, end_offset].
    static result<time_index> decode(bytes_view file, offset_t base, offset_t end_offset);

  private:
    struct rel {
        timestamp_ms timestamp;
        uint32_t offset;
    };
    offset_t _base;
    std::vector<rel> _entries;
};

}  // namespace sluice::log

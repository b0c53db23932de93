#pragma once

// Broker append times of a segment's records: the time the broker appended each batch,
// which Kafka batches do not carry for CreateTime topics (and must not: they are sent
// as stored). Entry (first, end, t) states: the records with offsets in [first, end)
// were appended at t, ms since the epoch on the broker's clock, clamped so that it never
// decreases within a partition. One entry per millisecond at most: an append in the
// same millisecond as the last entry extends it. File format and recovery:
// docs/formats/append-time-index.md.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "log/file_header.h"
#include "log/file_io.h"
#include "protocol/record_batch.h"

namespace sluice::log {

class append_time_index {
  public:
    struct entry {
        offset_t first = 0;
        offset_t end = 0;
        timestamp_ms time = 0;
        bool operator==(const entry&) const = default;
    };
    // u32 relative first offset + u32 relative end offset + i64 time. 16 bytes, so that
    // entries after the 32-byte header never straddle a sector or page: an entry
    // rewritten in place is either old or new after a crash, never half of each.
    static constexpr size_t entry_size = 16;

    explicit append_time_index(offset_t base = 0) : _base(base) {}

    // Records [first, end) were appended at t: extends the last entry when t is its time,
    // else adds an entry. Returns the index of the entry that changed. Invariant kept by
    // the caller: first >= the last entry's end, t >= its time, end - base fits a u32.
    size_t add(offset_t first, offset_t end, timestamp_ms t);
    // Forgets every offset at or past `end` (entries starting there, the tail of one
    // spanning it). Returns the number of leading entries left unchanged.
    size_t trim(offset_t end);

    bool empty() const { return _entries.empty(); }
    size_t size() const { return _entries.size(); }
    entry at(size_t i) const {
        const rel& e = _entries[i];
        return {_base + e.first, _base + e.end, e.time};
    }
    entry last() const { return at(_entries.size() - 1); }
    offset_t base_offset() const { return _base; }
    // The offset after the last entry (the base when there is none).
    offset_t covered_end() const { return empty() ? _base : _base + _entries.back().end; }
    // Index of the last entry starting at or below o, or -1.
    ptrdiff_t last_starting_at_or_below(offset_t o) const;
    // Index of the first entry with time >= ts, or size().
    size_t first_at_or_after(timestamp_ms ts) const;
    size_t memory_bytes() const { return _entries.capacity() * sizeof(rel); }
    bool operator==(const append_time_index& o) const;

    // Where entry i starts in the file.
    static int64_t position(size_t i) {
        return static_cast<int64_t>(file_header_size + i * entry_size);
    }
    static void encode_header(uint8_t* out, offset_t base, timestamp_ms created_ms);
    // Entries [from, to) as stored, (to - from) * entry_size bytes.
    void encode_entries(size_t from, size_t to, uint8_t* out) const;
    bytes encode(timestamp_ms created_ms) const;
    // A whole file. A bad header (magic, CRC, version, base offset) is an error (corrupt,
    // unsupported); of the body, the longest valid prefix of entries is kept, and
    // *dropped says why the rest was not ("" when nothing was dropped).
    static result<append_time_index> decode(bytes_view file, offset_t base, std::string* dropped);

  private:
    struct rel {
        uint32_t first;
        uint32_t end;
        timestamp_ms time;
    };
    offset_t _base;
    std::vector<rel> _entries;
};

// An append-time file as read from disk.
struct append_time_file {
    append_time_index index;
    int64_t file_bytes = -1;  // -1: missing, or a header that cannot be used
    std::string problem;      // why entries were dropped or the file ignored; "" if none
};
// Reads and decodes the file; a missing or damaged one is reported in `problem`, not as
// an error. Errors: io_error.
result<append_time_file> read_append_time_file(const fs::path& path, offset_t base);

// What a sealed segment's file says without loading it.
struct append_time_bounds {
    timestamp_ms first_time = 0;
    timestamp_ms last_time = 0;
    offset_t end = 0;  // the last entry's end
};
// Reads only the header and the first and last entries (nullopt: no entries). Errors:
// not_found, corrupt (header, size), unsupported, io_error.
result<std::optional<append_time_bounds>> read_append_time_bounds(const fs::path& path,
                                                                  offset_t base);

// The estimate for a batch no entry covers (docs/formats/append-time-index.md,
// "Estimates"): its max_timestamp (on LogAppendTime batches, the append time itself)
// clamped into [lo, hi]; no_timestamp leaves a side open, and lo wins over hi.
timestamp_ms estimate_append_time(const protocol::batch_header& h, timestamp_ms lo,
                                  timestamp_ms hi);

}  // namespace sluice::log

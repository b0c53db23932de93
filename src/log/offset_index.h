#pragma once

// Sparse map from a batch's base offset to its byte position in the segment's data
// file, one entry per index_interval_bytes of data. File format:
// docs/formats/offset-index.md.

#include <cstdint>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace sluice::log {

class offset_index {
  public:
    struct entry {
        offset_t offset = 0;
        int64_t position = 0;
        bool operator==(const entry&) const = default;
    };
    static constexpr size_t entry_size = 8;  // u32 relative offset + u32 position

    explicit offset_index(offset_t base = 0) : _base(base) {}

    // The last entry whose offset is <= target; the segment start (base offset, first
    // byte after the file header) when there is none. The batch holding `target` starts
    // at or after the returned position.
    entry lookup(offset_t target) const;
    // Invariant kept by the caller: offsets and positions strictly increase.
    void append(offset_t offset, int64_t position);
    void clear() { _entries.clear(); }

    bool empty() const { return _entries.empty(); }
    size_t size() const { return _entries.size(); }
    entry at(size_t i) const;
    entry last() const { return at(_entries.size() - 1); }
    offset_t base_offset() const { return _base; }
    size_t memory_bytes() const { return _entries.capacity() * sizeof(rel); }
    bool operator==(const offset_index& o) const;

    bytes encode(timestamp_ms created_ms) const;
    // Checks the header, the size, ordering, and that every position lies inside a data
    // file of `data_size` bytes. Errors: corrupt, unsupported.
    static result<offset_index> decode(bytes_view file, offset_t base, int64_t data_size);

  private:
    struct rel {
        uint32_t offset;
        uint32_t position;
    };
    offset_t _base;
    std::vector<rel> _entries;
};

}  // namespace sluice::log

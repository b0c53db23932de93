#pragma once

// The 32-byte header that starts every file of a segment (data, offset index, time
// index, append-time index). Grammar, magic numbers and versioning: docs/formats/segment.md.

#include <cstddef>
#include <cstdint>

#include <filesystem>
#include <memory>

#include "common/result.h"
#include "common/types.h"

namespace sluice::log {

// Four ASCII bytes each, read big-endian, so `xxd` shows the kind at once.
enum class file_kind : uint32_t {
    data = 0x534c5347,          // "SLSG": Sluice log segment
    offset_index = 0x534c4f58,  // "SLOX": offset index
    time_index = 0x534c5458,    // "SLTX": time index
    append_time = 0x534c4154,   // "SLAT": append-time index
    journal = 0x534c4a4e,       // "SLJN": sync journal (journal.md; base_offset = first sequence)
    producer_snapshot = 0x534c5053,  // "SLPS": producer state (producer-snapshot.md)
    // "SLOC": a range of an object in shared mode's disk cache (object-cache.md;
    // base_offset = the range's first byte in the object)
    object_cache_entry = 0x534c4f43,
};

constexpr size_t file_header_size = 32;
// Bumped on any incompatible change; readers refuse versions they do not know.
constexpr uint16_t current_format_version = 1;

struct file_header {
    file_kind kind = file_kind::data;
    uint16_t version = current_format_version;
    offset_t base_offset = 0;
    timestamp_ms created_ms = 0;  // broker time the segment was created (drives segment.ms)
};

void encode_file_header(uint8_t* out, const file_header& h);
// Accepts versions 1..max_version (files whose kind has later versions pass theirs).
// Errors: corrupt (short, bad magic, bad CRC, non-zero flags/reserved), unsupported (version).
result<file_header> decode_file_header(bytes_view in, file_kind expected,
                                       uint16_t max_version = current_format_version);

const char* file_kind_name(file_kind k);

class file;

// An index file opened for a quick look (the last entries) without loading it: checks
// its header (kind, version, CRC) and base offset, and that its body is whole entries.
struct opened_entries {
    std::shared_ptr<file> f;
    int64_t size = 0;     // of the file
    int64_t entries = 0;  // whole entries after the header
};
result<opened_entries> open_entries(const std::filesystem::path& path, file_kind kind,
                                    int64_t base_offset, size_t entry_size);

}  // namespace sluice::log

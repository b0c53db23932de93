#pragma once

// One segment of a partition log: a data file of record batches named by its base
// offset, with a sparse offset index, a time index and an append-time index beside it.
// Formats: docs/formats/segment.md, offset-index.md, time-index.md, append-time-index.md.
//
// Not thread-safe: the owning partition_log serializes access.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "log/append_time_index.h"
#include "log/fd_cache.h"
#include "log/offset_index.h"
#include "log/time_index.h"

namespace sluice::log {

constexpr const char* data_ext = ".log";
constexpr const char* index_ext = ".index";
constexpr const char* time_index_ext = ".timeindex";
constexpr const char* append_time_ext = ".appendtime";
// Every file of a segment, data file first (the order deletion follows).
constexpr const char* segment_exts[] = {data_ext, index_ext, time_index_ext, append_time_ext};

// Segment files are named by base offset, zero-padded to 20 digits so that names sort
// as numbers do (int64 max has 19 digits).
std::string segment_file_name(offset_t base, const char* ext);
// The base offset in a segment file name with extension `ext`, or -1 for other names.
offset_t parse_segment_file_name(std::string_view name, std::string_view ext);

struct segment_file_info {
    offset_t base_offset = 0;
    int64_t size = 0;
};
// The data files of a partition directory, by base offset. Other files are ignored.
result<std::vector<segment_file_info>> list_segments(const fs::path& dir);

// Deletes a segment's files: the data file first, then the offset, time and append-time
// indexes, so that a crash in between leaves at worst index files without data, which
// nothing reads
// (docs/formats/data-dir.md, "Deleting segments"). Files already gone are fine.
result<void> remove_segment_files(const fs::path& dir, offset_t base);

// The last entry of a time index file (nullopt when it has none), reading only its
// header and that entry. Errors: not_found, corrupt (header, base offset, size), io_error.
result<std::optional<time_index::entry>> read_last_time_entry(const fs::path& path, offset_t base);

class segment {
  public:
    segment(fs::path dir, offset_t base, int64_t size, bool writable, fd_cache& cache);
    ~segment();
    segment(const segment&) = delete;
    segment& operator=(const segment&) = delete;

    // Creates the data file with its header (O_EXCL), and the append-time file with its
    // header; indexes start empty in memory.
    static result<std::unique_ptr<segment>> create(const fs::path& dir, offset_t base,
                                                   timestamp_ms now, fd_cache& cache);

    offset_t base_offset() const { return _base; }
    offset_t end_offset() const { return _end_offset; }  // offset after the last batch
    void set_end_offset(offset_t o) { _end_offset = o; }
    int64_t size() const { return _size; }  // bytes, header included
    bool has_data() const { return _end_offset > _base; }
    timestamp_ms created_ms() const { return _created_ms; }
    // Largest batch timestamp seen (active segment, or after an index load and scan).
    timestamp_ms max_timestamp() const { return _max_ts; }
    // The largest batch timestamp without loading the indexes: what the segment already
    // knows, else the final entry of a sealed segment's time index file (then cached).
    // nullopt when neither tells (file missing, damaged or without its final entry):
    // load the indexes instead. Errors: io_error.
    result<std::optional<timestamp_ms>> known_max_timestamp();
    bool writable() const { return _writable; }

    const fs::path& dir() const { return _dir; }
    fs::path data_path() const;
    fs::path index_path() const;
    fs::path time_index_path() const;
    fs::path append_time_path() const;

    // The open data file, through the descriptor cache. The header is checked the first
    // time (errc::corrupt / unsupported) unless check_header is false (repair).
    result<std::shared_ptr<file>> data(bool check_header = true);
    // Rewrites a missing or torn header of an empty segment.
    result<void> rewrite_header(timestamp_ms now);

    // --- indexes (loaded on demand) ---
    bool indexes_loaded() const { return _oidx != nullptr; }
    // Loads both index files and checks them against the data (size, order, the last
    // offset entry names a real batch). false with *why set when missing or disagreeing.
    result<bool> load_indexes(std::string* why);
    void reset_indexes();  // empty indexes, ready for a rebuild by note_batch
    void unload_indexes();
    const offset_index& offsets() const { return *_oidx; }
    const time_index& times() const { return *_tidx; }
    // Index bookkeeping for the batch at `position`; the same rule serves appends and
    // rebuilds, so a rebuilt index equals the one written live.
    void note_batch(offset_t base, int64_t position, timestamp_ms batch_max_ts,
                    int32_t interval_bytes);
    // Adds (max timestamp, end offset) so the time index covers the whole segment.
    void add_final_time_entry();
    result<void> save_indexes();
    bool indexes_dirty() const { return _indexes_dirty; }
    void set_indexes_dirty(bool d) { _indexes_dirty = d; }

    // --- append times (docs/formats/append-time-index.md) ---
    // Loaded for the active segment always (create, recovery), for sealed ones on demand.
    bool append_times_loaded() const { return _atidx != nullptr; }
    const append_time_index& append_times() const { return *_atidx; }
    // Takes `idx` as the segment's entries. The file holds file_bytes bytes (-1: missing
    // or unusable; nullopt: as tracked so far) of which the first `same_on_file` entries
    // equal idx's; save_append_times writes the rest.
    void adopt_append_times(append_time_index idx, size_t same_on_file,
                            std::optional<int64_t> file_bytes = std::nullopt);
    // Active segment (entries loaded): [first, end) was appended at t (never below the
    // last entry's time). A new entry is written at once, with the previous one's final
    // end (one pwrite, no fsync), so a process crash loses no entry; an append in the
    // same millisecond only grows the last entry in memory. On failure the entries stay
    // in memory and are written with the next one.
    result<void> note_append_time(offset_t first, offset_t end, timestamp_ms t);
    // Writes what the file lacks (header, entries) and cuts what it has beyond them.
    result<void> save_append_times();
    result<void> sync_append_times();
    // Keeps only the bounds (append_time_bounds) of a sealed segment's entries.
    void unload_append_times();
    // First and last times of a sealed segment's entries, when known without reading:
    // loaded, or cached by unload_append_times / set_append_time_bounds.
    // nullopt inside: the segment has no entry.
    std::optional<std::optional<append_time_bounds>> known_append_time_bounds() const;
    void set_append_time_bounds(std::optional<append_time_bounds> b) {
        _at_bounds = b;
        _at_bounds_known = true;
    }
    bool append_time_warned() const { return _at_warned; }
    void set_append_time_warned() { _at_warned = true; }

    // --- data ---
    // Writes `data` (whole, offset-stamped batches) at the end; it ends at last_offset.
    result<void> append(bytes_view data, offset_t last_offset);
    result<void> truncate(int64_t size, offset_t end_offset);
    // Makes the segment immutable: final time entry, index files written, append-time
    // file and data fsynced.
    result<void> seal();
    // Position of the batch holding `offset` (needs the indexes). Reads from the nearest
    // index entry onward.
    result<int64_t> find_position(offset_t offset);

    size_t memory_bytes() const;

  private:
    fs::path _dir;
    offset_t _base;
    offset_t _end_offset;
    int64_t _size;
    timestamp_ms _created_ms = 0;
    timestamp_ms _max_ts = no_timestamp;
    int64_t _last_indexed_pos;
    uint64_t _id;
    uint64_t _at_id;  // the append-time file in the descriptor cache
    fd_cache& _cache;
    bool _writable;
    bool _header_checked = false;
    bool _indexes_dirty = false;
    std::unique_ptr<offset_index> _oidx;
    std::unique_ptr<time_index> _tidx;
    std::unique_ptr<append_time_index> _atidx;
    size_t _at_same = 0;          // leading entries the file holds as they are in memory
    int64_t _at_file_bytes = -1;  // size of the file (-1: missing, or its header unusable)
    bool _at_warned = false;      // a failed write was logged
    bool _at_bounds_known = false;
    std::optional<append_time_bounds> _at_bounds;  // with _at_bounds_known
};

}  // namespace sluice::log

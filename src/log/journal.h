#pragma once

// The sync journal: one sequence of append-only files under <data_dir>/logs/.journal,
// shared by every partition. A small append is written to its segment (without fsync)
// and here, so that a flush pass over many partitions that each took a little data costs
// one fdatasync of this file instead of one per partition: on a disk with a volatile
// write cache each fdatasync is a cache flush, and the device runs flushes one at a time.
// A file that is full is sealed; once every partition with entries in it has been
// fsynced (the manager's checkpoint), the file is deleted. After a crash, the manager
// replays the entries its segments lack. Format: docs/formats/journal.md.
//
// Threading: append() from appending threads (under their partition's lock), sync() from
// one thread at a time (the flusher); one mutex guards the writer, and no write or fsync
// runs under it.

#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "log/file_io.h"
#include "log/log_types.h"

namespace sluice::log {

// One decoded entry; `topic` and `data` point into the scanned file's buffer.
struct journal_entry {
    uint64_t seq = 0;
    topic_id id{};
    std::string_view topic;
    int32_t partition = 0;
    offset_t base_offset = 0;
    timestamp_ms append_time = 0;
    bytes_view data;  // whole record batches, as written to the segment
};

class journal {
  public:
    struct options {
        fs::path dir;                  // <data_dir>/logs/.journal
        int64_t file_bytes = 8 << 20;  // a file is sealed once the next entry would pass this
    };
    // A sealed file that is wholly durable, with the partitions that have entries in it.
    struct sealed_file {
        fs::path path;
        std::vector<topic_partition> partitions;
    };

    // No I/O; the first append creates the directory and a file. `next_seq` continues the
    // sequence of files left by an earlier run (scan's last_seq + 1).
    journal(options opts, uint64_t next_seq);
    journal(const journal&) = delete;
    journal& operator=(const journal&) = delete;
    ~journal();

    // Adds one entry to the active file's buffer; sync() writes it. After any failed
    // write or sync the journal refuses further entries (the caller then syncs the
    // partition itself). Entries not yet synced are lost with the object, as unsynced
    // data is in a crash.
    // Errors: io_error, invalid_argument (topic name over 65,535 bytes).
    result<void> append(const topic_id& id, const std::string& topic, int32_t partition,
                        offset_t base_offset, timestamp_ms append_time, bytes_view data);

    // Makes every entry appended before the call durable (one pwrite of the buffered
    // entries and an fdatasync per file written since the last sync, then of the
    // directory when a file was created). Returns the
    // sealed files that this made wholly durable, oldest first. Errors: io_error.
    result<std::vector<sealed_file>> sync();

    // A sealed file whose partitions have all been fsynced since its last entry: it is
    // renamed to a free file that start_file overwrites later (a file of unchanged size
    // needs no inode write per fdatasync, and unlinking 8 MiB costs milliseconds), or
    // deleted when enough are free. Errors are logged: they cost only disk space.
    void recycle(const fs::path& sealed);

    uint64_t next_seq() const;

    // What scan() found.
    struct scan_result {
        size_t files = 0;
        size_t entries = 0;
        uint64_t last_seq = 0;  // of the last good entry; 0 when none
        bool found_any = false;
        std::string stop;  // why the scan ended before the end of the last file; empty if not
    };
    // Reads the files under `dir` in sequence order and calls fn for each entry, stopping
    // at the first entry that is torn, fails its CRC, or does not carry the next sequence
    // number: nothing after it was ever acknowledged. fn returning false stops the scan.
    // A missing directory is an empty journal. Errors: io_error, unsupported (a file of
    // another format version).
    static result<scan_result> scan(const fs::path& dir,
                                    const std::function<bool(const journal_entry&)>& fn);
    // Deletes every journal file (free ones too) under `dir` and makes that durable.
    // Errors: io_error.
    static result<void> remove_all(const fs::path& dir);
    // The files under `dir`, in sequence order.
    static result<std::vector<fs::path>> list(const fs::path& dir);

  private:
    struct open_file_state {
        std::shared_ptr<file> f;
        fs::path path;
        int64_t size = 0;     // the file's end, buffered entries included
        int64_t written = 0;  // where `pending` goes in the file
        bytes pending;        // entries appended since the last sync
        std::set<topic_partition> partitions;
    };
    result<void> start_file(timestamp_ms now);  // _mu held
    void set_broken(const error& e);            // _mu held

    options _opts;
    mutable std::mutex _mu;
    uint64_t _next_seq;
    std::unique_ptr<open_file_state> _active;
    // Sealed, written, not yet covered by a sync (oldest first).
    std::vector<std::unique_ptr<open_file_state>> _sealed;
    bool _dir_created = false;   // the directory exists (created by this object or found)
    bool _dir_dirty = false;     // a file was created since the last sync
    bool _active_dirty = false;  // the active file has writes since the last sync
    std::optional<error> _broken;
    std::vector<fs::path> _free;  // recycled files, reused by start_file
    bytes _spare;                 // the active file's next buffer, swapped in by sync()
};

}  // namespace sluice::log

#pragma once

// The files compaction keeps in a partition directory (docs/formats/cleaner.md):
//   cleaner-checkpoint  the first dirty offset: everything below it was cleaned by an
//                       earlier pass (versioned text with a CRC, replaced atomically)
//   cleaning/           the rewritten segments of a pass in progress (data + indexes)
//   cleaner-swap        commit marker: once it exists, every file in cleaning/ is
//                       complete and durable and replaces its namesake, and each
//                       cleaning/<base>.merged names a segment to delete
// finish_clean_swap() runs at every load and finishes (marker present) or rolls back
// (marker absent) an interrupted pass.

#include "common/result.h"
#include "common/types.h"
#include "log/file_io.h"
#include "log/recovery.h"

namespace sluice::log {

constexpr const char* clean_checkpoint_name = "cleaner-checkpoint";
constexpr const char* cleaning_dir_name = "cleaning";
constexpr const char* clean_swap_marker_name = "cleaner-swap";
// cleaning/<base>.merged (empty): the segment at <base> was merged into the rewritten
// one before it, and goes at the swap (docs/formats/segment.md, "Compaction swap").
constexpr const char* merged_ext = ".merged";

bytes encode_clean_checkpoint(offset_t offset);
// Errors: corrupt (framing, digits, CRC), unsupported (another version).
result<offset_t> decode_clean_checkpoint(bytes_view text);
// Atomic and durable: temporary file, fsync, rename, directory fsync.
result<void> write_clean_checkpoint(const fs::path& dir, offset_t offset);
// -1 when there is none; a damaged file is reported as -1 as well (the next pass then
// treats the whole log as dirty, which is only slower). Errors: io_error.
result<offset_t> read_clean_checkpoint(const fs::path& dir);

// Swap step 2, the commit: the marker, holding its format's text line (version 2: with
// .merged files; version 1 wrote it empty), fsynced with the partition directory.
result<void> write_clean_swap_marker(const fs::path& dir);
// Swap step 3 (docs/formats/segment.md, "Compaction swap"): moves every segment file of
// cleaning/ over its namesake, fsyncs the directory, deletes the segments named by
// .merged files, removes the marker.
result<void> roll_clean_swap_forward(const fs::path& dir);
// At load: with the marker, rolls the swap forward; without it, removes cleaning/ (an
// unfinished pass, whose originals are intact). Notes what it did in `sum`.
result<void> finish_clean_swap(const fs::path& dir, repair_summary& sum);

}  // namespace sluice::log

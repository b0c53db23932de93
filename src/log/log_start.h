#pragma once

// The durable log start offset of a partition, in `<partition dir>/log-start-offset`,
// written when DeleteRecords or retention advances the start. The log then starts at
// max(first segment's base offset, the file's offset). Format:
// docs/formats/log-start-offset.md.

#include "common/result.h"
#include "common/types.h"
#include "log/file_io.h"

namespace sluice::log {

constexpr const char* log_start_file_name = "log-start-offset";
// Where a damaged file is moved, so that it is reported once and kept for inspection.
constexpr const char* log_start_damaged_name = "log-start-offset.damaged";

bytes encode_log_start(offset_t offset);
// Errors: corrupt (framing, digits, CRC, truncation), unsupported (another version).
result<offset_t> decode_log_start(bytes_view text);

// Replaces the file atomically and durably: a temporary file is written and fsynced,
// renamed over the old one, and the directory fsynced.
result<void> write_log_start(const fs::path& dir, offset_t offset);
// Errors: not_found (no file), corrupt / unsupported (naming the file), io_error.
result<offset_t> read_log_start(const fs::path& dir);

}  // namespace sluice::log

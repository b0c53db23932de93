#pragma once

// A small versioned text file holding one offset and a CRC, replaced atomically: the
// shape of both `log-start-offset` and `cleaner-checkpoint`
// (docs/formats/log-start-offset.md, docs/formats/cleaner-checkpoint.md):
//
//   "sluice <kind> v1\n" <decimal offset> "\n" <8 lowercase hex: CRC-32C of the above> "\n"

#include <string_view>

#include "common/result.h"
#include "common/types.h"
#include "log/file_io.h"

namespace sluice::log {

bytes encode_offset_file(std::string_view kind, offset_t offset);
// Errors: corrupt (framing, digits, CRC, truncation), unsupported (another version).
result<offset_t> decode_offset_file(std::string_view kind, bytes_view text);
// Replaces <dir>/<name> atomically and durably: a temporary file is written and fsynced,
// renamed over the old one (a crash leaves the old value or the new, never a mix), and
// the directory fsynced so the new name is durable.
result<void> write_offset_file(const fs::path& dir, std::string_view name, std::string_view kind,
                               offset_t offset);

}  // namespace sluice::log

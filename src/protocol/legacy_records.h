#pragma once

// Message formats v0 and v1 (Kafka before 0.11), which Produce v0-v2 may carry and
// Fetch v0-v3 returns. The log stores only v2 batches: a v0/v1 message set is
// up-converted on append and the batches are down-converted when an old fetch reads
// them, as Kafka's LogValidator and its fetch path do. A message (big-endian):
//   offset i64 | message_size i32 (bytes after this field) | crc u32 (CRC-32 of the
//   bytes after it) | magic i8 | attributes i8 (bits 0-2 codec, bit 3 LogAppendTime,
//   v1) | timestamp i64 (v1 only) | key bytes (i32 length, -1 null) | value bytes
// A compressed message's value is a whole message set, compressed with its codec.

#include <cstdint>
#include <optional>

#include "common/result.h"
#include "common/types.h"

namespace sluice::protocol {

// The magic byte of the first message or batch of `payload` (at byte 16 in all three
// formats); nullopt when the payload is shorter than that.
std::optional<int8_t> first_magic(bytes_view payload);

// A message set of magic 0/1 as v2 batches: each compressed wrapper message becomes one
// batch of its inner messages compressed with the same codec, each run of uncompressed
// messages one uncompressed batch. Offset deltas count from 0 (the append assigns the
// base offset), a v0 message's timestamp is -1 (no timestamp), producer fields are -1.
// Errors: corrupt (framing, CRC, a magic other than 0/1, nested compression),
// too_large (a wrapper decompresses to more than max_decompressed), unsupported (an
// unknown codec or zstd, which formats v0/v1 cannot carry).
result<bytes> upconvert_message_set(bytes_view payload, size_t max_decompressed);

// The complete v2 batches of `batches` as uncompressed messages of `magic` (0 or 1):
// records below `from_offset` and control batches are left out, headers dropped (the
// old formats have none), a partial batch at the end is not returned. v1 messages
// keep the record's timestamp and the batch's timestamp type.
bytes downconvert_batches(bytes_view batches, int8_t magic, int64_t from_offset);

}  // namespace sluice::protocol

#pragma once

// The codecs of Kafka record batches (attributes bits 0-2), behind one interface: the
// broker decompresses a batch's records where it reads them (validation, SQL,
// expansions, compaction, timestamp lookups) and compresses only when a topic's
// compression.type asks for another codec than the producer's, or when compaction
// rewrites a batch. Formats, as Kafka's clients write them:
//   gzip:   RFC 1952 (a zlib stream is accepted too, as zlib's inflate does);
//   snappy: the raw snappy format (librdkafka, kafkajs, sarama) or the xerial framing
//           of the Java client: "\x82SNAPPY\0", version i32, compatible i32, then blocks
//           of (compressed length i32, raw snappy block);
//   lz4:    the LZ4 frame format (not the bare block format);
//   zstd:   zstd frames, with or without the content size.
// The compressor writes xerial snappy (what every client reads) and LZ4 frames of
// independent 64 KiB blocks (what Kafka's Java reader requires).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "common/types.h"

namespace sluice::protocol {

enum class compression : uint8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

// A batch may decompress to as much as an uncompressed batch may take
// (max.message.bytes), and never to less than this: 64 MiB is 64 default batches, far
// above what a producer's batch.size yields, and small enough that one bad batch cannot
// exhaust memory. More is a decompression bomb, refused (MESSAGE_TOO_LARGE).
constexpr size_t min_decompressed_limit = size_t{64} << 20;
// Readers of stored batches (validated at append under the limit above, which a later
// max.message.bytes change may have lowered): the most a batch's records may take,
// as Kafka's i32 batch length bounds them.
constexpr size_t stored_decompressed_limit = size_t{1} << 31;

inline size_t decompressed_limit(size_t max_message_bytes) {
    return std::max(min_decompressed_limit, max_message_bytes);
}

// "none", "gzip", "snappy", "lz4", "zstd"; "unknown" for other values.
std::string_view compression_name(compression c);
// The codec of a Kafka name ("uncompressed" is none); nullopt for others.
std::optional<compression> compression_from_name(std::string_view name);
// True for the codecs attributes bits 0-2 may hold (0-4).
bool is_known_compression(int value);

// Kafka's levels (KIP-390): compression.gzip.level 1..9 or -1 (zlib's default, 6),
// compression.lz4.level 1..17 (default 9), compression.zstd.level -131072..22
// (default 3). nullopt takes the codec's default.
struct level_range {
    int min;
    int max;
    int default_level;
};
// nullopt for the codecs without levels (none, snappy).
std::optional<level_range> compression_levels(compression c);

// Decompresses `in`. Errors: corrupt (the bytes do not decompress), too_large (they
// decompress to more than max_out bytes: the decompression stops there), unsupported.
result<bytes> decompress(compression c, bytes_view in, size_t max_out);

// Compresses `in` (none copies it). `level` must lie in compression_levels(c).
result<bytes> compress(compression c, bytes_view in, std::optional<int> level = std::nullopt);

}  // namespace sluice::protocol

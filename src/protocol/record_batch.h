#pragma once

// Kafka record batches, magic 2. Batches travel as raw bytes; this file reads and
// checks their header and records only where that is needed (produce validation,
// recovery, timestamp lookup). Layout (big-endian), offsets in bytes:
//   0 base_offset i64 | 8 batch_length i32 (bytes after this field) |
//   12 partition_leader_epoch i32 | 16 magic i8 | 17 crc u32 (CRC-32C of byte 21..end) |
//   21 attributes i16 | 23 last_offset_delta i32 | 27 base_timestamp i64 |
//   35 max_timestamp i64 | 43 producer_id i64 | 51 producer_epoch i16 |
//   53 base_sequence i32 | 57 record_count i32 | 61 records...

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "protocol/compression.h"

namespace sluice::protocol {

constexpr size_t batch_header_size = 61;
constexpr size_t batch_length_offset = 8;
constexpr size_t batch_crc_offset = 17;
constexpr size_t batch_attributes_offset = 21;
constexpr size_t batch_max_timestamp_offset = 35;
constexpr size_t batch_record_count_offset = 57;
// Bytes before batch_length's coverage starts: base_offset + batch_length.
constexpr size_t batch_log_overhead = 12;
// A record's timestamp when it has none (-1), and the least a batch's max_timestamp can
// be, as in Kafka.
constexpr int64_t no_record_timestamp = -1;

enum class timestamp_type : uint8_t { create_time = 0, log_append_time = 1 };

struct batch_header {
    int64_t base_offset = 0;
    int32_t batch_length = 0;
    int32_t partition_leader_epoch = 0;
    int8_t magic = 0;
    uint32_t crc = 0;
    int16_t attributes = 0;
    int32_t last_offset_delta = 0;
    int64_t base_timestamp = 0;
    int64_t max_timestamp = 0;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int32_t base_sequence = -1;
    int32_t record_count = 0;

    size_t size_bytes() const { return batch_log_overhead + static_cast<size_t>(batch_length); }
    int64_t last_offset() const { return base_offset + last_offset_delta; }
    compression codec() const { return static_cast<compression>(attributes & codec_mask); }
    static constexpr int16_t codec_mask = 0x7;
    timestamp_type ts_type() const {
        return (attributes & 0x8) ? timestamp_type::log_append_time : timestamp_type::create_time;
    }
    bool is_transactional() const { return attributes & 0x10; }
    bool is_control() const { return attributes & 0x20; }
};

// Reads the fixed header; nullopt when fewer than batch_header_size bytes are given.
std::optional<batch_header> read_batch_header(bytes_view data);

// True when the stored CRC matches bytes 21..end of a complete batch.
bool batch_crc_ok(bytes_view batch);

// A record is bounded only by its batch (as in Kafka): its key and value may take all
// of max.message.bytes.
struct batch_limits {
    size_t max_batch_bytes = 1024 * 1024;
    // Compacted topics: a record without a key could never be compacted away, so it is
    // refused (invalid_record), as Kafka does.
    bool require_keys = false;
    // What a compressed batch may decompress to (compression.h's decompressed_limit).
    size_t max_decompressed_bytes = min_decompressed_limit;
    // Kafka takes zstd from Produce v7 on (KIP-110): older requests get
    // UNSUPPORTED_COMPRESSION_TYPE.
    bool allow_zstd = true;
    // CreateTime topics: the record timestamps allowed (the broker's clock minus
    // message.timestamp.before.max.ms, plus message.timestamp.after.max.ms), as Kafka
    // checks them (KIP-937); a record without a timestamp (-1) is not checked.
    int64_t min_timestamp = std::numeric_limits<int64_t>::min();
    int64_t max_timestamp = std::numeric_limits<int64_t>::max();
};

struct validated_batch {
    size_t position = 0;  // byte position within the produce payload
    batch_header header;  // as sent
    // The largest record timestamp (no_record_timestamp at least), which Kafka stores
    // as a CreateTime batch's max_timestamp whatever the producer wrote there: sarama
    // up to v1.44.0 leaves -1, librdkafka 0 when its records carry -1.
    int64_t max_record_timestamp = no_record_timestamp;
};

// Why validate_batches refused: for a fault of one record, its index among the records
// of the payload (counted across its batches; Kafka's one batch per partition makes it
// the index in the batch, Produce's record_errors[].batch_index). nullopt: the batch.
struct batch_fault {
    std::optional<int32_t> record_index;
};

// Checks every batch of a produce payload: framing and lengths, magic 2, CRC, the
// codec, and, after decompressing a compressed batch as Kafka does, record framing,
// record count and offset deltas, keys on compacted topics. Header fields producers
// leave unset are taken as Kafka takes them: max_timestamp is recomputed
// (set_create_time below), the partition leader epoch and base timestamp are not
// checked. Errors: corrupt (framing/CRC), too_large (also: decompresses to more than
// max_decompressed_bytes), invalid_record (also: does not decompress), unsupported
// (an unknown codec, zstd when not allowed); `fault`, when given, says which record.
result<std::vector<validated_batch>> validate_batches(bytes_view payload, const batch_limits& lim,
                                                      batch_fault* fault = nullptr);

// Rewrites the base offset (not covered by the CRC).
void set_base_offset(uint8_t* batch, int64_t base_offset);
// Marks the batch LogAppendTime with the given broker time and recomputes the CRC.
void set_log_append_time(uint8_t* batch, size_t size, int64_t append_time_ms);
// Makes the batch CreateTime with the given max_timestamp, as Kafka stores a batch of a
// CreateTime topic; recomputes the CRC only when that changed a byte.
void set_create_time(uint8_t* batch, size_t size, int64_t max_timestamp);

struct record_view {
    int64_t timestamp = 0;  // absolute (base_timestamp + delta)
    int64_t offset = 0;     // absolute (base_offset + delta)
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;
    std::vector<std::pair<bytes_view, std::optional<bytes_view>>> headers;
};

// The records of a whole batch (the bytes after its header): a view into `batch` when
// it is uncompressed, else decompressed into `scratch` (within max_out bytes).
// Errors: as decompress() (corrupt, too_large, unsupported).
result<bytes_view> batch_records(bytes_view batch, const batch_header& h, bytes& scratch,
                                 size_t max_out = stored_decompressed_limit);

// Calls fn for each record of an already validated batch, decompressing it first when
// it is compressed; stops when fn returns false. Returns false when the records are
// malformed or do not decompress.
bool for_each_record(bytes_view batch, const std::function<bool(const record_view&)>& fn);

// Compaction's rewrite of one validated batch: keeps the records `keep` accepts and
// appends the result to `out`. A batch keeping every record is appended byte for byte;
// one keeping none appends nothing. Otherwise the header is kept (base offset, last
// offset delta, base timestamp, producer fields, codec: each kept record keeps its
// absolute offset and timestamp, and its bytes are copied unchanged), the kept records
// are compressed again with the batch's codec (its default level), and record count,
// batch length, max timestamp (CreateTime: the largest kept record's) and CRC are
// recomputed. Returns how many records were dropped.
// Errors: corrupt (malformed records, or they do not decompress).
result<int32_t> filter_batch(bytes_view batch, const std::function<bool(const record_view&)>& keep,
                             bytes& out);

// The append path's recompression, for a topic whose compression.type names a codec:
// the batches of `payload` (as validate_batches returned them) whose codec is not
// `target` get their records compressed with `target` at `level` (none: stored
// uncompressed); the others are copied. Returns the new payload and updates each
// batch's position and header (attributes, batch length, CRC). Errors: too_large when
// a recompressed batch exceeds max_batch_bytes (Kafka checks max.message.bytes again
// after recompressing).
result<bytes> recompress_batches(bytes_view payload, std::vector<validated_batch>& batches,
                                 compression target, std::optional<int> level,
                                 size_t max_batch_bytes);

}  // namespace sluice::protocol

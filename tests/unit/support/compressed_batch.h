#pragma once

// Compressed Kafka v2 batches for tests: a batch from batch_builder.h with its records
// compressed by a codec of protocol/compression.h, as a producer compressing with that
// codec sends it (attributes bits 0-2, batch length and CRC set to match).

#include <cstring>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/compression.h"
#include "protocol/record_batch.h"
#include "support/batch_builder.h"

namespace sluice::testing {

// `body`: the records as they go after the header (compressed or not), to test what a
// producer may get wrong.
inline bytes with_body(const bytes& batch, bytes_view body, protocol::compression c) {
    using namespace protocol;
    // memcpy rather than insert: GCC 12 reports a false -Wstringop-overread for the latter.
    bytes out(batch_header_size + body.size());
    std::memcpy(out.data(), batch.data(), batch_header_size);
    if (!body.empty()) std::memcpy(out.data() + batch_header_size, body.data(), body.size());
    store_be<int32_t>(out.data() + batch_length_offset,
                      static_cast<int32_t>(out.size() - batch_log_overhead));
    const auto attrs = load_be<int16_t>(out.data() + batch_attributes_offset);
    store_be<int16_t>(out.data() + batch_attributes_offset,
                      static_cast<int16_t>((attrs & ~0x7) | static_cast<int16_t>(c)));
    store_be<uint32_t>(out.data() + batch_crc_offset,
                       crc32c(out.data() + batch_attributes_offset,
                              out.size() - batch_attributes_offset));
    return out;
}

inline bytes compress_batch(const bytes& batch, protocol::compression c) {
    const bytes_view records = bytes_view(batch).subspan(protocol::batch_header_size);
    return with_body(batch, *protocol::compress(c, records), c);
}

inline constexpr protocol::compression all_codecs[] = {
    protocol::compression::gzip, protocol::compression::snappy, protocol::compression::lz4,
    protocol::compression::zstd};

}  // namespace sluice::testing

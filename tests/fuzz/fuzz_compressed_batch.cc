// libFuzzer target: the decompression paths. The first byte picks a codec, the second
// a record count (1..8); the rest is taken (1) as compressed bytes, which must decompress within the bound or be refused,
// and must round-trip through the compressor when they do; and (2) as the records of a
// batch of that codec with a matching CRC, so that validation decompresses them and a
// batch it accepts iterates to exactly its record count.

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/crc32c.h"
#include "common/endian.h"
#include "protocol/compression.h"
#include "protocol/record_batch.h"

namespace p = sluice::protocol;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 2) return 0;
    const auto codec = static_cast<p::compression>(1 + data[0] % 4);
    const int32_t count = 1 + data[1] % 8;
    const sluice::bytes_view body(data + 2, size - 2);
    constexpr size_t bound = 1 << 20;  // small, so that bombs are found quickly
    if (auto plain = p::decompress(codec, body, bound)) {
        if (plain->size() > bound) __builtin_trap();
        auto again = p::decompress(codec, *p::compress(codec, *plain), bound);
        if (!again || *again != *plain) __builtin_trap();
    }

    // A batch header claiming `count` records, then the body.
    sluice::bytes batch(p::batch_header_size + body.size());
    sluice::store_be<int32_t>(batch.data() + 8,
                              static_cast<int32_t>(batch.size() - p::batch_log_overhead));
    batch[16] = 2;  // magic
    sluice::store_be<int16_t>(batch.data() + p::batch_attributes_offset, static_cast<int16_t>(codec));
    sluice::store_be<int32_t>(batch.data() + 23, count - 1);
    sluice::store_be<int32_t>(batch.data() + p::batch_record_count_offset, count);
    if (!body.empty()) std::memcpy(batch.data() + p::batch_header_size, body.data(), body.size());
    sluice::store_be<uint32_t>(batch.data() + p::batch_crc_offset,
                               sluice::crc32c(batch.data() + p::batch_attributes_offset,
                                              batch.size() - p::batch_attributes_offset));
    p::batch_limits lim;
    lim.max_decompressed_bytes = bound;
    auto v = p::validate_batches(batch, lim);
    if (!v) return 0;
    int32_t n = 0;
    bool ok = p::for_each_record(batch, [&](const auto&) {
        ++n;
        return true;
    });
    if (!ok || n != count) __builtin_trap();
    return 0;
}

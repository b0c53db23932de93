#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

// Protocol Buffers style base-128 varints, as Kafka uses them. Decoders return the
// number of bytes consumed, or 0 when the input ends first or the value overflows.

inline size_t decode_uvarint(const uint8_t* p, size_t n, uint64_t& out, int max_bytes = 10) {
    uint64_t v = 0;
    for (size_t i = 0; i < n && i < static_cast<size_t>(max_bytes); ++i) {
        v |= static_cast<uint64_t>(p[i] & 0x7f) << (7 * i);
        if (!(p[i] & 0x80)) {
            out = v;
            return i + 1;
        }
    }
    return 0;
}

inline size_t decode_varint64(const uint8_t* p, size_t n, int64_t& out) {
    uint64_t u = 0;
    size_t used = decode_uvarint(p, n, u, 10);
    out = static_cast<int64_t>((u >> 1) ^ (~(u & 1) + 1));  // zig-zag
    return used;
}

inline size_t decode_varint32(const uint8_t* p, size_t n, int32_t& out) {
    uint64_t u = 0;
    size_t used = decode_uvarint(p, n, u, 5);
    if (used == 0 || u > 0xffffffffULL) return 0;
    out = static_cast<int32_t>(static_cast<uint32_t>((u >> 1) ^ (~(u & 1) + 1)));
    return used;
}

inline size_t encode_uvarint(uint8_t* out, uint64_t v) {
    size_t i = 0;
    while (v >= 0x80) {
        out[i++] = static_cast<uint8_t>(v) | 0x80;
        v >>= 7;
    }
    out[i++] = static_cast<uint8_t>(v);
    return i;
}

inline uint64_t zigzag(int64_t v) {
    return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

}  // namespace sluice

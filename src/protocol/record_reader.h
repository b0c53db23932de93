#pragma once

// Reads the records of a validated batch one at a time without allocating: what SQL
// scans use per row. It reads uncompressed records: batch_records (record_batch.h)
// gives them, decompressing a compressed batch once. Headers stay undecoded until asked for.
// Record layout (KIP-98): length varint | attributes i8 | timestamp_delta varlong |
// offset_delta varint | key_length varint | key | value_length varint | value |
// header_count varint | headers.

#include <cstdint>
#include <optional>

#include "common/types.h"
#include "common/varint.h"
#include "protocol/record_batch.h"

namespace sluice::protocol {

struct record_ref {
    int64_t offset = 0;
    int64_t timestamp = 0;
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;
    int32_t header_count = 0;
    bytes_view headers;  // the encoded headers (header_count of them)
};

class record_reader {
  public:
    // `records`: the batch's records, uncompressed (batch_records); `h` its header.
    record_reader(bytes_view records, const batch_header& h)
        : _p(records.data()),
          _end(records.data() + records.size()),
          _h(h),
          _left(h.record_count) {}

    // The next record into `out`; false at the end or on malformed bytes (ok() tells).
    bool next(record_ref& out) {
        if (_left <= 0) return false;
        int32_t len = 0;
        if (!varint(_p, _end, len) || len < 0 || len > _end - _p) return fail();
        const uint8_t* p = _p;
        const uint8_t* end = _p + len;
        _p = end;
        --_left;
        ++p;  // attributes
        int64_t ts_delta = 0;
        int32_t off_delta = 0;
        if (p > end || !varlong(p, end, ts_delta) || !varint(p, end, off_delta)) return fail();
        out.offset = _h.base_offset + off_delta;
        out.timestamp = _h.ts_type() == timestamp_type::log_append_time ? _h.max_timestamp
                                                                         : _h.base_timestamp + ts_delta;
        if (!blob(p, end, out.key) || !blob(p, end, out.value)) return fail();
        if (!varint(p, end, out.header_count) || out.header_count < 0) return fail();
        out.headers = bytes_view(p, static_cast<size_t>(end - p));
        return true;
    }
    bool ok() const { return _ok; }

    // Walks encoded headers: fn(key, value) with value nullopt for a null header value.
    // False when they are malformed.
    template <typename Fn>
    static bool for_each_header(const record_ref& r, Fn&& fn) {
        const uint8_t* p = r.headers.data();
        const uint8_t* end = p + r.headers.size();
        for (int32_t i = 0; i < r.header_count; ++i) {
            std::optional<bytes_view> k, v;
            if (!blob(p, end, k) || !k || !blob(p, end, v)) return false;
            fn(*k, v);
        }
        return true;
    }

  private:
    static bool varint(const uint8_t*& p, const uint8_t* end, int32_t& v) {
        size_t n = decode_varint32(p, static_cast<size_t>(end - p), v);
        p += n;
        return n != 0;
    }
    static bool varlong(const uint8_t*& p, const uint8_t* end, int64_t& v) {
        size_t n = decode_varint64(p, static_cast<size_t>(end - p), v);
        p += n;
        return n != 0;
    }
    static bool blob(const uint8_t*& p, const uint8_t* end, std::optional<bytes_view>& out) {
        int32_t len = 0;
        if (!varint(p, end, len) || len > end - p) return false;
        if (len < 0) {
            out.reset();
            return true;
        }
        out = bytes_view(p, static_cast<size_t>(len));
        p += len;
        return true;
    }
    bool fail() {
        _ok = false;
        _left = 0;
        return false;
    }

    const uint8_t* _p;
    const uint8_t* _end;
    const batch_header& _h;
    int32_t _left;
    bool _ok = true;
};

}  // namespace sluice::protocol

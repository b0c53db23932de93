#pragma once

// Encodes real Kafka v2 record batches (magic 2, uncompressed, CRC-32C) for tests, so
// that storage, protocol and SQL tests feed the broker the bytes a client would send.
// Depends only on common/.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/types.h"
#include "common/varint.h"

namespace sluice::testing {

struct test_record {
    std::optional<std::string> key;
    std::optional<std::string> value;
    int64_t timestamp = 0;
    std::vector<std::pair<std::string, std::string>> headers;
};

struct batch_options {
    int64_t base_offset = 0;
    bool log_append_time = false;          // attributes bit 3
    std::optional<int64_t> max_timestamp;  // default: the largest record timestamp
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int32_t base_sequence = -1;
    int32_t partition_leader_epoch = -1;
    bool transactional = false;  // attributes bit 4 (isTransactional)
};

namespace detail {
inline void put_varint(bytes& out, int64_t v) {
    uint8_t buf[10];
    size_t n = encode_uvarint(buf, zigzag(v));
    out.insert(out.end(), buf, buf + n);
}
inline void put_field(bytes& out, const std::optional<std::string>& s) {
    if (!s) {
        put_varint(out, -1);
        return;
    }
    put_varint(out, static_cast<int64_t>(s->size()));
    out.insert(out.end(), s->begin(), s->end());
}
template <typename T>
void put_be(bytes& out, T v) {
    uint8_t buf[sizeof(T)];
    store_be<T>(buf, v);
    out.insert(out.end(), buf, buf + sizeof(T));
}
}  // namespace detail

// One batch holding `records` (at least one).
inline bytes build_batch(const std::vector<test_record>& records, const batch_options& opt = {}) {
    using namespace detail;
    const int64_t base_ts = records.front().timestamp;
    int64_t max_ts = base_ts;
    bytes body;
    for (size_t i = 0; i < records.size(); ++i) {
        const auto& r = records[i];
        max_ts = std::max(max_ts, r.timestamp);
        bytes rec;
        rec.push_back(0);  // record attributes
        put_varint(rec, r.timestamp - base_ts);
        put_varint(rec, static_cast<int64_t>(i));
        put_field(rec, r.key);
        put_field(rec, r.value);
        put_varint(rec, static_cast<int64_t>(r.headers.size()));
        for (const auto& [k, v] : r.headers) {
            put_field(rec, k);
            put_field(rec, v);
        }
        put_varint(body, static_cast<int64_t>(rec.size()));
        body.insert(body.end(), rec.begin(), rec.end());
    }
    bytes out;
    put_be<int64_t>(out, opt.base_offset);
    put_be<int32_t>(out, static_cast<int32_t>(49 + body.size()));  // bytes after this field
    put_be<int32_t>(out, opt.partition_leader_epoch);
    out.push_back(2);          // magic
    put_be<uint32_t>(out, 0);  // crc, filled below
    put_be<int16_t>(out, static_cast<int16_t>((opt.log_append_time ? 0x8 : 0) |
                                              (opt.transactional ? 0x10 : 0)));
    put_be<int32_t>(out, static_cast<int32_t>(records.size() - 1));
    put_be<int64_t>(out, base_ts);
    put_be<int64_t>(out, opt.max_timestamp.value_or(max_ts));
    put_be<int64_t>(out, opt.producer_id);
    put_be<int16_t>(out, opt.producer_epoch);
    put_be<int32_t>(out, opt.base_sequence);
    put_be<int32_t>(out, static_cast<int32_t>(records.size()));
    out.insert(out.end(), body.begin(), body.end());
    store_be<uint32_t>(out.data() + 17, crc32c(out.data() + 21, out.size() - 21));
    return out;
}

// `count` records with timestamps first_ts, first_ts + ts_step, ... and values of
// value_size bytes (keys "k<i>").
inline bytes make_batch(int count, int64_t first_ts, size_t value_size = 16, int64_t ts_step = 1,
                        const batch_options& opt = {}) {
    std::vector<test_record> recs;
    recs.reserve(static_cast<size_t>(std::max(count, 0)));
    for (int i = 0; i < count; ++i)
        recs.push_back({"k" + std::to_string(i),
                        std::string(value_size, static_cast<char>('a' + i % 26)),
                        first_ts + i * ts_step,
                        {}});
    return build_batch(recs, opt);
}

inline void append_to(bytes& dst, const bytes& src) {
    dst.insert(dst.end(), src.begin(), src.end());
}

}  // namespace sluice::testing

#include "protocol/control_batch.h"

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/varint.h"
#include "protocol/record_batch.h"

namespace sluice::protocol {

namespace {

constexpr int16_t transactional_bit = 0x10;
constexpr int16_t control_bit = 0x20;

template <typename T>
void put_control(bytes& out, T v) {
    uint8_t b[sizeof(T)];
    store_be<T>(b, v);
    out.insert(out.end(), b, b + sizeof(T));
}

void put_control_varint(bytes& out, int64_t v) {
    uint8_t b[10];
    const size_t n = encode_uvarint(b, zigzag(v));
    out.insert(out.end(), b, b + n);
}

}  // namespace

bytes encode_control_batch(int64_t producer_id, int16_t producer_epoch, control_type type,
                           int32_t coordinator_epoch, int64_t timestamp_ms, int64_t base_offset) {
    bytes key;
    put_control<int16_t>(key, 0);  // key version
    put_control<int16_t>(key, static_cast<int16_t>(type));
    bytes value;
    put_control<int16_t>(value, 0);  // EndTransactionMarker version
    put_control<int32_t>(value, coordinator_epoch);
    bytes rec;
    rec.push_back(0);            // record attributes
    put_control_varint(rec, 0);  // timestamp delta
    put_control_varint(rec, 0);  // offset delta
    put_control_varint(rec, static_cast<int64_t>(key.size()));
    rec.insert(rec.end(), key.begin(), key.end());
    put_control_varint(rec, static_cast<int64_t>(value.size()));
    rec.insert(rec.end(), value.begin(), value.end());
    put_control_varint(rec, 0);  // headers
    bytes out;
    out.reserve(batch_header_size + rec.size() + 2);
    put_control<int64_t>(out, base_offset);
    put_control<int32_t>(out, 0);   // batch length, below
    put_control<int32_t>(out, 0);   // partition leader epoch: one replica, epoch 0
    out.push_back(2);               // magic
    put_control<uint32_t>(out, 0);  // crc, below
    put_control<int16_t>(out, static_cast<int16_t>(transactional_bit | control_bit));
    put_control<int32_t>(out, 0);  // last offset delta
    put_control<int64_t>(out, timestamp_ms);
    put_control<int64_t>(out, timestamp_ms);
    put_control<int64_t>(out, producer_id);
    put_control<int16_t>(out, producer_epoch);
    put_control<int32_t>(out, -1);  // base sequence
    put_control<int32_t>(out, 1);   // record count
    put_control_varint(out, static_cast<int64_t>(rec.size()));
    out.insert(out.end(), rec.begin(), rec.end());
    store_be<int32_t>(out.data() + batch_length_offset,
                      static_cast<int32_t>(out.size() - batch_log_overhead));
    store_be<uint32_t>(out.data() + batch_crc_offset, crc32c(out.data() + batch_attributes_offset,
                                                             out.size() - batch_attributes_offset));
    return out;
}

result<control_record> decode_control_batch(bytes_view batch) {
    auto h = read_batch_header(batch);
    if (!h || h->magic != 2 || !h->is_control())
        return {errc::invalid_argument, "not a control batch"};
    std::optional<control_record> out;
    bool bad_key = false;
    const bool ok = for_each_record(batch, [&](const record_view& r) {
        if (!r.key || r.key->size() < 4 || load_be<int16_t>(r.key->data()) != 0) {
            bad_key = true;
            return false;
        }
        control_record c;
        c.type = load_be<int16_t>(r.key->data() + 2);
        if (c.is_marker() && r.value && r.value->size() >= 6)
            c.coordinator_epoch = load_be<int32_t>(r.value->data() + 2);
        out = c;
        return false;  // one record
    });
    if (!ok || bad_key || !out)
        return {errc::corrupt,
                fmt::format("control batch at offset {} has no readable control record",
                            h->base_offset)};
    return *out;
}

}  // namespace sluice::protocol

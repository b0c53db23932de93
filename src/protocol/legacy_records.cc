#include "protocol/legacy_records.h"

#include <fmt/format.h>
#include <zlib.h>

#include <algorithm>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/varint.h"
#include "protocol/compression.h"
#include "protocol/record_batch.h"

namespace sluice::protocol {
namespace {

constexpr size_t message_log_overhead = 12;  // offset + message_size
constexpr size_t message_crc_offset = 12;
constexpr size_t message_magic_offset = 16;

uint32_t crc32_ieee(const uint8_t* p, size_t n) {
    return static_cast<uint32_t>(::crc32(0L, p, static_cast<uInt>(n)));
}

struct legacy_message {
    int8_t magic = 0;
    int8_t attributes = 0;
    int64_t timestamp = no_record_timestamp;
    std::optional<bytes_view> key;
    std::optional<bytes_view> value;
};

// Reads one i32-length-prefixed field at p (within end); false when it overruns.
bool read_field(const uint8_t*& p, const uint8_t* end, std::optional<bytes_view>& out) {
    if (end - p < 4) return false;
    auto len = load_be<int32_t>(p);
    p += 4;
    if (len < 0) {
        out.reset();
        return true;
    }
    if (len > end - p) return false;
    out = bytes_view(p, static_cast<size_t>(len));
    p += len;
    return true;
}

// Calls fn for each message of a v0/v1 message set.
result<void> walk_messages(bytes_view set,
                           const std::function<result<void>(const legacy_message&)>& fn) {
    size_t pos = 0;
    while (pos < set.size()) {
        if (set.size() - pos < message_log_overhead + 6)
            return {errc::corrupt, fmt::format("truncated message at byte {}", pos)};
        const uint8_t* p = set.data() + pos;
        auto size = load_be<int32_t>(p + 8);
        if (size < 6 || static_cast<size_t>(size) > set.size() - pos - message_log_overhead)
            return {errc::corrupt, fmt::format("message at byte {} has size {}", pos, size)};
        const uint8_t* end = p + message_log_overhead + size;
        const uint8_t* body = p + message_crc_offset + 4;
        if (crc32_ieee(body, static_cast<size_t>(end - body)) !=
            load_be<uint32_t>(p + message_crc_offset))
            return {errc::corrupt, fmt::format("message at byte {} fails its CRC", pos)};
        legacy_message m;
        m.magic = static_cast<int8_t>(p[message_magic_offset]);
        if (m.magic != 0 && m.magic != 1)
            return {errc::corrupt, fmt::format("message at byte {} has magic {}", pos, m.magic)};
        m.attributes = static_cast<int8_t>(p[message_magic_offset + 1]);
        const uint8_t* q = p + message_magic_offset + 2;
        if (m.magic == 1) {
            if (end - q < 8) return {errc::corrupt, "truncated v1 message timestamp"};
            m.timestamp = load_be<int64_t>(q);
            q += 8;
        }
        if (!read_field(q, end, m.key) || !read_field(q, end, m.value) || q != end)
            return {errc::corrupt,
                    fmt::format("malformed key or value in message at byte {}", pos)};
        if (auto r = fn(m); !r) return r;
        pos += message_log_overhead + static_cast<size_t>(size);
    }
    return {};
}

void put_varint(bytes& out, int64_t v) {
    uint8_t buf[10];
    out.insert(out.end(), buf, buf + encode_uvarint(buf, zigzag(v)));
}

void put_field(bytes& out, const std::optional<bytes_view>& f) {
    if (!f) return put_varint(out, -1);
    put_varint(out, static_cast<int64_t>(f->size()));
    out.insert(out.end(), f->begin(), f->end());
}

// The records of one v2 batch under construction.
struct batch_builder {
    bytes records;
    int32_t count = 0;
    int64_t base_ts = no_record_timestamp;
    int64_t max_ts = no_record_timestamp;
    bool log_append_time = false;

    void add(const legacy_message& m) {
        if (count == 0) base_ts = m.timestamp;
        max_ts = std::max(max_ts, m.timestamp);
        bytes rec{0};  // record attributes
        put_varint(rec, m.timestamp - base_ts);
        put_varint(rec, count);
        put_field(rec, m.key);
        put_field(rec, m.value);
        put_varint(rec, 0);  // no headers
        put_varint(records, static_cast<int64_t>(rec.size()));
        records.insert(records.end(), rec.begin(), rec.end());
        ++count;
    }

    result<void> finish(bytes& out, compression c) {
        if (count == 0) return {};
        bytes packed;
        bytes_view body = records;
        if (c != compression::none) {
            auto z = compress(c, records);
            if (!z) return z.err();
            packed = std::move(*z);
            body = packed;
        }
        const size_t at = out.size();
        out.resize(at + batch_header_size);
        uint8_t* h = out.data() + at;
        store_be<int64_t>(h, 0);
        store_be<int32_t>(h + 12, -1);  // partition leader epoch
        h[16] = 2;
        auto attrs = static_cast<int16_t>(static_cast<int>(c) | (log_append_time ? 0x8 : 0));
        store_be<int16_t>(h + batch_attributes_offset, attrs);
        store_be<int32_t>(h + 23, count - 1);
        store_be<int64_t>(h + 27, base_ts);
        store_be<int64_t>(h + batch_max_timestamp_offset, max_ts);
        store_be<int64_t>(h + 43, -1);
        store_be<int16_t>(h + 51, -1);
        store_be<int32_t>(h + 53, -1);
        store_be<int32_t>(h + batch_record_count_offset, count);
        out.insert(out.end(), body.begin(), body.end());
        h = out.data() + at;
        const size_t size = out.size() - at;
        store_be<int32_t>(h + batch_length_offset, static_cast<int32_t>(size - batch_log_overhead));
        store_be<uint32_t>(h + batch_crc_offset,
                           crc32c(h + batch_attributes_offset, size - batch_attributes_offset));
        *this = {};
        return {};
    }
};

void put_message(bytes& out, int8_t magic, int64_t offset, int8_t attributes, int64_t timestamp,
                 const std::optional<bytes_view>& key, const std::optional<bytes_view>& value) {
    const size_t at = out.size();
    out.resize(at + message_log_overhead + 4);
    out.push_back(static_cast<uint8_t>(magic));
    out.push_back(static_cast<uint8_t>(attributes));
    if (magic == 1) {
        uint8_t ts[8];
        store_be<int64_t>(ts, timestamp);
        out.insert(out.end(), ts, ts + 8);
    }
    for (const auto* f : {&key, &value}) {
        uint8_t len[4];
        store_be<int32_t>(len, *f ? static_cast<int32_t>((*f)->size()) : -1);
        out.insert(out.end(), len, len + 4);
        if (*f) out.insert(out.end(), (*f)->begin(), (*f)->end());
    }
    uint8_t* p = out.data() + at;
    store_be<int64_t>(p, offset);
    store_be<int32_t>(p + 8, static_cast<int32_t>(out.size() - at - message_log_overhead));
    store_be<uint32_t>(p + message_crc_offset, crc32_ieee(p + message_magic_offset,
                                                          out.size() - at - message_magic_offset));
}

}  // namespace

std::optional<int8_t> first_magic(bytes_view payload) {
    if (payload.size() <= message_magic_offset) return std::nullopt;
    return static_cast<int8_t>(payload[message_magic_offset]);
}

result<bytes> upconvert_message_set(bytes_view payload, size_t max_decompressed) {
    bytes out;
    batch_builder plain;
    auto r = walk_messages(payload, [&](const legacy_message& m) -> result<void> {
        const int codec = m.attributes & 0x7;
        if (codec == 0) {
            plain.add(m);
            return {};
        }
        if (codec == static_cast<int>(compression::zstd) || !is_known_compression(codec))
            return {errc::unsupported,
                    fmt::format("message format v{} cannot carry codec {}", m.magic, codec)};
        if (auto f = plain.finish(out, compression::none); !f) return f;
        if (!m.value) return {errc::corrupt, "compressed message without a value"};
        auto c = static_cast<compression>(codec);
        auto inner = decompress(c, *m.value, max_decompressed);
        if (!inner && inner.code() == errc::corrupt)  // as a v2 batch that does not decompress
            return {errc::invalid_record, fmt::format("{} message does not decompress: {}",
                                                      compression_name(c), inner.err().message)};
        if (!inner) return inner.err();
        batch_builder wrapped;
        // A v1 wrapper of LogAppendTime gives its timestamp to the messages inside.
        wrapped.log_append_time = m.magic == 1 && (m.attributes & 0x8);
        auto w = walk_messages(*inner, [&](const legacy_message& im) -> result<void> {
            if (im.attributes & 0x7) return {errc::corrupt, "nested compressed message"};
            legacy_message copy = im;
            if (wrapped.log_append_time) copy.timestamp = m.timestamp;
            wrapped.add(copy);
            return {};
        });
        if (!w) return w;
        return wrapped.finish(out, c);
    });
    if (!r) return r.err();
    if (auto f = plain.finish(out, compression::none); !f) return f.err();
    if (out.empty()) return {errc::corrupt, "message set holds no messages"};
    return out;
}

bytes downconvert_batches(bytes_view batches, int8_t magic, int64_t from_offset) {
    bytes out;
    size_t pos = 0;
    while (auto h = read_batch_header(batches.subspan(pos))) {
        if (h->size_bytes() > batches.size() - pos || h->magic != 2) break;
        const bytes_view batch = batches.subspan(pos, h->size_bytes());
        pos += h->size_bytes();
        if (h->is_control() || h->last_offset() < from_offset) continue;
        const bool append_time = h->ts_type() == timestamp_type::log_append_time;
        const auto attrs = static_cast<int8_t>(magic == 1 && append_time ? 0x8 : 0);
        for_each_record(batch, [&](const record_view& r) {
            if (r.offset < from_offset) return true;
            const int64_t ts = append_time ? h->max_timestamp : r.timestamp;
            put_message(out, magic, r.offset, attrs, ts, r.key, r.value);
            return true;
        });
    }
    return out;
}

}  // namespace sluice::protocol

#include "protocol/record_batch.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>

#include "common/crc32c.h"
#include "common/endian.h"
#include "common/varint.h"

namespace sluice::protocol {

std::optional<batch_header> read_batch_header(bytes_view d) {
    if (d.size() < batch_header_size) return std::nullopt;
    const uint8_t* p = d.data();
    batch_header h;
    h.base_offset = load_be<int64_t>(p);
    h.batch_length = load_be<int32_t>(p + 8);
    h.partition_leader_epoch = load_be<int32_t>(p + 12);
    h.magic = static_cast<int8_t>(p[16]);
    h.crc = load_be<uint32_t>(p + 17);
    h.attributes = load_be<int16_t>(p + 21);
    h.last_offset_delta = load_be<int32_t>(p + 23);
    h.base_timestamp = load_be<int64_t>(p + 27);
    h.max_timestamp = load_be<int64_t>(p + 35);
    h.producer_id = load_be<int64_t>(p + 43);
    h.producer_epoch = load_be<int16_t>(p + 51);
    h.base_sequence = load_be<int32_t>(p + 53);
    h.record_count = load_be<int32_t>(p + 57);
    return h;
}

namespace {
// After a change to bytes the CRC covers (attributes onwards).
void store_crc(uint8_t* batch, size_t size) {
    store_be<uint32_t>(batch + batch_crc_offset,
                       crc32c(batch + batch_attributes_offset, size - batch_attributes_offset));
}
}  // namespace

bool batch_crc_ok(bytes_view b) {
    if (b.size() < batch_header_size) return false;
    uint32_t stored = load_be<uint32_t>(b.data() + batch_crc_offset);
    return crc32c(b.data() + batch_attributes_offset, b.size() - batch_attributes_offset) == stored;
}

namespace {

// Cursor over one batch's records; every read is bounds-checked.
struct cursor {
    const uint8_t* p = nullptr;
    const uint8_t* end = nullptr;
    bool ok = true;

    int64_t varlong() {
        int64_t v = 0;
        size_t n = ok ? decode_varint64(p, static_cast<size_t>(end - p), v) : 0;
        if (n == 0) ok = false;
        p += n;
        return v;
    }
    int32_t varint() {
        int32_t v = 0;
        size_t n = ok ? decode_varint32(p, static_cast<size_t>(end - p), v) : 0;
        if (n == 0) ok = false;
        p += n;
        return v;
    }
    // A length-prefixed field; -1 is null.
    std::optional<bytes_view> field() {
        int32_t len = varint();
        if (!ok || len < 0) return std::nullopt;
        if (len > end - p) {
            ok = false;
            return std::nullopt;
        }
        bytes_view v(p, static_cast<size_t>(len));
        p += len;
        return v;
    }
};

}  // namespace

namespace {

// Walks the records of a batch (`records`: the uncompressed bytes after its header);
// fn gets each record and its raw bytes (length prefix included) and returns false to
// stop.
bool walk_records(bytes_view records, const batch_header& hdr,
                  const std::function<bool(const record_view&, bytes_view)>& fn) {
    const batch_header* h = &hdr;
    cursor c{records.data(), records.data() + records.size()};
    record_view r;
    for (int32_t i = 0; i < h->record_count; ++i) {
        const uint8_t* raw = c.p;
        int32_t len = c.varint();
        if (!c.ok || len < 0 || len > c.end - c.p) return false;
        cursor rc{c.p, c.p + len};
        c.p += len;
        rc.p += 1;  // record attributes, unused
        if (rc.p > rc.end) return false;
        r.timestamp = h->base_timestamp + rc.varlong();
        r.offset = h->base_offset + rc.varint();
        r.key = rc.field();
        r.value = rc.field();
        int32_t nh = rc.varint();
        if (!rc.ok || nh < 0) return false;
        r.headers.clear();
        for (int32_t k = 0; k < nh && rc.ok; ++k) {
            auto hk = rc.field();
            auto hv = rc.field();
            if (!hk) return false;
            r.headers.emplace_back(*hk, hv);
        }
        if (!rc.ok || rc.p != rc.end) return false;
        if (!fn(r, bytes_view(raw, static_cast<size_t>(c.p - raw)))) return true;
    }
    return c.p == c.end;
}

}  // namespace

result<bytes_view> batch_records(bytes_view batch, const batch_header& h, bytes& scratch,
                                 size_t max_out) {
    if (h.size_bytes() > batch.size() || h.size_bytes() < batch_header_size)
        return {errc::corrupt, "truncated record batch"};
    const bytes_view body = batch.subspan(batch_header_size, h.size_bytes() - batch_header_size);
    if (h.codec() == compression::none) return body;
    auto plain = decompress(h.codec(), body, max_out);
    if (!plain) return plain.err();
    scratch = std::move(*plain);
    return bytes_view(scratch);
}

bool for_each_record(bytes_view batch, const std::function<bool(const record_view&)>& fn) {
    auto h = read_batch_header(batch);
    if (!h) return false;
    bytes scratch;
    auto records = batch_records(batch, *h, scratch);
    if (!records) return false;
    return walk_records(*records, *h, [&](const record_view& r, bytes_view) { return fn(r); });
}

namespace {

void store_crc_and_lengths(uint8_t* p, size_t size, int32_t count) {
    store_be<int32_t>(p + batch_length_offset, static_cast<int32_t>(size - batch_log_overhead));
    store_be<int32_t>(p + batch_record_count_offset, count);
    store_crc(p, size);
}

// Appends to `out` a batch of `hdr`'s header (its first batch_header_size bytes) and
// `records` (uncompressed, `count` of them) compressed with `c`: the codec bits, batch
// length, record count, max timestamp (when given) and CRC are set anew.
result<void> append_rebuilt(bytes& out, bytes_view hdr, bytes_view records, int32_t count,
                            compression c, std::optional<int> level,
                            std::optional<int64_t> max_ts) {
    bytes packed;
    bytes_view body = records;
    if (c != compression::none) {
        auto z = compress(c, records, level);
        if (!z) return z.err();
        packed = std::move(*z);
        body = packed;
    }
    const size_t at = out.size();
    out.insert(out.end(), hdr.begin(), hdr.begin() + static_cast<ptrdiff_t>(batch_header_size));
    out.insert(out.end(), body.begin(), body.end());
    uint8_t* p = out.data() + at;
    const auto attrs = load_be<int16_t>(p + batch_attributes_offset);
    store_be<int16_t>(p + batch_attributes_offset,
                      static_cast<int16_t>((attrs & ~batch_header::codec_mask) |
                                           static_cast<int16_t>(c)));
    if (max_ts) store_be<int64_t>(p + batch_max_timestamp_offset, *max_ts);
    store_crc_and_lengths(p, batch_header_size + body.size(), count);
    return {};
}

}  // namespace

result<int32_t> filter_batch(bytes_view batch, const std::function<bool(const record_view&)>& keep,
                             bytes& out) {
    auto h = read_batch_header(batch);
    if (!h || h->size_bytes() > batch.size()) return {errc::corrupt, "truncated record batch"};
    bytes scratch;
    auto records = batch_records(batch, *h, scratch);
    if (!records) return {errc::corrupt, records.err().message};
    bytes kept_records;
    int32_t kept = 0;
    int64_t max_ts = INT64_MIN;  // kept records set it; only used when one is kept
    bool ok = walk_records(*records, *h, [&](const record_view& r, bytes_view raw) {
        if (!keep(r)) return true;
        kept_records.insert(kept_records.end(), raw.begin(), raw.end());
        max_ts = std::max(max_ts, r.timestamp);
        ++kept;
        return true;
    });
    if (!ok) return {errc::corrupt, "malformed records in batch"};
    const int32_t dropped = h->record_count - kept;
    if (kept == 0) return dropped;
    if (dropped == 0) {
        out.insert(out.end(), batch.begin(),
                   batch.begin() + static_cast<ptrdiff_t>(h->size_bytes()));
        return 0;
    }
    // A LogAppendTime batch carries the broker's time in max_timestamp; keep it.
    const bool create = h->ts_type() == timestamp_type::create_time;
    if (auto r = append_rebuilt(out, batch, kept_records, kept, h->codec(), std::nullopt,
                                create ? std::optional(max_ts) : std::nullopt);
        !r)
        return r.err();
    return dropped;
}

namespace {

// Returns the largest record timestamp; on a record's fault, `bad` is its index.
result<int64_t> check_records(bytes_view records, const batch_header& h, const batch_limits& lim,
                              int32_t& bad) {
    cursor c{records.data(), records.data() + records.size()};
    int64_t max_ts = no_record_timestamp;
    for (int32_t i = 0; i < h.record_count; ++i) {
        bad = i;
        int32_t len = c.varint();
        if (!c.ok || len < 0 || len > c.end - c.p)
            return {errc::invalid_record, fmt::format("record {} has a bad length", i)};
        cursor rc{c.p, c.p + len};
        c.p += len;
        rc.p += 1;
        if (rc.p > rc.end) return {errc::invalid_record, fmt::format("record {} is empty", i)};
        const int64_t ts = h.base_timestamp + rc.varlong();
        if (rc.ok) max_ts = std::max(max_ts, ts);
        if (rc.ok && ts != no_record_timestamp && (ts < lim.min_timestamp || ts > lim.max_timestamp))
            return {errc::invalid_timestamp,
                    fmt::format("record {} has timestamp {}, outside [{}, {}] "
                                "(message.timestamp.before.max.ms and after.max.ms)",
                                i, ts, lim.min_timestamp, lim.max_timestamp)};
        int32_t delta = rc.varint();
        if (rc.ok && delta != i)
            return {errc::invalid_record,
                    fmt::format("record {} has offset delta {}, expected {}", i, delta, i)};
        auto key = rc.field();
        rc.field();  // the value: any size its batch allows
        if (rc.ok && !key && lim.require_keys)
            return {errc::invalid_record,
                    fmt::format("record {} has no key, which a compacted topic requires", i)};
        int32_t nh = rc.varint();
        for (int32_t k = 0; k < nh && rc.ok; ++k) {
            if (!rc.field()) rc.ok = false;  // header keys are never null
            rc.field();
        }
        if (!rc.ok || nh < 0 || rc.p != rc.end)
            return {errc::invalid_record, fmt::format("record {} is malformed", i)};
    }
    bad = -1;
    if (c.p != c.end)
        return {errc::invalid_record,
                fmt::format("batch holds bytes after its {} records", h.record_count)};
    return max_ts;
}

}  // namespace

result<std::vector<validated_batch>> validate_batches(bytes_view payload, const batch_limits& lim,
                                                      batch_fault* fault) {
    std::vector<validated_batch> out;
    size_t pos = 0;
    int32_t records_before = 0;  // in the batches before this one
    if (payload.empty()) return {errc::invalid_record, "produce request holds no record batch"};
    while (pos < payload.size()) {
        bytes_view rest = payload.subspan(pos);
        auto h = read_batch_header(rest);
        if (!h) return {errc::corrupt, "truncated record batch header"};
        if (h->magic != 2)
            return {errc::invalid_record,
                    fmt::format("record batch magic {} is not supported, only 2", h->magic)};
        if (h->batch_length < static_cast<int32_t>(batch_header_size - batch_log_overhead))
            return {errc::corrupt, fmt::format("batch length {} is too small", h->batch_length)};
        if (h->size_bytes() > lim.max_batch_bytes)
            return {errc::too_large,
                    fmt::format("record batch is {} bytes, above max.message.bytes {}",
                                h->size_bytes(), lim.max_batch_bytes)};
        if (h->size_bytes() > rest.size())
            return {errc::corrupt, fmt::format("record batch claims {} bytes but {} remain",
                                               h->size_bytes(), rest.size())};
        bytes_view batch = rest.first(h->size_bytes());
        if (!batch_crc_ok(batch)) return {errc::corrupt, "record batch CRC mismatch"};
        if (!is_known_compression(h->attributes & batch_header::codec_mask))
            return {errc::unsupported, fmt::format("compression codec {} is unknown",
                                                   h->attributes & batch_header::codec_mask)};
        if (h->codec() == compression::zstd && !lim.allow_zstd)
            return {errc::unsupported, "zstd batches need Produce v7 or later"};
        if (h->is_control()) return {errc::invalid_record, "producers may not write control batches"};
        if (h->record_count <= 0 || h->last_offset_delta != h->record_count - 1)
            return {errc::invalid_record,
                    fmt::format("record count {} does not match last offset delta {}",
                                h->record_count, h->last_offset_delta)};
        bytes scratch;
        auto records = batch_records(batch, *h, scratch, lim.max_decompressed_bytes);
        if (!records) {
            // Kafka refuses records it cannot read as invalid (InvalidRecordException).
            if (records.code() == errc::corrupt) return {errc::invalid_record, records.err().message};
            return records.err();
        }
        int32_t bad = -1;
        auto max_ts = check_records(*records, *h, lim, bad);
        if (!max_ts) {
            if (fault && bad >= 0) fault->record_index = records_before + bad;
            return max_ts.err();
        }
        out.push_back({pos, *h, *max_ts});
        records_before += h->record_count;
        pos += h->size_bytes();
    }
    return out;
}

void set_base_offset(uint8_t* batch, int64_t base_offset) { store_be<int64_t>(batch, base_offset); }

void set_log_append_time(uint8_t* batch, size_t size, int64_t append_time_ms) {
    int16_t attrs = load_be<int16_t>(batch + batch_attributes_offset);
    store_be<int16_t>(batch + batch_attributes_offset, static_cast<int16_t>(attrs | 0x8));
    store_be<int64_t>(batch + batch_max_timestamp_offset, append_time_ms);
    store_crc(batch, size);
}

void set_create_time(uint8_t* batch, size_t size, int64_t max_timestamp) {
    const auto attrs = load_be<int16_t>(batch + batch_attributes_offset);
    const auto create = static_cast<int16_t>(attrs & ~0x8);
    if (attrs == create && load_be<int64_t>(batch + batch_max_timestamp_offset) == max_timestamp)
        return;
    store_be<int16_t>(batch + batch_attributes_offset, create);
    store_be<int64_t>(batch + batch_max_timestamp_offset, max_timestamp);
    store_crc(batch, size);
}

result<bytes> recompress_batches(bytes_view payload, std::vector<validated_batch>& batches,
                                 compression target, std::optional<int> level,
                                 size_t max_batch_bytes) {
    bytes out;
    out.reserve(payload.size());
    for (auto& vb : batches) {
        const bytes_view batch = payload.subspan(vb.position, vb.header.size_bytes());
        const size_t at = out.size();
        if (vb.header.codec() == target) {
            out.insert(out.end(), batch.begin(), batch.end());
        } else {
            bytes scratch;
            auto records = batch_records(batch, vb.header, scratch);
            if (!records) return records.err();
            if (auto r = append_rebuilt(out, batch, *records, vb.header.record_count, target,
                                        level, std::nullopt);
                !r)
                return r.err();
        }
        vb.position = at;
        vb.header = *read_batch_header(bytes_view(out).subspan(at));
        if (vb.header.size_bytes() > max_batch_bytes)
            return {errc::too_large,
                    fmt::format("record batch is {} bytes as {} (the topic's compression.type), "
                                "above max.message.bytes {}",
                                vb.header.size_bytes(), compression_name(target), max_batch_bytes)};
    }
    return out;
}

}  // namespace sluice::protocol

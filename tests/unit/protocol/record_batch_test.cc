// Produce-side validation of Kafka v2 record batches: what real producers send is
// accepted, and corrupt, truncated and oversized input is refused with the error a
// client is answered with.

#include "protocol/record_batch.h"

#include <gtest/gtest.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "support/batch_builder.h"
#include "support/compressed_batch.h"

namespace sluice::protocol {
namespace {

using sluice::testing::build_batch;
using sluice::testing::make_batch;
using sluice::testing::test_record;

void fix_crc(bytes& b) {
    store_be<uint32_t>(b.data() + batch_crc_offset,
                       crc32c(b.data() + batch_attributes_offset, b.size() - batch_attributes_offset));
}

TEST(record_batch, accepts_batches_and_reports_their_headers) {
    bytes payload = make_batch(3, 1000);
    testing::append_to(payload, make_batch(2, 2000));
    auto r = validate_batches(payload, {});
    ASSERT_TRUE(r.ok()) << r.err().message;
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].position, 0u);
    EXPECT_EQ((*r)[0].header.record_count, 3);
    EXPECT_EQ((*r)[1].position, make_batch(3, 1000).size());
    EXPECT_EQ((*r)[1].header.base_timestamp, 2000);
}

TEST(record_batch, records_decode_with_keys_values_headers_and_nulls) {
    bytes b = build_batch({{"k1", "v1", 10, {{"h", "x"}}}, {std::nullopt, std::nullopt, 15, {}}});
    ASSERT_TRUE(validate_batches(b, {}).ok());
    std::vector<record_view> seen;
    ASSERT_TRUE(for_each_record(b, [&](const record_view& r) {
        seen.push_back(r);
        return true;
    }));
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(std::string(seen[0].key->begin(), seen[0].key->end()), "k1");
    EXPECT_EQ(seen[0].headers.size(), 1u);
    EXPECT_EQ(seen[1].timestamp, 15);
    EXPECT_EQ(seen[1].offset, 1);
    EXPECT_FALSE(seen[1].key.has_value());
    EXPECT_FALSE(seen[1].value.has_value());
}

TEST(record_batch, crc_mismatch_is_corrupt) {
    bytes b = make_batch(2, 0);
    b.back() ^= 0x01;  // a value byte, covered by the CRC
    auto r = validate_batches(b, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::corrupt);
}

TEST(record_batch, truncated_input_is_corrupt_at_every_length) {
    bytes b = make_batch(2, 0);
    for (size_t n = 1; n < b.size(); ++n) {
        auto r = validate_batches(bytes_view(b).first(n), {});
        ASSERT_FALSE(r.ok()) << n;
        EXPECT_EQ(r.code(), errc::corrupt) << n;
    }
    EXPECT_FALSE(validate_batches(bytes_view(), {}).ok());
}

TEST(record_batch, batch_over_max_message_bytes_is_too_large) {
    bytes b = make_batch(4, 0, 1000);
    batch_limits lim;
    lim.max_batch_bytes = b.size() - 1;
    auto r = validate_batches(b, lim);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::too_large);
    lim.max_batch_bytes = b.size();
    EXPECT_TRUE(validate_batches(b, lim).ok());
}

TEST(record_batch, a_record_is_bounded_only_by_its_batch) {
    // As in Kafka: a key or value may take (almost) all of max.message.bytes.
    batch_limits lim;
    lim.max_batch_bytes = 1 << 20;
    const std::string big((1 << 20) - 200, 'v');
    const bytes value_batch = build_batch({{"k", big, 0, {}}});
    ASSERT_LE(value_batch.size(), lim.max_batch_bytes);
    auto v = validate_batches(value_batch, lim);
    ASSERT_TRUE(v.ok()) << v.err().message;
    const bytes key_batch = build_batch({{big, "v", 0, {}}});
    EXPECT_TRUE(validate_batches(key_batch, lim).ok());
    // Over the batch limit, the batch is too large; no record limit of its own.
    lim.max_batch_bytes = value_batch.size() - 1;
    EXPECT_EQ(validate_batches(value_batch, lim).code(), errc::too_large);
    lim.max_batch_bytes = 4 << 20;
    const std::string three_mib(3 << 20, 'x');
    EXPECT_TRUE(validate_batches(build_batch({{"k", three_mib, 0, {}}}), lim).ok());
}

TEST(record_batch, a_batch_marked_gzip_whose_records_are_not_is_invalid) {
    bytes b = make_batch(1, 0);
    store_be<int16_t>(b.data() + batch_attributes_offset, 1);  // gzip
    fix_crc(b);
    auto r = validate_batches(b, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::invalid_record);
    EXPECT_EQ(r.err().message.rfind("gzip batch does not decompress", 0), 0u) << r.err().message;
}

TEST(record_batch, wrong_magic_count_or_deltas_are_invalid_records) {
    bytes magic = make_batch(1, 0);
    magic[16] = 1;
    EXPECT_EQ(validate_batches(magic, {}).code(), errc::invalid_record);

    bytes count = make_batch(2, 0);
    store_be<int32_t>(count.data() + 57, 3);  // claims three records, holds two
    fix_crc(count);
    EXPECT_EQ(validate_batches(count, {}).code(), errc::invalid_record);

    bytes delta = make_batch(2, 0);
    store_be<int32_t>(delta.data() + 23, 5);  // last offset delta disagrees with the count
    fix_crc(delta);
    EXPECT_EQ(validate_batches(delta, {}).code(), errc::invalid_record);

    bytes control = make_batch(1, 0);
    store_be<int16_t>(control.data() + batch_attributes_offset, 0x20);
    fix_crc(control);
    EXPECT_EQ(validate_batches(control, {}).code(), errc::invalid_record);
}

TEST(record_batch, max_timestamp_is_recomputed_from_the_records) {
    // Whatever the header says (sarama: off by a millisecond, or -1; librdkafka: 0 over
    // records without timestamps), the largest record timestamp is what counts, as in
    // Kafka, with -1 (no timestamp) as the least.
    struct example {
        int64_t header;
        std::vector<int64_t> records;
        int64_t max;
    };
    for (const auto& e : std::vector<example>{{5, {10, 30}, 30},
                                              {-1, {30, 10}, 30},
                                              {0, {-1, -1}, -1},
                                              {31, {10, 30}, 30},
                                              {-1, {-5}, -1}}) {
        testing::batch_options opt;
        opt.max_timestamp = e.header;
        std::vector<test_record> recs;
        for (auto ts : e.records) recs.push_back({"k", "v", ts, {}});
        bytes b = build_batch(recs, opt);
        auto r = validate_batches(b, {});
        ASSERT_TRUE(r.ok()) << r.err().message;
        EXPECT_EQ((*r)[0].header.max_timestamp, e.header);
        EXPECT_EQ((*r)[0].max_record_timestamp, e.max) << "header " << e.header;
        // Stored as Kafka stores it: the header's field and a CRC that match.
        set_create_time(b.data(), b.size(), (*r)[0].max_record_timestamp);
        EXPECT_EQ(read_batch_header(b)->max_timestamp, e.max);
        EXPECT_TRUE(batch_crc_ok(b));
        EXPECT_TRUE(validate_batches(b, {}).ok());
    }
}

TEST(record_batch, create_time_clears_a_log_append_time_mark_and_leaves_exact_batches_alone) {
    testing::batch_options opt;
    opt.log_append_time = true;
    bytes marked = build_batch({{"a", "1", 10, {}}}, opt);
    set_create_time(marked.data(), marked.size(), 10);
    EXPECT_EQ(read_batch_header(marked)->ts_type(), timestamp_type::create_time);
    EXPECT_TRUE(batch_crc_ok(marked));
    const bytes exact = build_batch({{"a", "1", 10, {}}, {"b", "2", 20, {}}});
    bytes copy = exact;
    set_create_time(copy.data(), copy.size(), 20);
    EXPECT_EQ(copy, exact);
}

TEST(record_batch, a_faulty_record_is_named_by_its_index_in_the_payload) {
    batch_limits lim;
    lim.require_keys = true;
    bytes payload = build_batch({{"a", "1", 0, {}}, {"b", "2", 0, {}}});
    testing::append_to(payload, build_batch({{"c", "3", 0, {}}, {std::nullopt, "4", 0, {}}}));
    batch_fault fault;
    auto r = validate_batches(payload, lim, &fault);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::invalid_record);
    EXPECT_EQ(r.err().message, "record 1 has no key, which a compacted topic requires");
    EXPECT_EQ(fault.record_index, 3);  // the fourth record of the payload
    // A fault of a batch as a whole names none.
    bytes corrupt = make_batch(2, 0);
    corrupt.back() ^= 1;
    batch_fault none;
    EXPECT_EQ(validate_batches(corrupt, {}, &none).code(), errc::corrupt);
    EXPECT_FALSE(none.record_index.has_value());
}

TEST(record_batch, garbage_after_a_good_batch_is_refused) {
    bytes b = make_batch(1, 0);
    b.insert(b.end(), {1, 2, 3});
    EXPECT_FALSE(validate_batches(b, {}).ok());
}

TEST(record_batch, log_append_time_sets_the_type_and_keeps_the_crc_valid) {
    bytes b = make_batch(2, 100);
    set_base_offset(b.data(), 42);
    set_log_append_time(b.data(), b.size(), 99999);
    auto h = read_batch_header(b);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->base_offset, 42);
    EXPECT_EQ(h->ts_type(), timestamp_type::log_append_time);
    EXPECT_EQ(h->max_timestamp, 99999);
    EXPECT_TRUE(batch_crc_ok(b));
}

}  // namespace
}  // namespace sluice::protocol

namespace sluice::protocol {
namespace {

using sluice::testing::build_batch;

std::string str(const std::optional<bytes_view>& v) {
    return v ? std::string(v->begin(), v->end()) : std::string("<null>");
}

struct flat_record {
    int64_t offset;
    int64_t timestamp;
    std::string key;
    std::string value;
    std::vector<std::pair<std::string, std::string>> headers;
    bool operator==(const flat_record&) const = default;
};

std::vector<flat_record> flatten(bytes_view b) {
    std::vector<flat_record> out;
    EXPECT_TRUE(for_each_record(b, [&](const record_view& r) {
        flat_record f{r.offset, r.timestamp, str(r.key), str(r.value), {}};
        for (const auto& [k, v] : r.headers) f.headers.emplace_back(str(k), str(v));
        out.push_back(std::move(f));
        return true;
    }));
    return out;
}

TEST(filter_batch, drops_records_and_keeps_offsets_timestamps_and_headers) {
    bytes b = build_batch({{"a", "1", 100, {{"h", "x"}}},
                           {"b", "2", 130, {}},
                           {"a", std::nullopt, 120, {{"t", "y"}}},
                           {"c", "4", 110, {}}},
                          {.base_offset = 40});
    const auto before = flatten(b);
    bytes out = {0xee};  // filter_batch appends after what is there
    auto r = filter_batch(
        b, [](const record_view& rec) { return rec.offset % 2 == 0; }, out);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(*r, 2);
    ASSERT_EQ(out[0], 0xee);
    bytes_view nb = bytes_view(out).subspan(1);
    auto h = *read_batch_header(nb);
    EXPECT_EQ(h.size_bytes(), nb.size());
    EXPECT_EQ(h.base_offset, 40);
    EXPECT_EQ(h.last_offset_delta, 3);  // the original last offset stays
    EXPECT_EQ(h.record_count, 2);
    EXPECT_EQ(h.base_timestamp, 100);
    EXPECT_EQ(h.max_timestamp, 120);  // the largest kept record's
    EXPECT_TRUE(batch_crc_ok(nb));
    // Byte-exact CRC over the rewritten bytes.
    EXPECT_EQ(h.crc,
              crc32c(nb.data() + batch_attributes_offset, nb.size() - batch_attributes_offset));
    auto after = flatten(nb);
    ASSERT_EQ(after.size(), 2u);
    EXPECT_EQ(after[0], before[0]);
    EXPECT_EQ(after[1], before[2]);
    EXPECT_EQ(after[1].value, "<null>");
}

TEST(filter_batch, keeping_all_copies_the_batch_and_keeping_none_drops_it) {
    bytes b = build_batch({{"a", "1", 5, {}}, {"b", "2", 6, {}}});
    bytes out;
    auto all = filter_batch(
        b, [](const record_view&) { return true; }, out);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(*all, 0);
    EXPECT_EQ(out, b);
    bytes none_out;
    auto none = filter_batch(
        b, [](const record_view&) { return false; }, none_out);
    ASSERT_TRUE(none.ok());
    EXPECT_EQ(*none, 2);
    EXPECT_TRUE(none_out.empty());
}

TEST(filter_batch, log_append_time_batches_keep_their_max_timestamp) {
    bytes b = build_batch({{"a", "1", 5, {}}, {"b", "2", 6, {}}},
                          {.log_append_time = true, .max_timestamp = 999});
    bytes out;
    ASSERT_TRUE(filter_batch(
                    b, [](const record_view& r) { return r.offset == 1; }, out)
                    .ok());
    auto h = *read_batch_header(out);
    EXPECT_EQ(h.max_timestamp, 999);
    EXPECT_TRUE(batch_crc_ok(out));
}

TEST(filter_batch, compressed_batches_keep_their_codec_and_records) {
    const bytes plain = build_batch({{"a", "1", 5, {{"h", "x"}}}, {"b", "2", 6, {}}, {"a", "3", 7, {}}});
    for (auto c : testing::all_codecs) {
        bytes b = testing::compress_batch(plain, c);
        bytes out;
        auto r = filter_batch(
            b, [](const record_view& v) { return v.offset != 0; }, out);
        ASSERT_TRUE(r.ok()) << r.err().message;
        EXPECT_EQ(*r, 1);
        auto h = *read_batch_header(out);
        EXPECT_EQ(h.codec(), c);
        EXPECT_EQ(h.record_count, 2);
        EXPECT_EQ(h.max_timestamp, 7);
        EXPECT_TRUE(batch_crc_ok(out));
        std::vector<std::pair<int64_t, std::string>> seen;
        ASSERT_TRUE(for_each_record(out, [&](const record_view& v) {
            seen.emplace_back(v.offset, std::string(v.value->begin(), v.value->end()));
            return true;
        }));
        EXPECT_EQ(seen, (std::vector<std::pair<int64_t, std::string>>{{1, "2"}, {2, "3"}}));
    }
}

TEST(record_batch, compressed_batches_validate_and_read_back) {
    const bytes plain = build_batch({{"k1", "v1", 10, {{"h", "x"}}}, {std::nullopt, "v2", 25, {}}});
    for (auto c : testing::all_codecs) {
        bytes b = testing::compress_batch(plain, c);
        auto v = validate_batches(b, {});
        ASSERT_TRUE(v.ok()) << compression_name(c) << ": " << v.err().message;
        EXPECT_EQ((*v)[0].header.codec(), c);
        EXPECT_EQ((*v)[0].max_record_timestamp, 25);
        std::vector<std::string> values;
        ASSERT_TRUE(for_each_record(b, [&](const record_view& r) {
            values.emplace_back(r.value->begin(), r.value->end());
            EXPECT_EQ(r.headers.size(), r.offset == 0 ? 1u : 0u);
            return true;
        }));
        EXPECT_EQ(values, (std::vector<std::string>{"v1", "v2"}));
    }
}

TEST(record_batch, compressed_records_are_checked_like_plain_ones) {
    // Offset delta 5 for the second record, inside the compressed bytes.
    bytes plain = build_batch({{"a", "1", 5, {}}, {"b", "2", 6, {}}});
    bytes bad_delta = plain;
    // The second record: length, attributes, timestamp delta 1, offset delta 1 -> 5.
    const size_t second = batch_header_size + 1 + plain[batch_header_size] / 2;
    ASSERT_EQ(bad_delta[second + 3], 2);  // zigzag(1)
    bad_delta[second + 3] = 10;           // zigzag(5)
    for (auto c : testing::all_codecs) {
        batch_fault fault;
        auto r = validate_batches(testing::compress_batch(bad_delta, c), {}, &fault);
        ASSERT_FALSE(r.ok()) << compression_name(c);
        EXPECT_EQ(r.code(), errc::invalid_record);
        EXPECT_EQ(fault.record_index, 1);
        // A record count above what the compressed bytes hold.
        bytes more = testing::compress_batch(plain, c);
        store_be<int32_t>(more.data() + batch_record_count_offset, 3);
        store_be<int32_t>(more.data() + 23, 2);  // last offset delta
        fix_crc(more);
        EXPECT_EQ(validate_batches(more, {}).code(), errc::invalid_record) << compression_name(c);
    }
}

TEST(record_batch, batches_that_do_not_decompress_or_decompress_too_far_are_refused) {
    const bytes plain = make_batch(200, 1000, 1000);  // ~200 KB of repetitive values
    bytes junk(100, 0x5a);
    for (auto c : testing::all_codecs) {
        auto r = validate_batches(testing::with_body(plain, junk, c), {});
        ASSERT_FALSE(r.ok()) << compression_name(c);
        EXPECT_EQ(r.code(), errc::invalid_record) << compression_name(c);
        EXPECT_NE(r.err().message.find("does not decompress"), std::string::npos);
        batch_limits lim;
        lim.max_decompressed_bytes = 100 * 1000;
        auto bomb = validate_batches(testing::compress_batch(plain, c), lim);
        ASSERT_FALSE(bomb.ok()) << compression_name(c);
        EXPECT_EQ(bomb.code(), errc::too_large) << compression_name(c);
    }
    bytes unknown = plain;
    unknown[batch_attributes_offset + 1] |= 0x5;
    fix_crc(unknown);
    EXPECT_EQ(validate_batches(unknown, {}).code(), errc::unsupported);
    batch_limits no_zstd;
    no_zstd.allow_zstd = false;
    EXPECT_EQ(validate_batches(testing::compress_batch(plain, compression::zstd), no_zstd).code(),
              errc::unsupported);
    EXPECT_TRUE(validate_batches(testing::compress_batch(plain, compression::lz4), no_zstd).ok());
}

TEST(recompress_batches, batches_of_other_codecs_get_the_target_codec) {
    bytes payload = build_batch({{"a", "1", 5, {}}, {"b", "2", 6, {}}});
    testing::append_to(payload, testing::compress_batch(make_batch(3, 100), compression::gzip));
    testing::append_to(payload, testing::compress_batch(make_batch(2, 200), compression::zstd));
    for (auto target : {compression::zstd, compression::none, compression::snappy}) {
        auto v = *validate_batches(payload, {});
        auto out = recompress_batches(payload, v, target, std::nullopt, 1 << 20);
        ASSERT_TRUE(out.ok()) << out.err().message;
        auto again = validate_batches(*out, {});
        ASSERT_TRUE(again.ok()) << again.err().message;
        ASSERT_EQ(again->size(), 3u);
        int n = 0;
        for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ((*again)[i].header.codec(), target);
            EXPECT_EQ(v[i].position, (*again)[i].position);  // positions updated
            EXPECT_EQ(v[i].header.crc, (*again)[i].header.crc);
            ASSERT_TRUE(for_each_record(
                bytes_view(*out).subspan(v[i].position, v[i].header.size_bytes()),
                [&](const record_view&) {
                    ++n;
                    return true;
                }));
        }
        EXPECT_EQ(n, 7);
    }
    // A batch that grows past max.message.bytes once recompressed is too large.
    const bytes big = testing::compress_batch(make_batch(50, 100, 1000), compression::zstd);
    auto v = *validate_batches(big, {});
    auto r = recompress_batches(big, v, compression::none, std::nullopt, 10000);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::too_large);
    EXPECT_NE(r.err().message.find("as none (the topic's compression.type), above max.message.bytes 10000"),
              std::string::npos)
        << r.err().message;
}

TEST(record_batch, keyless_records_are_refused_when_keys_are_required) {
    bytes b = build_batch({{"a", "1", 5, {}}, {std::nullopt, "2", 6, {}}});
    EXPECT_TRUE(validate_batches(b, {}).ok());
    batch_limits lim;
    lim.require_keys = true;
    auto r = validate_batches(b, lim);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::invalid_record);
    EXPECT_TRUE(validate_batches(build_batch({{"a", std::nullopt, 5, {}}}), lim).ok());
}

}  // namespace
}  // namespace sluice::protocol

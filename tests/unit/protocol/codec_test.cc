// Every supported API version round-trips through the one declaration per message,
// and a few frames are checked byte for byte against the wire format.

#include <gtest/gtest.h>

#include <algorithm>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/create_topics.h"
#include "protocol/messages/delete_topics.h"
#include "protocol/messages/describe_cluster.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/fetch.h"
#include "protocol/messages/list_offsets.h"
#include "protocol/messages/metadata.h"
#include "protocol/messages/produce.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;
using test::mutate_and_decode;

uuid some_uuid() {
    uuid u{};
    for (size_t i = 0; i < u.size(); ++i) u[i] = static_cast<uint8_t>(i * 17 + 1);
    return u;
}

TEST(codec, produce_all_versions) {
    produce_request req;
    req.transactional_id = std::nullopt;
    req.acks = -1;
    req.timeout_ms = 30000;
    const bytes batches{1, 2, 3};  // records are a view: the bytes outlive the request
    req.topics.push_back({"orders", {{0, bytes_view(batches)}, {3, std::nullopt}}});
    expect_round_trip(api_key::produce, 0, 12, req);

    produce_response resp;
    produce_response::partition p;
    p.index = 2;
    p.error_code = 87;
    p.base_offset = 42;
    p.log_append_time_ms = 1700000000000;
    p.log_start_offset = 0;
    p.record_errors.push_back({0, "too big"});
    p.error_message = "value too large";
    resp.responses.push_back({"orders", {p}});
    resp.throttle_time_ms = 5;
    expect_round_trip(api_key::produce, 0, 12, resp);
}

// Produce payloads are not copied out of the request: the handler patches offsets into
// the bytes it received.
TEST(codec, produce_records_are_a_view_into_the_request) {
    const bytes batches(1000, 7);
    produce_request req;
    req.topics.push_back({"orders", {{1, bytes_view(batches)}}});
    for (int16_t v : {0, 2, 3, 9}) {
        bytes encoded;
        encode_message(encoded, v, is_flexible(static_cast<int16_t>(api_key::produce), v), req);
        produce_request decoded;
        ASSERT_TRUE(decode_message(
            encoded, v, is_flexible(static_cast<int16_t>(api_key::produce), v), decoded));
        ASSERT_EQ(decoded.topics.size(), 1u);
        ASSERT_EQ(decoded.topics[0].partitions.size(), 1u);
        const auto& got = decoded.topics[0].partitions[0].records;
        ASSERT_TRUE(got.has_value());
        EXPECT_TRUE(std::equal(got->begin(), got->end(), batches.begin(), batches.end()));
        EXPECT_GE(got->data(), encoded.data());
        EXPECT_LE(got->data() + got->size(), encoded.data() + encoded.size());
    }
}

TEST(codec, fetch_all_versions) {
    fetch_request req;
    req.cluster_id = "cluster-1";
    req.max_wait_ms = 500;
    req.min_bytes = 1;
    req.max_bytes = 1 << 20;
    req.isolation_level = 1;
    fetch_request::topic t;
    t.name = "orders";
    t.topic_id = some_uuid();
    t.partitions.push_back({0, 0, 100, -1, 0, 1 << 20});
    req.topics.push_back(t);
    req.forgotten_topics.push_back({"gone", some_uuid(), {1, 2}});
    req.rack_id = "rack-a";
    expect_round_trip(api_key::fetch, 0, 13, req);

    fetch_response resp;
    fetch_response::partition p;
    p.partition_index = 0;
    p.high_watermark = 10;
    p.last_stable_offset = 10;
    p.log_start_offset = 0;
    p.aborted_transactions = std::vector<fetch_response::aborted_transaction>{{7, 3}};
    p.records.data = bytes(100, 0xab);
    resp.responses.push_back({"orders", some_uuid(), {p}});
    expect_round_trip(api_key::fetch, 0, 13, resp);
}

TEST(codec, fetch_tagged_cluster_id_only_in_flexible_versions) {
    fetch_request req;
    req.cluster_id = "abc";
    bytes v11, v12;
    encode_message(v11, 11, false, req);
    encode_message(v12, 12, true, req);
    fetch_request back;
    ASSERT_TRUE(decode_message(v11, 11, false, back));
    EXPECT_FALSE(back.cluster_id.has_value());
    ASSERT_TRUE(decode_message(v12, 12, true, back));
    EXPECT_EQ(back.cluster_id, "abc");
}

TEST(codec, unknown_tagged_fields_are_skipped) {
    // ApiVersions v3 request: two compact strings, then a tag section holding an
    // unknown tag 5 with three bytes of payload.
    bytes wire = {0x02, 'a', 0x02, '1', 0x01, 0x05, 0x03, 9, 9, 9};
    api_versions_request req;
    ASSERT_TRUE(decode_message(wire, 3, true, req));
    EXPECT_EQ(req.client_software_name, "a");
    EXPECT_EQ(req.client_software_version, "1");
}

TEST(codec, list_offsets_all_versions) {
    list_offsets_request req;
    req.replica_id = -1;
    req.isolation_level = 0;
    req.topics.push_back({"t", {{1, -1, -2, 1}}});
    expect_round_trip(api_key::list_offsets, 0, 8, req);
    list_offsets_response resp;
    list_offsets_response::partition p;
    p.partition_index = 1;
    p.old_style_offsets = {5};
    p.timestamp = 99;
    p.offset = 5;
    p.leader_epoch = 0;
    resp.topics.push_back({"t", {p}});
    expect_round_trip(api_key::list_offsets, 0, 8, resp);
}

TEST(codec, metadata_all_versions) {
    metadata_request req;
    req.topics = std::vector<metadata_request::topic>{{some_uuid(), "a"}, {{}, "b"}};
    req.allow_auto_topic_creation = false;
    expect_round_trip(api_key::metadata, 0, 12, req);
    metadata_request all;
    all.topics = std::nullopt;
    expect_round_trip(api_key::metadata, 1, 12, all);

    metadata_response resp;
    resp.brokers.push_back({0, "127.0.0.1", 9092, std::nullopt});
    resp.brokers.push_back({1, "localhost", 9093, "r1"});
    resp.cluster_id = "cid";
    resp.controller_id = 0;
    metadata_response::topic t;
    t.name = "a";
    t.topic_id = some_uuid();
    t.partitions.push_back({0, 0, 1, 0, {1}, {1}, {}});
    resp.topics.push_back(t);
    expect_round_trip(api_key::metadata, 0, 12, resp);
}

TEST(codec, metadata_v0_request_bytes) {
    // v0: array of classic strings, nothing else.
    metadata_request req;
    req.topics = std::vector<metadata_request::topic>{{{}, "ab"}};
    bytes out;
    encode_message(out, 0, false, req);
    EXPECT_EQ(out, (bytes{0, 0, 0, 1, 0, 2, 'a', 'b'}));
    // v9 (flexible): compact array (n+1), compact string (n+1), struct tags, top tags.
    bytes flex;
    encode_message(flex, 9, true, req);
    EXPECT_EQ(flex, (bytes{0x02, 0x03, 'a', 'b', 0x00, 0x01, 0x00, 0x00, 0x00}));
}

TEST(codec, admin_apis_all_versions) {
    create_topics_request ct;
    create_topics_request::topic t;
    t.name = "new";
    t.num_partitions = 8;
    t.replication_factor = 3;
    t.configs.push_back({"segment.bytes", "1048576"});
    t.configs.push_back({"cleanup.policy", std::nullopt});
    ct.topics.push_back(t);
    ct.validate_only = true;
    expect_round_trip(api_key::create_topics, 0, 7, ct);

    create_topics_response ctr;
    create_topics_response::topic r;
    r.name = "new";
    r.topic_id = some_uuid();
    r.error_code = 36;
    r.error_message = "exists";
    r.topic_config_error_code = 40;
    r.num_partitions = 8;
    r.replication_factor = 1;
    r.configs = std::vector<create_topics_response::config>{{"a", "b", false, 5, false}};
    ctr.topics.push_back(r);
    expect_round_trip(api_key::create_topics, 0, 7, ctr);

    delete_topics_request dt;
    dt.topics.push_back({"x", some_uuid()});
    dt.topic_names = {"x", "y"};
    dt.timeout_ms = 1000;
    expect_round_trip(api_key::delete_topics, 0, 6, dt);
    delete_topics_response dtr;
    dtr.responses.push_back({"x", some_uuid(), 3, "unknown"});
    expect_round_trip(api_key::delete_topics, 0, 6, dtr);

    describe_cluster_request dc;
    dc.endpoint_type = 1;
    expect_round_trip(api_key::describe_cluster, 0, 1, dc);
    describe_cluster_response dcr;
    dcr.cluster_id = "cid";
    dcr.brokers.push_back({0, "h", 1, std::nullopt});
    expect_round_trip(api_key::describe_cluster, 0, 1, dcr);

    api_versions_request av;
    av.client_software_name = "x";
    av.client_software_version = "1";
    expect_round_trip(api_key::api_versions, 0, 3, av);
    api_versions_response avr;
    avr.api_keys.push_back({0, 3, 9});
    expect_round_trip(api_key::api_versions, 0, 3, avr);
}

TEST(codec, describe_configs_all_versions) {
    describe_configs_request req;
    req.resources.push_back({resource_topic, "t", std::vector<std::string>{"segment.ms"}});
    req.resources.push_back({resource_broker, "0", std::nullopt});
    req.include_synonyms = true;
    req.include_documentation = true;
    expect_round_trip(api_key::describe_configs, 0, 4, req);
    describe_configs_response resp;
    describe_configs_response::result r;
    r.resource_type = resource_topic;
    r.resource_name = "t";
    r.configs.push_back({"segment.ms", "1000", false, false, source_topic, false,
                         {{"segment.ms", "1000", source_topic}}, 5, "doc"});
    resp.results.push_back(r);
    expect_round_trip(api_key::describe_configs, 0, 4, resp);
}

// Random corruption of every request type decodes or fails cleanly.
TEST(codec, corrupted_requests_fail_cleanly) {
    produce_request pr;
    const bytes batches(64, 1);
    pr.topics.push_back({"orders", {{0, bytes_view(batches)}, {1, std::nullopt}}});
    mutate_and_decode(api_key::produce, 3, 9, pr, 1);
    fetch_request fr;
    fr.topics.push_back({"orders", {}, {{0, -1, 5, -1, -1, 1024}}});
    mutate_and_decode(api_key::fetch, 4, 13, fr, 2);
    metadata_request mr;
    mr.topics = std::vector<metadata_request::topic>{{{}, "a"}, {{}, "bb"}};
    mutate_and_decode(api_key::metadata, 0, 12, mr, 3);
    list_offsets_request lr;
    lr.topics.push_back({"t", {{0, -1, -1, 1}}});
    mutate_and_decode(api_key::list_offsets, 0, 8, lr, 4);
    create_topics_request cr;
    cr.topics.push_back({"t", 3, 1, {{0, {1}}}, {{"segment.ms", "1"}}});
    mutate_and_decode(api_key::create_topics, 0, 7, cr, 5);
    delete_topics_request dr;
    dr.topics.push_back({"t", some_uuid()});
    dr.topic_names = {"t"};
    mutate_and_decode(api_key::delete_topics, 0, 6, dr, 6);
    describe_configs_request dc;
    dc.resources.push_back({resource_topic, "t", std::vector<std::string>{"a", "b"}});
    mutate_and_decode(api_key::describe_configs, 0, 4, dc, 7);
    api_versions_request av;
    av.client_software_name = "x";
    mutate_and_decode(api_key::api_versions, 0, 3, av, 8);
}

TEST(codec, forged_array_length_is_rejected_without_allocation) {
    // An int32 array count of 2^31-1 with four bytes left must fail, not reserve.
    bytes wire = {0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0};
    metadata_request req;
    EXPECT_FALSE(decode_message(wire, 1, false, req));
}

TEST(codec, request_header_client_id_length_below_minus_one_is_malformed) {
    // client_id is a classic nullable string: length -1 is null, -2 is no length at all.
    for (int16_t len : {int16_t{-1}, int16_t{-2}, int16_t{-32768}}) {
        bytes wire = {static_cast<uint8_t>(static_cast<uint16_t>(len) >> 8),
                      static_cast<uint8_t>(len & 0xff)};
        reader r(wire);
        request_header h;
        read_request_header_rest(r, h, false);
        EXPECT_EQ(r.ok(), len == -1) << len;
        EXPECT_FALSE(h.client_id.has_value()) << len;
    }
    bytes ok = {0, 2, 'i', 'd'};
    reader r(ok);
    request_header h;
    read_request_header_rest(r, h, false);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(h.client_id, "id");
}

TEST(codec, nullable_bytes_length_below_minus_one_is_malformed) {
    bytes wire = {0xff, 0xff, 0xff, 0xfe};  // int32 -2
    reader r(wire);
    EXPECT_FALSE(r.nullable_bytes(false).has_value());
    EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace sluice::protocol

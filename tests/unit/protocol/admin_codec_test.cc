// The config, partition-count and record-deletion admin APIs round-trip in every supported
// version, and a few frames, assembled by hand from Kafka's message schemas, are checked
// byte for byte.

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/alter_configs.h"
#include "protocol/messages/create_partitions.h"
#include "protocol/messages/delete_records.h"
#include "protocol/messages/describe_configs.h"
#include "protocol/messages/incremental_alter_configs.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;
using test::mutate_and_decode;

// Error codes used in the samples (Kafka's values).
constexpr int16_t offset_out_of_range = 1;
constexpr int16_t invalid_partitions = 37;
constexpr int16_t invalid_config = 40;

// Samples with every field set away from its default, and nullable fields both null and
// set, so that each is on the wire in every version.

alter_configs_request sample_alter_configs() {
    alter_configs_request req;
    req.resources.push_back(
        {resource_topic, "orders", {{"retention.ms", "86400000"}, {"cleanup.policy", {}}}});
    req.resources.push_back({resource_broker, "1", {{"log.retention.ms", "1000"}}});
    req.validate_only = true;
    return req;
}

alter_configs_response sample_alter_configs_response() {
    alter_configs_response resp;
    resp.throttle_time_ms = 5;
    resp.responses.push_back({0, std::nullopt, resource_topic, "orders"});
    resp.responses.push_back({invalid_config, "bad value", resource_broker, "1"});
    return resp;
}

incremental_alter_configs_request sample_incremental_alter_configs() {
    incremental_alter_configs_request req;
    req.resources.push_back(
        {resource_topic,
         "orders",
         {{"retention.ms", config_op_set, "1000"},
          {"segment.ms", config_op_delete, std::nullopt},
          {"follower.replication.throttled.replicas", config_op_append, "0:1"},
          {"leader.replication.throttled.replicas", config_op_subtract, "0:2"}}});
    req.resources.push_back({resource_broker, "", {{"log.cleaner.threads", config_op_set, "2"}}});
    req.validate_only = true;
    return req;
}

create_partitions_request sample_create_partitions() {
    using assignments = std::vector<create_partitions_request::assignment>;
    create_partitions_request req;
    req.topics.push_back({"orders", 6, assignments{{{1, 2}}, {{2, 3}}}});
    req.topics.push_back({"events", 3, std::nullopt});
    req.timeout_ms = 30000;
    req.validate_only = true;
    return req;
}

delete_records_request sample_delete_records() {
    delete_records_request req;
    req.topics.push_back({"orders", {{0, 42}, {3, delete_records_to_high_watermark}}});
    req.topics.push_back({"events", {{1, 7}}});
    req.timeout_ms = 30000;
    return req;
}

TEST(admin_codec, alter_configs_all_versions) {
    expect_round_trip(api_key::alter_configs, 0, 2, sample_alter_configs());
    expect_round_trip(api_key::alter_configs, 0, 2, sample_alter_configs_response());
}

TEST(admin_codec, incremental_alter_configs_all_versions) {
    expect_round_trip(api_key::incremental_alter_configs, 0, 1, sample_incremental_alter_configs());

    incremental_alter_configs_response resp = sample_alter_configs_response();
    expect_round_trip(api_key::incremental_alter_configs, 0, 1, resp);
}

TEST(admin_codec, create_partitions_all_versions) {
    expect_round_trip(api_key::create_partitions, 0, 3, sample_create_partitions());

    create_partitions_response resp;
    resp.throttle_time_ms = 5;
    resp.results.push_back({"orders", 0, std::nullopt});
    resp.results.push_back({"events", invalid_partitions, "cannot shrink"});
    expect_round_trip(api_key::create_partitions, 0, 3, resp);
}

TEST(admin_codec, delete_records_all_versions) {
    expect_round_trip(api_key::delete_records, 0, 2, sample_delete_records());

    delete_records_response resp;
    resp.throttle_time_ms = 5;
    resp.topics.push_back({"orders", {{0, 42, 0}, {3, -1, offset_out_of_range}}});
    resp.topics.push_back({"events", {{1, 7, 0}}});
    expect_round_trip(api_key::delete_records, 0, 2, resp);
}

TEST(admin_codec, corrupted_requests_fail_cleanly) {
    mutate_and_decode(api_key::alter_configs, 0, 2, sample_alter_configs(), 31);
    mutate_and_decode(api_key::incremental_alter_configs, 0, 1, sample_incremental_alter_configs(),
                      32);
    mutate_and_decode(api_key::create_partitions, 0, 3, sample_create_partitions(), 33);
    mutate_and_decode(api_key::delete_records, 0, 2, sample_delete_records(), 34);
}

// The byte-exact frames below are assembled from the JSON schemas: classic versions use
// int16-length strings (-1: null) and int32-length arrays (-1: null); flexible versions use
// compact forms (unsigned varint of length + 1, 0 for null) and end every struct with a tag
// section (0x00: no tagged fields).

TEST(admin_codec, alter_configs_v0_request_bytes) {
    alter_configs_request req;
    req.resources.push_back(
        {resource_topic, "t", {{"flush.ms", "1000"}, {"segment.ms", std::nullopt}}});
    req.validate_only = true;
    const bytes wire = {
        0x00, 0x00, 0x00, 0x01,                                          // resources: 1
        0x02,                                                            //   resource_type topic
        0x00, 0x01, 't',                                                 //   resource_name
        0x00, 0x00, 0x00, 0x02,                                          //   configs: 2
        0x00, 0x08, 'f',  'l',  'u', 's', 'h', '.', 'm', 's',            //     name
        0x00, 0x04, '1',  '0',  '0', '0',                                //     value "1000"
        0x00, 0x0a, 's',  'e',  'g', 'm', 'e', 'n', 't', '.', 'm', 's',  //     name
        0xff, 0xff,                                                      //     value: null
        0x01,                                                            // validate_only
    };
    bytes out;
    encode_message(out, 0, false, req);
    EXPECT_EQ(out, wire);

    alter_configs_request back;
    ASSERT_TRUE(decode_message(wire, 0, false, back));
    ASSERT_EQ(back.resources.size(), 1u);
    EXPECT_EQ(back.resources[0].resource_type, resource_topic);
    EXPECT_EQ(back.resources[0].resource_name, "t");
    ASSERT_EQ(back.resources[0].configs.size(), 2u);
    EXPECT_EQ(back.resources[0].configs[0].name, "flush.ms");
    EXPECT_EQ(back.resources[0].configs[0].value, std::optional<std::string>("1000"));
    EXPECT_EQ(back.resources[0].configs[1].name, "segment.ms");
    EXPECT_FALSE(back.resources[0].configs[1].value.has_value());
    EXPECT_TRUE(back.validate_only);
}

TEST(admin_codec, incremental_alter_configs_v1_request_bytes) {
    // v1 is the first flexible version.
    incremental_alter_configs_request req;
    req.resources.push_back(
        {resource_topic,
         "t",
         {{"flush.ms", config_op_set, "1000"}, {"segment.ms", config_op_delete, std::nullopt}}});
    req.validate_only = true;
    const bytes wire = {
        0x02,                                                    // resources: 1
        0x02,                                                    //   resource_type topic
        0x02, 't',                                               //   resource_name
        0x03,                                                    //   configs: 2
        0x09, 'f', 'l', 'u', 's', 'h', '.', 'm', 's',            //     name
        0x00,                                                    //     config_operation set
        0x05, '1', '0', '0', '0',                                //     value "1000"
        0x00,                                                    //     config tag section
        0x0b, 's', 'e', 'g', 'm', 'e', 'n', 't', '.', 'm', 's',  //     name
        0x01,                                                    //     config_operation delete
        0x00,                                                    //     value: null
        0x00,                                                    //     config tag section
        0x00,                                                    //   resource tag section
        0x01,                                                    // validate_only
        0x00,                                                    // tag section
    };
    bytes out;
    encode_message(out, 1, true, req);
    EXPECT_EQ(out, wire);

    incremental_alter_configs_request back;
    ASSERT_TRUE(decode_message(wire, 1, true, back));
    ASSERT_EQ(back.resources.size(), 1u);
    EXPECT_EQ(back.resources[0].resource_type, resource_topic);
    EXPECT_EQ(back.resources[0].resource_name, "t");
    ASSERT_EQ(back.resources[0].configs.size(), 2u);
    EXPECT_EQ(back.resources[0].configs[0].name, "flush.ms");
    EXPECT_EQ(back.resources[0].configs[0].config_operation, config_op_set);
    EXPECT_EQ(back.resources[0].configs[0].value, std::optional<std::string>("1000"));
    EXPECT_EQ(back.resources[0].configs[1].name, "segment.ms");
    EXPECT_EQ(back.resources[0].configs[1].config_operation, config_op_delete);
    EXPECT_FALSE(back.resources[0].configs[1].value.has_value());
    EXPECT_TRUE(back.validate_only);
}

TEST(admin_codec, delete_records_v0_response_bytes) {
    delete_records_response resp;
    resp.throttle_time_ms = 5;
    resp.topics.push_back({"orders", {{0, 42, 0}, {3, -1, offset_out_of_range}}});
    const bytes wire = {
        0x00, 0x00, 0x00, 0x05,                          // throttle_time_ms
        0x00, 0x00, 0x00, 0x01,                          // topics: 1
        0x00, 0x06, 'o',  'r',  'd',  'e',  'r',  's',   //   name
        0x00, 0x00, 0x00, 0x02,                          //   partitions: 2
        0x00, 0x00, 0x00, 0x00,                          //     partition_index 0
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,  //     low_watermark 42
        0x00, 0x00,                                      //     error_code
        0x00, 0x00, 0x00, 0x03,                          //     partition_index 3
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  //     low_watermark -1
        0x00, 0x01,                                      //     error_code 1
    };
    bytes out;
    encode_message(out, 0, false, resp);
    EXPECT_EQ(out, wire);

    delete_records_response back;
    ASSERT_TRUE(decode_message(wire, 0, false, back));
    EXPECT_EQ(back.throttle_time_ms, 5);
    ASSERT_EQ(back.topics.size(), 1u);
    EXPECT_EQ(back.topics[0].name, "orders");
    ASSERT_EQ(back.topics[0].partitions.size(), 2u);
    EXPECT_EQ(back.topics[0].partitions[0].partition_index, 0);
    EXPECT_EQ(back.topics[0].partitions[0].low_watermark, 42);
    EXPECT_EQ(back.topics[0].partitions[0].error_code, 0);
    EXPECT_EQ(back.topics[0].partitions[1].partition_index, 3);
    EXPECT_EQ(back.topics[0].partitions[1].low_watermark, -1);
    EXPECT_EQ(back.topics[0].partitions[1].error_code, offset_out_of_range);
}

// CreatePartitions' assignments are a nullable array in every version: null (the broker
// places the new partitions) stays distinct from an empty list.
TEST(admin_codec, create_partitions_null_assignments_bytes) {
    using assignments = std::vector<create_partitions_request::assignment>;
    create_partitions_request req;
    req.topics.push_back({"t", 3, std::nullopt});
    req.topics.push_back({"u", 2, assignments{{{1, 2}}}});
    req.timeout_ms = 1000;
    const bytes v0 = {
        0x00, 0x00, 0x00, 0x02,  // topics: 2
        0x00, 0x01, 't',         //   name
        0x00, 0x00, 0x00, 0x03,  //   count 3
        0xff, 0xff, 0xff, 0xff,  //   assignments: null
        0x00, 0x01, 'u',         //   name
        0x00, 0x00, 0x00, 0x02,  //   count 2
        0x00, 0x00, 0x00, 0x01,  //   assignments: 1
        0x00, 0x00, 0x00, 0x02,  //     broker_ids: 2
        0x00, 0x00, 0x00, 0x01,  //       1
        0x00, 0x00, 0x00, 0x02,  //       2
        0x00, 0x00, 0x03, 0xe8,  // timeout_ms 1000
        0x00,                    // validate_only
    };
    const bytes v2 = {
        0x03,                    // topics: 2
        0x02, 't',               //   name
        0x00, 0x00, 0x00, 0x03,  //   count 3
        0x00,                    //   assignments: null
        0x00,                    //   topic tag section
        0x02, 'u',               //   name
        0x00, 0x00, 0x00, 0x02,  //   count 2
        0x02,                    //   assignments: 1
        0x03,                    //     broker_ids: 2
        0x00, 0x00, 0x00, 0x01,  //       1
        0x00, 0x00, 0x00, 0x02,  //       2
        0x00,                    //     assignment tag section
        0x00,                    //   topic tag section
        0x00, 0x00, 0x03, 0xe8,  // timeout_ms 1000
        0x00,                    // validate_only
        0x00,                    // tag section
    };
    bytes out0, out2;
    encode_message(out0, 0, false, req);
    encode_message(out2, 2, true, req);
    EXPECT_EQ(out0, v0);
    EXPECT_EQ(out2, v2);

    for (auto [version, wire] : {std::pair{int16_t{0}, &v0}, std::pair{int16_t{2}, &v2}}) {
        create_partitions_request back;
        ASSERT_TRUE(decode_message(*wire, version, version >= 2, back)) << "v" << version;
        ASSERT_EQ(back.topics.size(), 2u);
        EXPECT_FALSE(back.topics[0].assignments.has_value());
        ASSERT_TRUE(back.topics[1].assignments.has_value());
        ASSERT_EQ(back.topics[1].assignments->size(), 1u);
        EXPECT_EQ((*back.topics[1].assignments)[0].broker_ids, (std::vector<int32_t>{1, 2}));
    }
}

}  // namespace
}  // namespace sluice::protocol

// The consumer-group APIs round-trip in every supported version, and a few frames,
// assembled by hand from Kafka's message schemas, are checked byte for byte.

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/delete_groups.h"
#include "protocol/messages/describe_groups.h"
#include "protocol/messages/find_coordinator.h"
#include "protocol/messages/heartbeat.h"
#include "protocol/messages/join_group.h"
#include "protocol/messages/leave_group.h"
#include "protocol/messages/list_groups.h"
#include "protocol/messages/offset_commit.h"
#include "protocol/messages/offset_delete.h"
#include "protocol/messages/offset_fetch.h"
#include "protocol/messages/sync_group.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;
using test::mutate_and_decode;

// Samples with every field set away from its default, so that each one is on the wire in
// the versions that carry it.

find_coordinator_request sample_find_coordinator() {
    find_coordinator_request req;
    req.key = "group-a";
    req.key_type = coordinator_key_transaction;
    req.coordinator_keys = {"group-a", "group-b"};
    return req;
}

join_group_request sample_join_group() {
    join_group_request req;
    req.group_id = "group-a";
    req.session_timeout_ms = 10000;
    req.rebalance_timeout_ms = 60000;
    req.member_id = "member-1";
    req.group_instance_id = "instance-1";
    req.protocol_type = "consumer";
    req.protocols.push_back({"range", bytes{0, 1, 2}});
    req.protocols.push_back({"roundrobin", bytes{}});
    req.reason = "rebalance";
    return req;
}

sync_group_request sample_sync_group() {
    sync_group_request req;
    req.group_id = "group-a";
    req.generation_id = 4;
    req.member_id = "member-1";
    req.group_instance_id = "instance-1";
    req.protocol_type = "consumer";
    req.protocol_name = "range";
    req.assignments.push_back({"member-1", bytes{9, 8, 7}});
    req.assignments.push_back({"member-2", bytes{}});
    return req;
}

heartbeat_request sample_heartbeat() {
    heartbeat_request req;
    req.group_id = "group-a";
    req.generation_id = 4;
    req.member_id = "member-1";
    req.group_instance_id = "instance-1";
    return req;
}

leave_group_request sample_leave_group() {
    leave_group_request req;
    req.group_id = "group-a";
    req.member_id = "member-1";
    req.members.push_back({"member-1", "instance-1", "shutdown"});
    req.members.push_back({"member-2", std::nullopt, std::nullopt});
    return req;
}

offset_commit_request sample_offset_commit() {
    offset_commit_request req;
    req.group_id = "group-a";
    req.generation_id = 4;
    req.member_id = "member-1";
    req.group_instance_id = "instance-1";
    req.retention_time_ms = 86400000;
    req.topics.push_back({"orders", {{0, 42, 3, 1700000000000, "meta"}, {5, 7, -1, -1, {}}}});
    return req;
}

offset_fetch_request sample_offset_fetch() {
    offset_fetch_request req;
    req.group_id = "group-a";
    req.topics = std::vector<offset_fetch_request::topic>{{"orders", {0, 1, 2}}};
    req.groups.push_back({"group-a", std::nullopt, -1, std::vector<offset_fetch_request::topic>{{"t", {3}}}});
    req.groups.push_back({"group-b", std::nullopt});
    req.require_stable = true;
    return req;
}

list_groups_request sample_list_groups() {
    list_groups_request req;
    req.states_filter = {"Stable", "Empty"};
    req.types_filter = {"classic", "consumer"};
    return req;
}

describe_groups_request sample_describe_groups() {
    describe_groups_request req;
    req.groups = {"group-a", "group-b"};
    req.include_authorized_operations = true;
    return req;
}

delete_groups_request sample_delete_groups() {
    delete_groups_request req;
    req.groups_names = {"group-a", "group-b"};
    return req;
}

offset_delete_request sample_offset_delete() {
    offset_delete_request req;
    req.group_id = "group-a";
    req.topics.push_back({"orders", {{0}, {3}}});
    return req;
}

TEST(group_codec, find_coordinator_all_versions) {
    expect_round_trip(api_key::find_coordinator, 0, 4, sample_find_coordinator());

    find_coordinator_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 15;
    resp.error_message = "not available";
    resp.node_id = 1;
    resp.host = "broker-1";
    resp.port = 9092;
    resp.coordinators.push_back({"group-a", 1, "broker-1", 9092, 0, std::nullopt});
    resp.coordinators.push_back({"group-b", -1, "", -1, 15, "not available"});
    expect_round_trip(api_key::find_coordinator, 0, 4, resp);
}

TEST(group_codec, join_group_all_versions) {
    expect_round_trip(api_key::join_group, 0, 9, sample_join_group());

    join_group_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 79;
    resp.generation_id = 3;
    resp.protocol_type = "consumer";
    resp.protocol_name = "range";
    resp.leader = "member-1";
    resp.skip_assignment = true;
    resp.member_id = "member-1";
    resp.members.push_back({"member-1", "instance-1", bytes{0, 1}});
    resp.members.push_back({"member-2", std::nullopt, bytes{}});
    expect_round_trip(api_key::join_group, 0, 9, resp);

    // An error response carries no protocol: null where the version allows it.
    join_group_response error;
    error.error_code = 25;
    expect_round_trip(api_key::join_group, 0, 9, error);
}

TEST(group_codec, sync_group_all_versions) {
    expect_round_trip(api_key::sync_group, 0, 5, sample_sync_group());

    sync_group_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 27;
    resp.protocol_type = "consumer";
    resp.protocol_name = "range";
    resp.assignment = bytes{1, 2, 3, 4};
    expect_round_trip(api_key::sync_group, 0, 5, resp);
}

TEST(group_codec, heartbeat_all_versions) {
    expect_round_trip(api_key::heartbeat, 0, 4, sample_heartbeat());

    heartbeat_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 27;
    expect_round_trip(api_key::heartbeat, 0, 4, resp);
}

TEST(group_codec, leave_group_all_versions) {
    expect_round_trip(api_key::leave_group, 0, 5, sample_leave_group());

    leave_group_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 0;
    resp.members.push_back({"member-1", "instance-1", 0});
    resp.members.push_back({"member-2", std::nullopt, 25});
    expect_round_trip(api_key::leave_group, 0, 5, resp);
}

TEST(group_codec, offset_commit_all_versions) {
    expect_round_trip(api_key::offset_commit, 0, 8, sample_offset_commit());

    offset_commit_response resp;
    resp.throttle_time_ms = 5;
    resp.topics.push_back({"orders", {{0, 0}, {5, 22}}});
    expect_round_trip(api_key::offset_commit, 0, 8, resp);
}

TEST(group_codec, offset_fetch_all_versions) {
    expect_round_trip(api_key::offset_fetch, 0, 8, sample_offset_fetch());
    offset_fetch_request all;
    all.group_id = "group-a";
    all.topics = std::nullopt;
    expect_round_trip(api_key::offset_fetch, 0, 8, all);

    offset_fetch_response resp;
    resp.throttle_time_ms = 5;
    offset_fetch_response::topic t{"orders", {{0, 42, 3, "meta", 0}, {1, -1, -1, std::nullopt, 0}}};
    resp.topics.push_back(t);
    resp.error_code = 16;
    resp.groups.push_back({"group-a", {t}, 0});
    resp.groups.push_back({"group-b", {}, 69});
    expect_round_trip(api_key::offset_fetch, 0, 8, resp);
}

TEST(group_codec, list_groups_all_versions) {
    expect_round_trip(api_key::list_groups, 0, 5, sample_list_groups());

    list_groups_response resp;
    resp.throttle_time_ms = 5;
    resp.error_code = 0;
    resp.groups.push_back({"group-a", "consumer", "Stable", "classic"});
    resp.groups.push_back({"group-b", "", "Empty", "consumer"});
    expect_round_trip(api_key::list_groups, 0, 5, resp);
}

TEST(group_codec, describe_groups_all_versions) {
    expect_round_trip(api_key::describe_groups, 0, 5, sample_describe_groups());

    describe_groups_response resp;
    resp.throttle_time_ms = 5;
    describe_groups_response::group g;
    g.group_id = "group-a";
    g.group_state = "Stable";
    g.protocol_type = "consumer";
    g.protocol_data = "range";
    g.members.push_back({"member-1", "instance-1", "client", "/127.0.0.1", bytes{1}, bytes{2}});
    g.members.push_back({"member-2", std::nullopt, "client", "/127.0.0.1", bytes{}, bytes{}});
    g.authorized_operations = 0x0f;
    resp.groups.push_back(g);
    resp.groups.push_back({69, "group-b", "Dead", "", "", {}, INT32_MIN});
    expect_round_trip(api_key::describe_groups, 0, 5, resp);
}

TEST(group_codec, delete_groups_all_versions) {
    expect_round_trip(api_key::delete_groups, 0, 2, sample_delete_groups());

    delete_groups_response resp;
    resp.throttle_time_ms = 5;
    resp.results.push_back({"group-a", 0});
    resp.results.push_back({"group-b", 68});
    expect_round_trip(api_key::delete_groups, 0, 2, resp);
}

TEST(group_codec, offset_delete_all_versions) {
    expect_round_trip(api_key::offset_delete, 0, 0, sample_offset_delete());

    offset_delete_response resp;
    resp.error_code = 0;
    resp.throttle_time_ms = 5;
    resp.topics.push_back({"orders", {{0, 0}, {3, 86}}});
    expect_round_trip(api_key::offset_delete, 0, 0, resp);
}

TEST(group_codec, corrupted_requests_fail_cleanly) {
    mutate_and_decode(api_key::find_coordinator, 0, 4, sample_find_coordinator(), 11);
    mutate_and_decode(api_key::join_group, 0, 9, sample_join_group(), 12);
    mutate_and_decode(api_key::sync_group, 0, 5, sample_sync_group(), 13);
    mutate_and_decode(api_key::heartbeat, 0, 4, sample_heartbeat(), 14);
    mutate_and_decode(api_key::leave_group, 0, 5, sample_leave_group(), 15);
    mutate_and_decode(api_key::offset_commit, 0, 8, sample_offset_commit(), 16);
    mutate_and_decode(api_key::offset_fetch, 0, 8, sample_offset_fetch(), 17);
    mutate_and_decode(api_key::list_groups, 0, 4, sample_list_groups(), 18);
    mutate_and_decode(api_key::describe_groups, 0, 5, sample_describe_groups(), 19);
    mutate_and_decode(api_key::delete_groups, 0, 2, sample_delete_groups(), 20);
    mutate_and_decode(api_key::offset_delete, 0, 0, sample_offset_delete(), 21);
}

// The byte-exact frames below are assembled from the JSON schemas: classic versions use
// int16-length strings and int32-length bytes and arrays; flexible versions use compact
// forms (unsigned varint of length + 1, 0 for null) and end every struct with a tag
// section (0x00: no tagged fields).

TEST(group_codec, join_group_v0_request_bytes) {
    // Fields of later versions (rebalance timeout v1+, instance id v5+, reason v8+) are set
    // but must not appear.
    join_group_request req;
    req.group_id = "grp";
    req.session_timeout_ms = 10000;
    req.rebalance_timeout_ms = 60000;
    req.group_instance_id = "instance-1";
    req.protocol_type = "consumer";
    req.protocols.push_back({"range", bytes{1, 2, 3}});
    req.reason = "why";
    const bytes wire = {
        0x00, 0x03, 'g',  'r',  'p',                              // group_id
        0x00, 0x00, 0x27, 0x10,                                   // session_timeout_ms 10000
        0x00, 0x00,                                               // member_id ""
        0x00, 0x08, 'c',  'o',  'n',  's',  'u',  'm', 'e', 'r',  // protocol_type
        0x00, 0x00, 0x00, 0x01,                                   // protocols: 1
        0x00, 0x05, 'r',  'a',  'n',  'g',  'e',                  //   name
        0x00, 0x00, 0x00, 0x03, 0x01, 0x02, 0x03,                 //   metadata
    };
    bytes out;
    encode_message(out, 0, false, req);
    EXPECT_EQ(out, wire);

    join_group_request back;
    ASSERT_TRUE(decode_message(wire, 0, false, back));
    EXPECT_EQ(back.group_id, "grp");
    EXPECT_EQ(back.session_timeout_ms, 10000);
    EXPECT_EQ(back.rebalance_timeout_ms, -1);
    EXPECT_EQ(back.member_id, "");
    EXPECT_FALSE(back.group_instance_id.has_value());
    EXPECT_EQ(back.protocol_type, "consumer");
    ASSERT_EQ(back.protocols.size(), 1u);
    EXPECT_EQ(back.protocols[0].name, "range");
    EXPECT_EQ(back.protocols[0].metadata, (bytes{1, 2, 3}));
    EXPECT_FALSE(back.reason.has_value());
}

TEST(group_codec, sync_group_v4_and_v5_response_bytes) {
    sync_group_response resp;
    resp.throttle_time_ms = 7;
    resp.error_code = 27;
    resp.protocol_type = "consumer";
    resp.protocol_name = "range";
    resp.assignment = bytes{0xaa, 0xbb, 0xcc};
    // v4 is the first flexible version; protocol type and name arrive only in v5.
    const bytes v4 = {
        0x00, 0x00, 0x00, 0x07,  // throttle_time_ms
        0x00, 0x1b,              // error_code 27
        0x04, 0xaa, 0xbb, 0xcc,  // assignment: compact bytes, length 3
        0x00,                    // tag section
    };
    const bytes v5 = {
        0x00, 0x00, 0x00, 0x07,                           // throttle_time_ms
        0x00, 0x1b,                                       // error_code 27
        0x09, 'c',  'o',  'n',  's', 'u', 'm', 'e', 'r',  // protocol_type
        0x06, 'r',  'a',  'n',  'g', 'e',                 // protocol_name
        0x04, 0xaa, 0xbb, 0xcc,                           // assignment
        0x00,                                             // tag section
    };
    bytes out4, out5;
    encode_message(out4, 4, true, resp);
    encode_message(out5, 5, true, resp);
    EXPECT_EQ(out4, v4);
    EXPECT_EQ(out5, v5);

    sync_group_response back;
    ASSERT_TRUE(decode_message(v4, 4, true, back));
    EXPECT_EQ(back.throttle_time_ms, 7);
    EXPECT_EQ(back.error_code, 27);
    EXPECT_FALSE(back.protocol_type.has_value());
    EXPECT_EQ(back.assignment, (bytes{0xaa, 0xbb, 0xcc}));
}

TEST(group_codec, offset_fetch_v8_request_bytes) {
    // The v0-7 fields are set but must not appear; group g1 asks for every topic (null).
    offset_fetch_request req;
    req.group_id = "old";
    req.topics = std::vector<offset_fetch_request::topic>{{"x", {1}}};
    req.groups.push_back({"g1", std::nullopt});
    req.groups.push_back({"g2", std::nullopt, -1, std::vector<offset_fetch_request::topic>{{"t", {0, 2}}}});
    req.require_stable = true;
    const bytes wire = {
        0x03,                    // groups: 2
        0x03, 'g',  '1',         //   group_id
        0x00,                    //   topics: null
        0x00,                    //   group tag section
        0x03, 'g',  '2',         //   group_id
        0x02,                    //   topics: 1
        0x02, 't',               //     name
        0x03,                    //     partition_indexes: 2
        0x00, 0x00, 0x00, 0x00,  //       0
        0x00, 0x00, 0x00, 0x02,  //       2
        0x00,                    //     topic tag section
        0x00,                    //   group tag section
        0x01,                    // require_stable
        0x00,                    // tag section
    };
    bytes out;
    encode_message(out, 8, true, req);
    EXPECT_EQ(out, wire);

    offset_fetch_request back;
    ASSERT_TRUE(decode_message(wire, 8, true, back));
    ASSERT_EQ(back.groups.size(), 2u);
    EXPECT_EQ(back.groups[0].group_id, "g1");
    EXPECT_FALSE(back.groups[0].topics.has_value());
    ASSERT_TRUE(back.groups[1].topics.has_value());
    ASSERT_EQ(back.groups[1].topics->size(), 1u);
    EXPECT_EQ((*back.groups[1].topics)[0].partition_indexes, (std::vector<int32_t>{0, 2}));
    EXPECT_TRUE(back.require_stable);
}

TEST(group_codec, offset_commit_v1_request_bytes) {
    // v1 alone carries commit_timestamp; leader epoch (v6+) and retention (v2-4) are absent.
    offset_commit_request req;
    req.group_id = "g";
    req.generation_id = 3;
    req.member_id = "m";
    req.retention_time_ms = 1000;
    req.topics.push_back({"t", {{0, 42, 5, 1000, std::nullopt}}});
    const bytes wire = {
        0x00, 0x01, 'g',                                 // group_id
        0x00, 0x00, 0x00, 0x03,                          // generation_id
        0x00, 0x01, 'm',                                 // member_id
        0x00, 0x00, 0x00, 0x01,                          // topics: 1
        0x00, 0x01, 't',                                 //   name
        0x00, 0x00, 0x00, 0x01,                          //   partitions: 1
        0x00, 0x00, 0x00, 0x00,                          //     partition_index
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x2a,  //     committed_offset 42
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xe8,  //     commit_timestamp 1000
        0xff, 0xff,                                      //     committed_metadata: null
    };
    bytes out;
    encode_message(out, 1, false, req);
    EXPECT_EQ(out, wire);
}

// JoinGroup's protocol_name is nullable only from v7: before, a null goes out as "".
TEST(group_codec, join_group_response_null_protocol_name_before_v7_is_empty) {
    join_group_response resp;
    resp.generation_id = 1;
    resp.member_id = "m";
    const bytes v0 = {
        0x00, 0x00,              // error_code
        0x00, 0x00, 0x00, 0x01,  // generation_id
        0x00, 0x00,              // protocol_name: "" (0xffff would be null)
        0x00, 0x00,              // leader ""
        0x00, 0x01, 'm',         // member_id
        0x00, 0x00, 0x00, 0x00,  // members: 0
    };
    const bytes v6 = {
        0x00, 0x00, 0x00, 0x00,  // throttle_time_ms
        0x00, 0x00,              // error_code
        0x00, 0x00, 0x00, 0x01,  // generation_id
        0x01,                    // protocol_name: compact "" (0x00 would be null)
        0x01,                    // leader ""
        0x02, 'm',               // member_id
        0x01,                    // members: 0
        0x00,                    // tag section
    };
    const bytes v7 = {
        0x00, 0x00, 0x00, 0x00,  // throttle_time_ms
        0x00, 0x00,              // error_code
        0x00, 0x00, 0x00, 0x01,  // generation_id
        0x00,                    // protocol_type: null
        0x00,                    // protocol_name: null
        0x01,                    // leader ""
        0x02, 'm',               // member_id
        0x01,                    // members: 0
        0x00,                    // tag section
    };
    bytes out0, out6, out7;
    encode_message(out0, 0, false, resp);
    encode_message(out6, 6, true, resp);
    encode_message(out7, 7, true, resp);
    EXPECT_EQ(out0, v0);
    EXPECT_EQ(out6, v6);
    EXPECT_EQ(out7, v7);

    join_group_response back;
    ASSERT_TRUE(decode_message(v7, 7, true, back));
    EXPECT_FALSE(back.protocol_name.has_value());
    // A null where the version does not allow one reads as the empty string.
    bytes null_v0 = v0;
    null_v0[6] = 0xff;
    null_v0[7] = 0xff;
    ASSERT_TRUE(decode_message(null_v0, 0, false, back));
    EXPECT_EQ(back.protocol_name, std::optional<std::string>(""));
}

// OffsetFetch's topics are nullable (every topic) only from v2: before, a null goes out as
// an empty array, and one read in is an empty list, not "every topic".
TEST(group_codec, offset_fetch_null_topics_before_v2_is_empty) {
    offset_fetch_request req;
    req.group_id = "g";
    req.topics = std::nullopt;
    const bytes v1 = {0x00, 0x01, 'g', 0x00, 0x00, 0x00, 0x00};
    const bytes v2 = {0x00, 0x01, 'g', 0xff, 0xff, 0xff, 0xff};
    bytes out1, out2;
    encode_message(out1, 1, false, req);
    encode_message(out2, 2, false, req);
    EXPECT_EQ(out1, v1);
    EXPECT_EQ(out2, v2);

    offset_fetch_request back;
    ASSERT_TRUE(decode_message(v2, 2, false, back));
    EXPECT_FALSE(back.topics.has_value());
    ASSERT_TRUE(decode_message(v2, 1, false, back));
    ASSERT_TRUE(back.topics.has_value());
    EXPECT_TRUE(back.topics->empty());
}

}  // namespace
}  // namespace sluice::protocol

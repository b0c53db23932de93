// ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848) round-trip in v0-v1, and a
// heartbeat answer is checked byte for byte against Kafka's schema (the nullable
// Assignment struct: an int8 -1 when null, 1 then the struct when present).

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/consumer_group.h"
#include "protocol/messages/offset_fetch.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;

TEST(consumer_group_codec, heartbeat_round_trips) {
    consumer_group_heartbeat_request req;
    req.group_id = "g";
    req.member_id = "m";
    req.member_epoch = 3;
    req.instance_id = "i";
    req.rebalance_timeout_ms = 300000;
    req.subscribed_topic_names = std::vector<std::string>{"a", "b"};
    req.subscribed_topic_regex = "t.*";
    req.server_assignor = "uniform";
    req.topic_partitions_owned =
        std::vector<consumer_group_heartbeat_request::topic_partition_set>{{uuid{1, 2, 3}, {0, 5}}};
    expect_round_trip(api_key::consumer_group_heartbeat, 0, 1, req);
    consumer_group_heartbeat_response resp;
    resp.member_id = "m";
    resp.member_epoch = 4;
    resp.heartbeat_interval_ms = 5000;
    resp.assigned = consumer_group_heartbeat_response::assignment{{{uuid{9}, {1, 2}}}};
    expect_round_trip(api_key::consumer_group_heartbeat, 0, 1, resp);
    resp.assigned.reset();
    expect_round_trip(api_key::consumer_group_heartbeat, 0, 1, resp);
}

TEST(consumer_group_codec, heartbeat_answer_bytes) {
    consumer_group_heartbeat_response resp;
    resp.member_id = "m";
    resp.member_epoch = 1;
    resp.heartbeat_interval_ms = 5000;
    bytes null_assignment;
    encode_message(null_assignment, 1, true, resp);
    const bytes want_null = {0,    0,   0,    0,     // throttle
                             0,    0,                // error code
                             0,                      // error message: null
                             2,    'm',              // member id
                             0,    0,   0,    1,     // member epoch
                             0,    0,   0x13, 0x88,  // 5000 ms
                             0xff,                   // assignment: null
                             0};                     // tags
    EXPECT_EQ(null_assignment, want_null);
    resp.assigned = consumer_group_heartbeat_response::assignment{{{uuid{}, {7}}}};
    bytes with;
    encode_message(with, 1, true, resp);
    bytes want = want_null;
    want.pop_back();
    want.back() = 1;    // present
    want.push_back(2);  // one topic
    for (int i = 0; i < 16; ++i) want.push_back(0);
    for (uint8_t b : {2, 0, 0, 0, 7, 0}) want.push_back(b);  // [7], topic tags
    want.push_back(0);                                       // assignment tags
    want.push_back(0);                                       // message tags
    EXPECT_EQ(with, want);
}

TEST(consumer_group_codec, describe_round_trips) {
    consumer_group_describe_request req;
    req.group_ids = {"g", "h"};
    req.include_authorized_operations = true;
    expect_round_trip(api_key::consumer_group_describe, 0, 1, req);
    consumer_group_describe_response resp;
    auto& g = resp.groups.emplace_back();
    g.group_id = "g";
    g.group_state = "Stable";
    g.group_epoch = 3;
    g.assignment_epoch = 3;
    g.assignor_name = "uniform";
    auto& m = g.members.emplace_back();
    m.member_id = "m";
    m.member_epoch = 3;
    m.client_id = "c";
    m.client_host = "/127.0.0.1";
    m.subscribed_topic_names = {"t"};
    m.current.topic_partitions.push_back({uuid{5}, "t", {0, 1}});
    m.target.topic_partitions.push_back({uuid{5}, "t", {0, 1, 2}});
    expect_round_trip(api_key::consumer_group_describe, 0, 1, resp);
}

TEST(consumer_group_codec, offset_fetch_v9_carries_the_member) {
    offset_fetch_request req;
    auto& g = req.groups.emplace_back();
    g.group_id = "g";
    g.member_id = "m";
    g.member_epoch = 7;
    expect_round_trip(api_key::offset_fetch, 8, 9, req);
    bytes v9;
    encode_message(v9, 9, true, req);
    offset_fetch_request back;
    ASSERT_TRUE(decode_message(v9, 9, true, back));
    EXPECT_EQ(back.groups.at(0).member_id, "m");
    EXPECT_EQ(back.groups.at(0).member_epoch, 7);
}

TEST(consumer_group_codec, api_versions_features_are_tagged) {
    api_versions_response avr;
    avr.api_keys.push_back({68, 0, 1});
    avr.supported_features.push_back({"group.version", 0, 1});
    avr.finalized_features_epoch = 1;
    avr.finalized_features.push_back({"group.version", 1, 1});
    expect_round_trip(api_key::api_versions, 3, 4, avr);
    bytes v3;
    encode_message(v3, 3, true, avr);
    api_versions_response back;
    ASSERT_TRUE(decode_message(v3, 3, true, back));
    ASSERT_EQ(back.finalized_features.size(), 1u);
    EXPECT_EQ(back.finalized_features[0].name, "group.version");
    EXPECT_EQ(back.finalized_features[0].max_version_level, 1);
    EXPECT_EQ(back.finalized_features_epoch, 1);
}

}  // namespace
}  // namespace sluice::protocol

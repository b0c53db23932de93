// ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and ShareAcknowledge (KIP-932)
// round-trip at the versions Sluice serves, and a ShareFetch v1 request is read from
// the bytes Kafka's schema gives (no ShareAcquireMode or IsRenewAck before v2).

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/share_group.h"
#include "protocol/messages/share_group_offsets.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;

TEST(share_group_codec, heartbeat_and_describe_round_trip) {
    share_group_heartbeat_request req;
    req.group_id = "g";
    req.member_id = "m";
    req.member_epoch = 2;
    req.rack_id = "r";
    req.subscribed_topic_names = std::vector<std::string>{"t"};
    expect_round_trip(api_key::share_group_heartbeat, 1, 1, req);
    share_group_describe_response d;
    auto& g = d.groups.emplace_back();
    g.group_id = "g";
    g.group_state = "Stable";
    g.assignor_name = "simple";
    auto& m = g.members.emplace_back();
    m.member_id = "m";
    m.subscribed_topic_names = {"t"};
    m.current.assigned.push_back({uuid{4}, "t", {0, 1}});
    expect_round_trip(api_key::share_group_describe, 1, 1, d);
}

TEST(share_group_codec, fetch_and_acknowledge_round_trip) {
    share_fetch_request req;
    req.group_id = "g";
    req.member_id = "m";
    req.share_session_epoch = 3;
    req.max_wait_ms = 500;
    req.max_records = 500;
    req.batch_size = 500;
    req.share_acquire_mode = 1;
    req.is_renew_ack = true;
    req.topics.push_back({uuid{1}, {{0, 0, {{5, 7, {1, 2, 3}}}}}});
    req.forgotten_topics_data.push_back({uuid{2}, {3}});
    expect_round_trip(api_key::share_fetch, 2, 2, req);
    req.share_acquire_mode = 0;
    req.is_renew_ack = false;
    expect_round_trip(api_key::share_fetch, 1, 1, req);
    share_fetch_response resp;
    resp.acquisition_lock_timeout_ms = 30000;
    share_fetch_response::partition p;
    p.partition_index = 0;
    p.current_leader = {0, 0};
    p.records.data = bytes{1, 2, 3};
    p.acquired.push_back({5, 7, 2});
    resp.responses.push_back({uuid{1}, {p}});
    expect_round_trip(api_key::share_fetch, 1, 2, resp);
    share_acknowledge_request ack;
    ack.group_id = "g";
    ack.member_id = "m";
    ack.share_session_epoch = -1;
    ack.topics.push_back({uuid{1}, {{0, {{5, 5, {1}}}}}});
    expect_round_trip(api_key::share_acknowledge, 1, 2, ack);
    share_acknowledge_response ar;
    ar.acquisition_lock_timeout_ms = 30000;
    ar.responses.push_back({uuid{1}, {{0, 121, "no", {0, 0}}}});
    expect_round_trip(api_key::share_acknowledge, 1, 2, ar);
}

TEST(share_group_codec, fetch_v1_has_no_acquire_mode) {
    share_fetch_request req;
    req.member_id = "m";
    req.share_acquire_mode = 1;  // not in v1: not written, read back as the default
    bytes b;
    encode_message(b, 1, true, req);
    share_fetch_request back;
    ASSERT_TRUE(decode_message(b, 1, true, back));
    EXPECT_EQ(back.share_acquire_mode, 0);
    EXPECT_EQ(back.member_id, "m");
    EXPECT_FALSE(back.group_id.has_value());
}

TEST(share_group_codec, offset_apis_round_trip) {
    describe_share_group_offsets_request d;
    d.groups.push_back(
        {"g", std::vector<describe_share_group_offsets_request::topic>{{"t", {0, 1}}}});
    d.groups.push_back({"h", std::nullopt});  // every partition
    expect_round_trip(api_key::describe_share_group_offsets, 0, 1, d);
    describe_share_group_offsets_response dr;
    auto& g = dr.groups.emplace_back();
    g.group_id = "g";
    g.topics.push_back({"t", uuid{7}, {{0, 5, 0, 3, 0, std::nullopt}}});
    expect_round_trip(api_key::describe_share_group_offsets, 0, 1, dr);
    alter_share_group_offsets_request a;
    a.group_id = "g";
    a.topics.push_back({"t", {{0, 42}}});
    expect_round_trip(api_key::alter_share_group_offsets, 0, 0, a);
    alter_share_group_offsets_response ar;
    ar.responses.push_back({"t", uuid{7}, {{0, 68, "not empty"}}});
    expect_round_trip(api_key::alter_share_group_offsets, 0, 0, ar);
    delete_share_group_offsets_request del;
    del.group_id = "g";
    del.topics.push_back({"t"});
    expect_round_trip(api_key::delete_share_group_offsets, 0, 0, del);
    delete_share_group_offsets_response delr;
    delr.responses.push_back({"t", uuid{7}, 3, "no state"});
    expect_round_trip(api_key::delete_share_group_offsets, 0, 0, delr);
}

}  // namespace
}  // namespace sluice::protocol

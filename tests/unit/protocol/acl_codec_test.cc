// DescribeAcls, CreateAcls and DeleteAcls round-trip in v0-v3; v0 frames (no pattern type,
// which is then LITERAL) and a flexible v2 frame, assembled by hand from Kafka's message
// schemas, decode to the fields they hold.

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/acls.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;
using test::mutate_and_decode;

acl_filter sample_filter() {
    return {2, "orders", 4, "User:alice", std::nullopt, 3, 3};
}

TEST(acl_codec, describe_acls_v0_v3) {
    describe_acls_request req;
    req.filter = sample_filter();
    expect_round_trip(api_key::describe_acls, 0, 3, req);
    req.filter.resource_name.reset();
    req.filter.principal.reset();
    expect_round_trip(api_key::describe_acls, 0, 3, req);
    mutate_and_decode(api_key::describe_acls, 0, 3, req, 29);

    describe_acls_response resp;
    resp.resources.push_back({2, "orders", 3, {{"User:alice", "*", 3, 3}, {"User:bob", "*", 4, 2}}});
    resp.resources.push_back({4, "kafka-cluster", 3, {{"User:admin", "*", 2, 3}}});
    expect_round_trip(api_key::describe_acls, 0, 3, resp);
    resp = {};
    resp.error_code = 31;
    resp.error_message = "KafkaDescribe on sluice:cluster is needed to describe ACLs";
    expect_round_trip(api_key::describe_acls, 0, 3, resp);
}

TEST(acl_codec, create_acls_v0_v3) {
    create_acls_request req;
    req.creations.push_back({2, "orders-", 4, {"User:alice", "*", 3, 3}});
    req.creations.push_back({3, "g", 3, {"User:bob", "10.0.0.1", 2, 2}});
    expect_round_trip(api_key::create_acls, 1, 3, req);
    for (auto& c : req.creations) c.pattern_type = literal_pattern_type;  // v0 has none
    expect_round_trip(api_key::create_acls, 0, 0, req);
    mutate_and_decode(api_key::create_acls, 0, 3, req, 30);

    create_acls_response resp;
    resp.results.push_back({0, std::nullopt});
    resp.results.push_back({42, "host '10.0.0.1' cannot be expressed"});
    expect_round_trip(api_key::create_acls, 0, 3, resp);
}

TEST(acl_codec, delete_acls_v0_v3) {
    delete_acls_request req;
    req.filters.push_back(sample_filter());
    req.filters.push_back({1, std::nullopt, 1, std::nullopt, std::nullopt, 1, 1});
    expect_round_trip(api_key::delete_acls, 1, 3, req);
    mutate_and_decode(api_key::delete_acls, 0, 3, req, 31);

    delete_acls_response resp;
    auto& fr = resp.filter_results.emplace_back();
    fr.matching_acls.push_back({0, std::nullopt, 2, "orders", 4, {"User:alice", "*", 3, 3}});
    fr.matching_acls.push_back({42, "the binding comes from policy 'ops'", 2, "r", 4,
                                {"User:ops", "*", 3, 3}});
    resp.filter_results.push_back({31, "KafkaAlter on sluice:cluster is needed", {}});
    expect_round_trip(api_key::delete_acls, 1, 3, resp);
}

TEST(acl_codec, create_acls_v0_frame_is_literal) {
    // creations: int32 count 1; resource type int8 2 (TOPIC); name "t"; principal
    // "User:a"; host "*"; operation 3 (READ); permission 3 (ALLOW).
    const bytes frame = {0, 0, 0, 1, 2, 0, 1, 't', 0, 6, 'U', 's', 'e', 'r', ':', 'a',
                         0, 1, '*', 3, 3};
    create_acls_request req;
    req.creations.push_back({0, "", 0, {}});
    ASSERT_TRUE(decode_message(frame, 0, false, req));
    ASSERT_EQ(req.creations.size(), 1u);
    const auto& c = req.creations[0];
    EXPECT_EQ(c.resource_type, 2);
    EXPECT_EQ(c.resource_name, "t");
    EXPECT_EQ(c.pattern_type, literal_pattern_type);
    EXPECT_EQ(c.entry.principal, "User:a");
    EXPECT_EQ(c.entry.host, "*");
    EXPECT_EQ(c.entry.operation, 3);
    EXPECT_EQ(c.entry.permission_type, 3);
}

TEST(acl_codec, describe_acls_v2_frame_with_null_filters) {
    EXPECT_EQ(first_flexible_version(static_cast<int16_t>(api_key::describe_acls)), 2);
    // resource type 1 (ANY); name null (compact: 0); pattern type 1 (ANY); principal
    // null; host null; operation 1 (ANY); permission 1 (ANY); no tagged fields.
    const bytes frame = {1, 0, 1, 0, 0, 1, 1, 0};
    describe_acls_request req;
    ASSERT_TRUE(decode_message(frame, 2, true, req));
    EXPECT_EQ(req.filter.resource_type, 1);
    EXPECT_FALSE(req.filter.resource_name);
    EXPECT_EQ(req.filter.pattern_type, 1);
    EXPECT_FALSE(req.filter.principal);
    EXPECT_FALSE(req.filter.host);
    bytes again;
    encode_message(again, 2, true, req);
    EXPECT_EQ(again, frame);
}

}  // namespace
}  // namespace sluice::protocol

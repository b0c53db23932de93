// The transaction APIs round-trip every supported version; a truncated body never
// decodes; version-specific fields appear only where Kafka's schemas put them.

#include <gtest/gtest.h>

#include "codec_test_util.h"
#include "protocol/api_key.h"
#include "protocol/messages/add_offsets_to_txn.h"
#include "protocol/messages/add_partitions_to_txn.h"
#include "protocol/messages/api_versions.h"
#include "protocol/messages/end_txn.h"
#include "protocol/messages/txn_offset_commit.h"

namespace sluice::protocol {
namespace {

using test::expect_round_trip;

TEST(txn_codec, add_partitions_to_txn_all_versions) {
    add_partitions_to_txn_request req;
    req.transactional_id = "app";
    req.producer_id = 7;
    req.producer_epoch = 2;
    req.topics.push_back({"t", {0, 3}});
    req.transactions.push_back({"other", 8, 1, true, {{"u", {1}}}});
    expect_round_trip(api_key::add_partitions_to_txn, 0, 5, req);

    add_partitions_to_txn_response resp;
    resp.throttle_time_ms = 1;
    resp.error_code = 0;
    resp.results_by_topic.push_back({"t", {{0, 0}, {3, 48}}});
    resp.results_by_transaction.push_back({"other", {{"u", {{1, 51}}}}});
    expect_round_trip(api_key::add_partitions_to_txn, 0, 5, resp);

    // v3 carries the one transaction's fields, v4 only the batch.
    for (int16_t v : {3, 4}) {
        bytes b;
        encode_message(b, v, true, req);
        add_partitions_to_txn_request back;
        ASSERT_TRUE(decode_message(b, v, true, back));
        EXPECT_EQ(back.transactional_id, v == 3 ? "app" : "");
        EXPECT_EQ(back.transactions.size(), v == 3 ? 0u : 1u);
    }
}

TEST(txn_codec, add_offsets_end_txn_and_txn_offset_commit_all_versions) {
    expect_round_trip(api_key::add_offsets_to_txn, 0, 4,
                      add_offsets_to_txn_request{"app", 7, 2, "group"});
    expect_round_trip(api_key::add_offsets_to_txn, 0, 4, add_offsets_to_txn_response{1, 47});
    expect_round_trip(api_key::end_txn, 0, 5, end_txn_request{"app", 7, 2, true});
    end_txn_response er{0, 0, 7, 3};
    expect_round_trip(api_key::end_txn, 0, 5, er);
    bytes v4;
    encode_message(v4, 4, true, er);
    bytes v5;
    encode_message(v5, 5, true, er);
    EXPECT_EQ(v5.size(), v4.size() + 10);  // producer id and epoch from v5 on

    txn_offset_commit_request req;
    req.transactional_id = "app";
    req.group_id = "g";
    req.producer_id = 7;
    req.producer_epoch = 2;
    req.generation_id = 4;
    req.member_id = "m-1";
    req.group_instance_id = "i-1";
    req.topics.push_back({"in", {{0, 42, 3, "meta"}, {1, 43, -1, std::nullopt}}});
    expect_round_trip(api_key::txn_offset_commit, 0, 5, req);
    txn_offset_commit_response resp;
    resp.topics.push_back({"in", {{0, 0}, {1, 22}}});
    expect_round_trip(api_key::txn_offset_commit, 0, 5, resp);
}

TEST(txn_codec, api_versions_features_are_tagged_fields_from_v3) {
    api_versions_response r;
    r.api_keys.push_back({0, 0, 12});
    r.supported_features.push_back({"transaction.version", 0, 2});
    r.finalized_features_epoch = 1;
    r.finalized_features.push_back({"transaction.version", 2, 2});
    bytes b;
    encode_message(b, 3, true, r);
    api_versions_response back;
    ASSERT_TRUE(decode_message(b, 3, true, back));
    ASSERT_EQ(back.finalized_features.size(), 1u);
    EXPECT_EQ(back.finalized_features[0].name, "transaction.version");
    EXPECT_EQ(back.finalized_features[0].max_version_level, 2);
    EXPECT_EQ(back.finalized_features_epoch, 1);
    ASSERT_EQ(back.supported_features.size(), 1u);
    EXPECT_EQ(back.supported_features[0].max_version, 2);
}

}  // namespace
}  // namespace sluice::protocol

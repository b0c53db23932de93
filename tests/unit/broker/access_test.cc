// The table from Kafka APIs to the actions they need covers every supported API, and
// access_control follows the catalog's policies as they change.

#include "broker/access.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <set>

#include "broker/api_table.h"
#include "catalog/catalog.h"

namespace sluice::broker {
namespace {

using protocol::api_key;
using security::action;
using security::resource_kind;

TEST(access_rules, every_api_but_the_login_ones_has_a_rule) {
    // DescribeCluster too: Kafka answers it to any client, only its authorized
    // operations depend on Describe on the cluster (Connect workers ask it at start).
    const std::set<api_key> open = {api_key::api_versions, api_key::sasl_handshake,
                                    api_key::sasl_authenticate, api_key::describe_cluster};
    std::set<api_key> ruled;
    for (const auto& r : access_rules()) ruled.insert(r.api);
    for (const auto& api : supported_apis()) {
        EXPECT_NE(open.count(api.key) == 1, ruled.count(api.key) == 1)
            << api.name << ": every API needs a rule, except the login ones and DescribeCluster";
    }
    for (auto k : ruled) EXPECT_NE(find_api(static_cast<int16_t>(k)), nullptr);
}

TEST(access_rules, at_most_one_action_per_api_and_resource_kind) {
    std::set<std::pair<api_key, resource_kind>> seen;
    for (const auto& r : access_rules())
        EXPECT_TRUE(seen.insert({r.api, r.kind}).second) << static_cast<int>(r.api);
}

TEST(access_rules, kafka_mapping) {
    EXPECT_EQ(required_action(api_key::produce, resource_kind::topic), action::write);
    EXPECT_EQ(required_action(api_key::fetch, resource_kind::topic), action::read);
    EXPECT_EQ(required_action(api_key::offset_commit, resource_kind::group), action::read);
    EXPECT_EQ(required_action(api_key::create_topics, resource_kind::cluster), action::create);
    EXPECT_EQ(required_action(api_key::create_partitions, resource_kind::topic), action::alter);
    EXPECT_EQ(required_action(api_key::alter_user_scram_credentials, resource_kind::cluster),
              action::alter);
    EXPECT_FALSE(required_action(api_key::produce, resource_kind::group));
    // Transactions: Write on the transactional id (Describe to find its coordinator).
    for (auto api : {api_key::produce, api_key::init_producer_id, api_key::add_partitions_to_txn,
                     api_key::add_offsets_to_txn, api_key::end_txn, api_key::txn_offset_commit})
        EXPECT_EQ(required_action(api, resource_kind::transactional_id), action::write)
            << static_cast<int>(api);
    EXPECT_EQ(required_action(api_key::find_coordinator, resource_kind::transactional_id),
              action::describe);
    EXPECT_EQ(required_action(api_key::add_partitions_to_txn, resource_kind::cluster),
              action::cluster_action);
    // Operators' transaction APIs (kafka-transactions), as Kafka.
    EXPECT_EQ(required_action(api_key::describe_transactions, resource_kind::transactional_id),
              action::describe);
    EXPECT_EQ(required_action(api_key::list_transactions, resource_kind::transactional_id),
              action::describe);
    EXPECT_EQ(required_action(api_key::write_txn_markers, resource_kind::cluster),
              action::cluster_action);
}

class access_control_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::path(::testing::TempDir()) / "access.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        auto c = catalog::catalog::open(_dir / "catalog.db");
        ASSERT_TRUE(c.ok()) << c.err().message;
        _cat = std::move(*c);
    }
    void TearDown() override {
        _cat.reset();
        std::filesystem::remove_all(_dir);
    }
    std::filesystem::path _dir;
    std::unique_ptr<catalog::catalog> _cat;
};

TEST_F(access_control_test, follows_policy_changes_at_the_next_check) {
    access_control ac(*_cat, security::authz_mode::required, true);
    security::principal alice{"alice", true};
    security::resource orders{resource_kind::topic, "orders"};
    EXPECT_FALSE(ac.allowed(alice, action::write, orders));
    ASSERT_TRUE(_cat->put_policy(
        "w",
        R"({"Statement":[{"Effect":"Allow","Action":"KafkaWrite","Resource":"sluice:topic:ord*"}]})"));
    ASSERT_TRUE(_cat->attach_policy("w", "alice"));
    EXPECT_TRUE(ac.allowed(alice, action::write, orders));
    EXPECT_FALSE(ac.allowed(alice, action::read, orders));
    EXPECT_FALSE(ac.allowed({"bob", true}, action::write, orders));
    ASSERT_TRUE(_cat->detach_policy("w", "alice"));
    EXPECT_FALSE(ac.allowed(alice, action::write, orders));
}

TEST_F(access_control_test, a_stored_document_that_does_not_parse_grants_nothing) {
    access_control ac(*_cat, security::authz_mode::required, true);
    ASSERT_TRUE(_cat->put_policy("broken", R"({"Statement":[{"Effect":"Allow"}]})"));
    ASSERT_TRUE(_cat->attach_policy("broken", "alice"));
    EXPECT_FALSE(ac.allowed({"alice", true}, action::read, {resource_kind::topic, "t"}));
}

// A document that no longer parses may have held a Deny: its users lose every action,
// whatever their other policies allow, and in permissive mode as well.
TEST_F(access_control_test, a_stored_document_that_does_not_parse_denies_its_users) {
    access_control ac(*_cat, security::authz_mode::permissive, true);
    security::principal alice{"alice", true};
    security::resource orders{resource_kind::topic, "orders"};
    ASSERT_TRUE(_cat->put_policy(
        "read", R"({"Statement":[{"Effect":"Allow","Action":"KafkaRead","Resource":"*"}]})"));
    ASSERT_TRUE(_cat->attach_policy("read", "alice"));
    EXPECT_TRUE(ac.allowed(alice, action::read, orders));
    ASSERT_TRUE(_cat->put_policy("broken", R"({"Statement":[{"Effect":"Deny","Action":1}]})"));
    ASSERT_TRUE(_cat->attach_policy("broken", "alice"));
    EXPECT_FALSE(ac.allowed(alice, action::read, orders));
    EXPECT_FALSE(ac.allowed(alice, action::describe, {resource_kind::cluster, ""}));
    // Users it is not attached to keep the permissive default.
    EXPECT_TRUE(ac.allowed({"bob", true}, action::read, orders));
    ASSERT_TRUE(_cat->detach_policy("broken", "alice"));
    EXPECT_TRUE(ac.allowed(alice, action::read, orders));
}

TEST_F(access_control_test, credentials_come_from_the_catalog) {
    access_control ac(*_cat, security::authz_mode::permissive, false);
    EXPECT_FALSE(ac.authentication_required());
    ASSERT_TRUE(_cat->upsert_credential({"alice", 2, "salt", 4096, "sk", "vk"}));
    auto c = ac.credentials("alice");
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].mechanism, security::scram_mechanism::sha512);
    EXPECT_EQ(c[0].salt, "salt");
    EXPECT_EQ(c[0].stored_key, "sk");
    EXPECT_EQ(c[0].server_key, "vk");
    EXPECT_TRUE(ac.credentials("bob").empty());
    // Permissive: nothing attached, nothing denied.
    EXPECT_TRUE(ac.allowed({"bob", true}, action::delete_, {resource_kind::topic, "t"}));
}

}  // namespace
}  // namespace sluice::broker

// The authorizer: policies attached to users, Deny over Allow, implied actions, modes.

#include <gtest/gtest.h>

#include "resources.h"
#include "security/authorizer.h"

namespace sluice::security {
namespace {

using test::group;
using test::topic;

policy make(std::string name, std::string_view json) {
    auto p = parse_policy(std::move(name), json);
    EXPECT_TRUE(p) << (p ? "" : p.err().message);
    return p ? std::move(p).value() : policy{};
}

principal user(std::string name) {
    return {std::move(name), true};
}
const resource cluster{};

TEST(authorizer, allow_grants_only_what_it_names) {
    authorizer az(authz_mode::required);
    az.replace({{"alice", {make("read-orders", R"({"Statement": {"Effect": "Allow",
        "Action": "KafkaRead", "Resource": "sluice:topic:orders"}})")}}});
    EXPECT_TRUE(az.allowed(user("alice"), action::read, topic("orders")));
    EXPECT_FALSE(az.allowed(user("alice"), action::write, topic("orders")));
    EXPECT_FALSE(az.allowed(user("alice"), action::read, topic("orders2")));
    EXPECT_FALSE(az.allowed(user("alice"), action::read, group("orders")));
    EXPECT_FALSE(az.allowed(user("bob"), action::read, topic("orders")));
    EXPECT_FALSE(az.allowed(principal{}, action::read, topic("orders")));
}

TEST(authorizer, deny_in_one_policy_overrides_allow_in_another) {
    authorizer az(authz_mode::permissive);
    az.replace({{"alice",
                 {make("all", R"({"Statement": {"Effect": "Allow", "Action": "*",
                                                "Resource": "*"}})"),
                  make("no-delete", R"({"Statement": {"Effect": "Deny", "Action": "KafkaDelete",
                                                      "Resource": "sluice:topic:*"}})")}}});
    EXPECT_FALSE(az.allowed(user("alice"), action::delete_, topic("orders")));
    EXPECT_TRUE(az.allowed(user("alice"), action::write, topic("orders")));
    EXPECT_TRUE(az.allowed(user("alice"), action::delete_, group("g")));
    // Order of attachment does not matter.
    az.replace({{"alice",
                 {make("no-delete", R"({"Statement": {"Effect": "Deny", "Action": "KafkaDelete",
                                                      "Resource": "sluice:topic:*"}})"),
                  make("all", R"({"Statement": {"Effect": "Allow", "Action": "*",
                                                "Resource": "*"}})")}}});
    EXPECT_FALSE(az.allowed(user("alice"), action::delete_, topic("orders")));
}

TEST(authorizer, wildcard_actions_and_prefix_resources) {
    authorizer az(authz_mode::required);
    az.replace({{"svc", {make("p", R"({"Statement": [
        {"Effect": "Allow", "Action": "KafkaDescribe*", "Resource": "sluice:topic:orders-*"},
        {"Effect": "Allow", "Action": ["KafkaRead", "KafkaWrite"],
         "Resource": ["sluice:topic:orders-??", "sluice:group:svc-*"]},
        {"Effect": "Allow", "Action": "KafkaClusterAction", "Resource": "sluice:cluster"}]})")}}});
    EXPECT_TRUE(az.allowed(user("svc"), action::describe, topic("orders-anything")));
    EXPECT_TRUE(az.allowed(user("svc"), action::describe_configs, topic("orders-x")));
    EXPECT_FALSE(az.allowed(user("svc"), action::alter_configs, topic("orders-x")));
    EXPECT_TRUE(az.allowed(user("svc"), action::write, topic("orders-eu")));
    EXPECT_FALSE(az.allowed(user("svc"), action::write, topic("orders-eu1")));
    EXPECT_FALSE(az.allowed(user("svc"), action::write, topic("xorders-eu")));
    EXPECT_TRUE(az.allowed(user("svc"), action::read, group("svc-consumers")));
    EXPECT_FALSE(az.allowed(user("svc"), action::read, group("other")));
    EXPECT_TRUE(az.allowed(user("svc"), action::cluster_action, cluster));
    EXPECT_FALSE(az.allowed(user("svc"), action::create, cluster));
}

TEST(authorizer, read_write_delete_alter_imply_describe) {
    authorizer az(authz_mode::required);
    for (const char* act : {"KafkaRead", "KafkaWrite", "KafkaDelete", "KafkaAlter"}) {
        std::string json = std::string(R"({"Statement": {"Effect": "Allow", "Action": ")") + act +
                           R"(", "Resource": "sluice:topic:t"}})";
        az.replace({{"u", {make(act, json)}}});
        EXPECT_TRUE(az.allowed(user("u"), action::describe, topic("t"))) << act;
        EXPECT_FALSE(az.allowed(user("u"), action::describe, topic("other"))) << act;
        EXPECT_FALSE(az.allowed(user("u"), action::describe_configs, topic("t"))) << act;
    }
    az.replace({{"u", {make("create", R"({"Statement": {"Effect": "Allow",
        "Action": ["KafkaCreate", "KafkaDescribeConfigs"], "Resource": "sluice:topic:t"}})")}}});
    EXPECT_FALSE(az.allowed(user("u"), action::describe, topic("t")));  // Create does not imply
    // Describe implies nothing back.
    az.replace({{"u", {make("d", R"({"Statement": {"Effect": "Allow",
        "Action": "KafkaDescribe", "Resource": "sluice:topic:t"}})")}}});
    EXPECT_FALSE(az.allowed(user("u"), action::read, topic("t")));
}

TEST(authorizer, alter_configs_implies_describe_configs) {
    authorizer az(authz_mode::required);
    az.replace({{"u", {make("ac", R"({"Statement": {"Effect": "Allow",
        "Action": "KafkaAlterConfigs", "Resource": "sluice:topic:t"}})")}}});
    EXPECT_TRUE(az.allowed(user("u"), action::describe_configs, topic("t")));
    EXPECT_FALSE(az.allowed(user("u"), action::describe, topic("t")));
    EXPECT_FALSE(az.allowed(user("u"), action::alter, topic("t")));
}

TEST(authorizer, deny_on_describe_beats_an_implying_allow) {
    authorizer az(authz_mode::permissive);
    az.replace({{"u", {make("p", R"({"Statement": [
        {"Effect": "Allow", "Action": "KafkaRead", "Resource": "sluice:topic:*"},
        {"Effect": "Deny", "Action": "KafkaDescribe", "Resource": "sluice:topic:secret"},
        {"Effect": "Deny", "Action": "KafkaRead", "Resource": "sluice:topic:audit"}]})")}}});
    EXPECT_FALSE(az.allowed(user("u"), action::describe, topic("secret")));
    EXPECT_TRUE(az.allowed(user("u"), action::read, topic("secret")));
    EXPECT_TRUE(az.allowed(user("u"), action::describe, topic("public")));
    // A Deny applies to the action it names only, as Kafka's ACLs do.
    EXPECT_FALSE(az.allowed(user("u"), action::read, topic("audit")));
    EXPECT_TRUE(az.allowed(user("u"), action::describe, topic("audit")));
}

TEST(authorizer, mode_decides_when_nothing_matches) {
    authorizer strict(authz_mode::required);
    authorizer open(authz_mode::permissive);
    EXPECT_EQ(strict.mode(), authz_mode::required);
    EXPECT_EQ(open.mode(), authz_mode::permissive);
    EXPECT_FALSE(strict.allowed(user("nobody"), action::read, topic("t")));
    EXPECT_TRUE(open.allowed(user("nobody"), action::read, topic("t")));
    std::map<std::string, std::vector<policy>> attached = {
        {"u", {make("p", R"({"Statement": {"Effect": "Deny", "Action": "KafkaWrite",
                                           "Resource": "sluice:topic:t"}})")}}};
    strict.replace(attached);
    open.replace(attached);
    EXPECT_FALSE(strict.allowed(user("u"), action::read, topic("t")));
    EXPECT_TRUE(open.allowed(user("u"), action::read, topic("t")));
    EXPECT_FALSE(open.allowed(user("u"), action::write, topic("t")));
    EXPECT_TRUE(open.allowed(principal{}, action::write, topic("t")));  // ANONYMOUS
}

TEST(authorizer, replace_takes_effect_for_later_checks) {
    authorizer az(authz_mode::required);
    EXPECT_FALSE(az.allowed(user("u"), action::write, topic("t")));
    az.replace({{"u", {make("w", R"({"Statement": {"Effect": "Allow", "Action": "KafkaWrite",
                                                    "Resource": "sluice:topic:t"}})")}}});
    EXPECT_TRUE(az.allowed(user("u"), action::write, topic("t")));
    az.replace({{"other", {make("w", R"({"Statement": {"Effect": "Allow",
        "Action": "KafkaWrite", "Resource": "sluice:topic:t"}})")}}});
    EXPECT_FALSE(az.allowed(user("u"), action::write, topic("t")));
    EXPECT_TRUE(az.allowed(user("other"), action::write, topic("t")));
    az.replace({});
    EXPECT_FALSE(az.allowed(user("other"), action::write, topic("t")));
}

TEST(authorizer, anonymous_is_a_user_like_any_other) {
    authorizer az(authz_mode::required);
    az.replace({{"ANONYMOUS", {make("anon", R"({"Statement": {"Effect": "Allow",
        "Action": "KafkaRead", "Resource": "sluice:topic:public-*"}})")}}});
    principal anon;
    EXPECT_EQ(anon.to_string(), "User:ANONYMOUS");
    EXPECT_TRUE(az.allowed(anon, action::read, topic("public-news")));
    EXPECT_FALSE(az.allowed(anon, action::read, topic("private")));
}

TEST(authorizer, policies_of_every_user_apply_to_each_principal) {
    authorizer az(authz_mode::required);
    az.replace({{std::string(every_user),
                 {make("kafka-acl:User:*", R"({"Statement": [
                     {"Effect": "Allow", "Action": "KafkaRead", "Resource": "sluice:topic:news"},
                     {"Effect": "Deny", "Action": "KafkaWrite", "Resource": "sluice:topic:*"}]})")}},
                {"alice", {make("alice-writes", R"({"Statement": {"Effect": "Allow",
                     "Action": "KafkaWrite", "Resource": "sluice:topic:orders"}})")}}});
    for (const auto& p : {user("alice"), user("bob"), principal{}}) {
        EXPECT_TRUE(az.allowed(p, action::read, topic("news"))) << p.to_string();
        EXPECT_TRUE(az.allowed(p, action::describe, topic("news"))) << p.to_string();
        EXPECT_FALSE(az.allowed(p, action::read, topic("orders"))) << p.to_string();
    }
    // The Deny of every user wins over alice's own Allow.
    EXPECT_FALSE(az.allowed(user("alice"), action::write, topic("orders")));
}

}  // namespace
}  // namespace sluice::security

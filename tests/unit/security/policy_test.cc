// Identity policy documents: parsing, validation errors, pattern matching, evaluation.

#include <gtest/gtest.h>

#include <chrono>

#include "resources.h"
#include "security/policy.h"

namespace sluice::security {
namespace {

using test::group;
using test::topic;
using test::transactional_id;

policy parse_ok(std::string_view json) {
    auto p = parse_policy("p", json);
    EXPECT_TRUE(p) << json << ": " << (p ? "" : p.err().message);
    return p ? std::move(p).value() : policy{};
}

std::string error_of(std::string_view json) {
    auto p = parse_policy("p", json);
    EXPECT_FALSE(p) << json;
    if (p) return "";
    EXPECT_EQ(p.code(), errc::invalid_argument);
    return p.err().message;
}

TEST(policy, action_and_resource_names) {
    EXPECT_EQ(action_name(action::read), "KafkaRead");
    EXPECT_EQ(action_name(action::describe_configs), "KafkaDescribeConfigs");
    EXPECT_EQ(action_name(action::cluster_action), "KafkaClusterAction");
    for (size_t i = 0; i < action_count; ++i) {
        auto a = static_cast<action>(i);
        EXPECT_EQ(parse_action(action_name(a)), a);
    }
    EXPECT_EQ(parse_action("kafkaread"), std::nullopt);
    EXPECT_EQ(resource_name(topic("orders")), "sluice:topic:orders");
    EXPECT_EQ(resource_name(group("g1")), "sluice:group:g1");
    EXPECT_EQ(resource_name(transactional_id("payments")), "sluice:transactional-id:payments");
    EXPECT_EQ(resource_name(resource{}), "sluice:cluster");
}

TEST(policy, transactional_ids_are_a_resource_kind) {
    auto p = parse_ok(R"({"Statement": [
        {"Effect": "Allow", "Action": "KafkaWrite", "Resource": "sluice:transactional-id:pay-*"},
        {"Effect": "Deny", "Action": "KafkaWrite", "Resource": "sluice:transactional-id:pay-x"}]})");
    EXPECT_EQ(evaluate(p, action::write, transactional_id("pay-1")), decision::allow);
    EXPECT_EQ(evaluate(p, action::write, transactional_id("pay-x")), decision::deny);
    EXPECT_EQ(evaluate(p, action::write, transactional_id("other")), decision::no_match);
    // A topic of the same name is another resource.
    EXPECT_EQ(evaluate(p, action::write, topic("pay-1")), decision::no_match);
    EXPECT_EQ(error_of(R"({"Statement": [{"Effect": "Allow", "Action": "KafkaWrite",
                                          "Resource": "sluice:transactional-id:"}]})"),
              "Statement[0].Resource: resource 'sluice:transactional-id:' needs a name or "
              "pattern after \"sluice:transactional-id:\"");
}

TEST(policy, parses_list_forms) {
    auto p = parse_ok(R"({"Version": "1", "Statement": [
        {"Sid": "read-orders", "Effect": "Allow", "Action": ["KafkaRead", "KafkaDescribe"],
         "Resource": ["sluice:topic:orders-*", "sluice:group:*"]},
        {"Effect": "Deny", "Action": ["KafkaWrite"], "Resource": ["sluice:topic:orders-eu"]}]})");
    EXPECT_EQ(p.name, "p");
    ASSERT_EQ(p.statements.size(), 2u);
    EXPECT_EQ(p.statements[0].eff, effect::allow);
    EXPECT_EQ(p.statements[0].actions, (std::vector<std::string>{"KafkaRead", "KafkaDescribe"}));
    EXPECT_EQ(p.statements[0].resources,
              (std::vector<std::string>{"sluice:topic:orders-*", "sluice:group:*"}));
    EXPECT_EQ(p.statements[1].eff, effect::deny);
    EXPECT_EQ(p.statements[1].actions, (std::vector<std::string>{"KafkaWrite"}));
}

TEST(policy, parses_string_forms_and_a_single_statement_object) {
    std::string json = R"({"Statement": {"Effect": "Allow", "Action": "Kafka*", "Resource": "*"}})";
    auto p = parse_ok(json);
    EXPECT_EQ(p.document, json);
    ASSERT_EQ(p.statements.size(), 1u);
    EXPECT_EQ(p.statements[0].actions, (std::vector<std::string>{"Kafka*"}));
    EXPECT_EQ(p.statements[0].resources, (std::vector<std::string>{"*"}));
    auto q = parse_ok(R"({"Statement": [{"Effect": "Deny", "Action": "*",
                                          "Resource": "sluice:cluster"}]})");
    EXPECT_EQ(q.statements.at(0).eff, effect::deny);
    parse_ok(R"({"Statement": {"Effect": "Allow", "Action": "Kafka?escribe",
                                "Resource": ["sluice:*", "sluice:topic:?", "sluice:cl*"]}})");
}

TEST(policy, rejects_bad_documents_naming_the_place) {
    const std::pair<std::string_view, std::string_view> cases[] = {
        {R"(not json)", "the policy is not valid JSON: "},
        {R"([])", "the policy must be a JSON object"},
        {R"({"Version": "1"})", "missing \"Statement\""},
        {R"({"Version": 1, "Statement": []})", "Version: must be a string"},
        {R"({"Statement": {"Effect": "Allow", "Action": "*", "Resource": "*"}, "Principal": "x",
             "Condition": {}})",
         "unknown keys 'Principal', 'Condition' (expected Version, Statement)"},
        {R"({"Statement": []})", "Statement: must not be an empty list"},
        {R"({"Statement": "Allow"})", "Statement: a statement must be an object"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead"}]})",
         "Statement[0]: missing \"Resource\""},
        {R"({"Statement": [{"Action": "KafkaRead", "Resource": "*"}]})",
         "Statement[0]: missing \"Effect\""},
        {R"({"Statement": [{"Effect": "Allow", "Resource": "*"}]})",
         "Statement[0]: missing \"Action\""},
        {R"({"Statement": [{"Effect": "allow", "Action": "KafkaRead", "Resource": "*"}]})",
         "Statement[0].Effect: must be \"Allow\" or \"Deny\""},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": "*",
                            "Principal": "*"}]})",
         "Statement[0]: unknown key 'Principal' (expected Sid, Effect, Action, Resource)"},
        {R"({"Statement": [{"Effect": "Allow", "Effect": "Deny", "Action": "KafkaRead",
                            "Resource": "*"}]})",
         "Statement[0]: duplicate key 'Effect'"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": "*",
                            "Sid": 3}]})",
         "Statement[0].Sid: must be a string"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": "*"},
                           {"Effect": "Allow", "Action": ["KafkaReed"], "Resource": "*"}]})",
         "Statement[1].Action[0]: unknown action 'KafkaReed'"},
        {R"({"Statement": {"Effect": "Allow", "Action": "kafkaread", "Resource": "*"}})",
         "Statement.Action: unknown action 'kafkaread'"},
        {R"({"Statement": [{"Effect": "Allow", "Action": ["KafkaRead", "Foo*"],
                            "Resource": "*"}]})",
         "Statement[0].Action[1]: pattern 'Foo*' matches no action"},
        {R"({"Statement": [{"Effect": "Allow", "Action": [], "Resource": "*"}]})",
         "Statement[0].Action: must not be an empty list"},
        {R"({"Statement": [{"Effect": "Allow", "Action": [1], "Resource": "*"}]})",
         "Statement[0].Action[0]: must be a string"},
        {R"({"Statement": [{"Effect": "Allow", "Action": {"a": 1}, "Resource": "*"}]})",
         "Statement[0].Action: must be a string or a list of strings"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": []}]})",
         "Statement[0].Resource: must not be an empty list"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead",
                            "Resource": ["sluice:topic:a", "arn:aws:kafka:x"]}]})",
         "Statement[0].Resource[1]: resource 'arn:aws:kafka:x' must be \"*\" or start with "
         "\"sluice:\""},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead", "Resource": ""}]})",
         "Statement[0].Resource: resource '' must be \"*\" or start with \"sluice:\""},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead",
                            "Resource": "sluice:topc:orders"}]})",
         "Statement[0].Resource: resource 'sluice:topc:orders': unknown kind 'topc' (topic, "
         "group, transactional-id or cluster)"},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead",
                            "Resource": "sluice:topic:"}]})",
         "Statement[0].Resource: resource 'sluice:topic:' needs a name or pattern after "
         "\"sluice:topic:\""},
        {R"({"Statement": [{"Effect": "Allow", "Action": "KafkaRead",
                            "Resource": "sluice:cluster:x"}]})",
         "Statement[0].Resource: resource 'sluice:cluster:x': the cluster is \"sluice:cluster\""},
    };
    for (const auto& [json, message] : cases) {
        std::string got = error_of(json);
        EXPECT_TRUE(got.starts_with(message)) << json << "\n got: " << got;
        if (!message.ends_with(": ")) {
            EXPECT_EQ(got, message) << json;
        }
    }
}

TEST(policy, glob_match_cases) {
    EXPECT_TRUE(glob_match("", ""));
    EXPECT_FALSE(glob_match("", "a"));
    EXPECT_TRUE(glob_match("*", ""));
    EXPECT_TRUE(glob_match("*", "anything"));
    EXPECT_TRUE(glob_match("orders", "orders"));
    EXPECT_FALSE(glob_match("orders", "orders2"));
    EXPECT_FALSE(glob_match("orders", "order"));
    EXPECT_TRUE(glob_match("orders-*", "orders-"));
    EXPECT_TRUE(glob_match("orders-*", "orders-eu"));
    EXPECT_FALSE(glob_match("orders-*", "orders"));
    EXPECT_TRUE(glob_match("*-eu", "orders-eu"));
    EXPECT_FALSE(glob_match("*-eu", "orders-eu2"));
    EXPECT_TRUE(glob_match("o?ders", "orders"));
    EXPECT_FALSE(glob_match("o?ders", "oders"));
    EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
    EXPECT_TRUE(glob_match("a*b*c", "abcbc"));
    EXPECT_FALSE(glob_match("a*b*c", "abcb"));
    EXPECT_TRUE(glob_match("*a*", "bab"));
    EXPECT_TRUE(glob_match("**", "x"));
    EXPECT_TRUE(glob_match("?*", "x"));
    EXPECT_FALSE(glob_match("?*", ""));
    EXPECT_TRUE(glob_match("Kafka*Configs", "KafkaDescribeConfigs"));
    EXPECT_FALSE(glob_match("kafka*", "KafkaRead"));  // case-sensitive
    EXPECT_TRUE(glob_match("sluice:topic:*", "sluice:topic:a:b"));
}

TEST(policy, glob_match_pathological_patterns_stay_fast) {
    // Exponential in a naive recursive matcher; linear-ish here.
    std::string text(20000, 'a');
    std::string pattern;
    for (int i = 0; i < 200; ++i) pattern += "a*";
    pattern += "b";
    auto start = std::chrono::steady_clock::now();
    EXPECT_FALSE(glob_match(pattern, text));
    EXPECT_TRUE(glob_match(pattern.substr(0, pattern.size() - 1), text));
    EXPECT_FALSE(glob_match(std::string(100, '*') + "b", text));
    EXPECT_TRUE(glob_match(std::string(100, '*') + "a", text));
    auto elapsed = std::chrono::steady_clock::now() - start;
    EXPECT_LT(elapsed, std::chrono::seconds(2));
}

TEST(policy, evaluate_deny_wins_within_a_policy) {
    auto p = parse_ok(R"({"Statement": [
        {"Effect": "Allow", "Action": "Kafka*", "Resource": "sluice:topic:orders-*"},
        {"Effect": "Deny", "Action": "KafkaDelete", "Resource": "sluice:topic:orders-eu"}]})");
    EXPECT_EQ(evaluate(p, action::read, topic("orders-eu")), decision::allow);
    EXPECT_EQ(evaluate(p, action::delete_, topic("orders-us")), decision::allow);
    EXPECT_EQ(evaluate(p, action::delete_, topic("orders-eu")), decision::deny);
    EXPECT_EQ(evaluate(p, action::read, topic("payments")), decision::no_match);
    EXPECT_EQ(evaluate(p, action::read, group("orders-eu")), decision::no_match);
    EXPECT_EQ(evaluate(p, action::describe, resource{}), decision::no_match);
}

}  // namespace
}  // namespace sluice::security

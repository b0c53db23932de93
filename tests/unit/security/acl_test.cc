// Kafka ACL bindings as identity policy statements: the mapping both ways, every
// refusal, Kafka's filter semantics, managed policy names and documents, enforcement.

#include <gtest/gtest.h>

#include "resources.h"
#include "security/acl.h"
#include "security/authorizer.h"

namespace sluice::security::acl {
namespace {

binding make(resource_type t, std::string name, pattern_type p, operation op,
             permission perm = permission::allow, std::string principal = "User:alice") {
    return {t, std::move(name), p, std::move(principal), "*", op, perm};
}

statement statement_of(const binding& b) {
    auto m = to_statement(b);
    EXPECT_TRUE(m) << to_string(b) << ": " << (m ? "" : m.err().message);
    if (!m) return {};
    EXPECT_EQ(m->user, b.principal.substr(5));
    return m->st;
}

std::string refusal(const binding& b) {
    auto m = to_statement(b);
    EXPECT_FALSE(m) << to_string(b);
    if (m) return "";
    EXPECT_EQ(m.code(), errc::invalid_argument);
    return m.err().message;
}

TEST(acl, bindings_become_statements) {
    auto st = statement_of(make(resource_type::topic, "orders", pattern_type::literal,
                                operation::read));
    EXPECT_EQ(st.eff, effect::allow);
    EXPECT_EQ(st.actions, std::vector<std::string>{"KafkaRead"});
    EXPECT_EQ(st.resources, std::vector<std::string>{"sluice:topic:orders"});

    st = statement_of(make(resource_type::topic, "orders-", pattern_type::prefixed,
                           operation::write, permission::deny));
    EXPECT_EQ(st.eff, effect::deny);
    EXPECT_EQ(st.actions, std::vector<std::string>{"KafkaWrite"});
    EXPECT_EQ(st.resources, std::vector<std::string>{"sluice:topic:orders-*"});

    st = statement_of(make(resource_type::group, "*", pattern_type::literal, operation::all));
    EXPECT_EQ(st.actions, std::vector<std::string>{"Kafka*"});
    EXPECT_EQ(st.resources, std::vector<std::string>{"sluice:group:*"});

    st = statement_of(make(resource_type::cluster, "kafka-cluster", pattern_type::literal,
                           operation::idempotent_write));
    EXPECT_EQ(st.actions, std::vector<std::string>{"KafkaIdempotentWrite"});
    EXPECT_EQ(st.resources, std::vector<std::string>{"sluice:cluster"});

    // Every operation with a Sluice action maps to it, and back.
    for (size_t i = 0; i < action_count; ++i) {
        auto a = static_cast<action>(i);
        auto s = statement_of(make(resource_type::topic, "t", pattern_type::literal,
                                   operation_of(a)));
        EXPECT_EQ(s.actions, std::vector<std::string>{std::string(action_name(a))});
    }
    EXPECT_EQ(operation_of(action::read), operation::read);
    EXPECT_EQ(operation_of(action::describe_configs), operation::describe_configs);
    EXPECT_EQ(operation_of(action::idempotent_write), operation::idempotent_write);
}

TEST(acl, each_binding_round_trips_through_its_statement) {
    const binding cases[] = {
        make(resource_type::topic, "orders", pattern_type::literal, operation::read),
        make(resource_type::topic, "*", pattern_type::literal, operation::describe),
        make(resource_type::topic, "orders-", pattern_type::prefixed, operation::all,
             permission::deny),
        make(resource_type::group, "g", pattern_type::prefixed, operation::delete_),
        make(resource_type::transactional_id, "payments", pattern_type::literal,
             operation::write),
        make(resource_type::transactional_id, "app-", pattern_type::prefixed, operation::describe),
        make(resource_type::cluster, "kafka-cluster", pattern_type::literal, operation::alter),
        make(resource_type::cluster, "kafka-cluster", pattern_type::literal, operation::all),
    };
    for (const auto& b : cases) {
        auto st = statement_of(b);
        EXPECT_EQ(to_bindings(st, "alice"), std::vector<binding>{b}) << to_string(b);
    }
}

TEST(acl, user_statements_read_as_bindings_where_kafka_can_say_them) {
    statement st{effect::allow,
                 {"KafkaRead", "KafkaAlter*"},
                 {"sluice:topic:orders", "sluice:group:app-*", "sluice:topic:*-audit",
                  "sluice:topic:a?"}};
    auto bs = to_bindings(st, "bob");
    std::vector<binding> want;
    for (auto op : {operation::read, operation::alter, operation::alter_configs}) {
        want.push_back(make(resource_type::topic, "orders", pattern_type::literal, op,
                            permission::allow, "User:bob"));
        want.push_back(make(resource_type::group, "app-", pattern_type::prefixed, op,
                            permission::allow, "User:bob"));
    }
    std::sort(want.begin(), want.end());
    EXPECT_EQ(bs, want);

    // "*" (and "sluice:*") is every topic, group and transactional id and the cluster; "*"
    // actions are ALL.
    auto all = to_bindings({effect::deny, {"*"}, {"*"}}, "admin");
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[0], make(resource_type::topic, "*", pattern_type::literal, operation::all,
                           permission::deny, "User:admin"));
    EXPECT_EQ(all[1], make(resource_type::group, "*", pattern_type::literal, operation::all,
                           permission::deny, "User:admin"));
    EXPECT_EQ(all[2], make(resource_type::cluster, "kafka-cluster", pattern_type::literal,
                           operation::all, permission::deny, "User:admin"));
    EXPECT_EQ(all[3], make(resource_type::transactional_id, "*", pattern_type::literal,
                           operation::all, permission::deny, "User:admin"));
    EXPECT_EQ(to_bindings({effect::allow, {"Kafka*"}, {"sluice:*"}}, "admin").size(), 4u);
    EXPECT_TRUE(to_bindings({effect::allow, {"KafkaRead"}, {"sluice:cl*"}}, "x").empty());
}

TEST(acl, the_wildcard_principal_is_the_policy_of_every_user) {
    auto b = make(resource_type::topic, "orders", pattern_type::literal, operation::read,
                  permission::allow, "User:*");
    auto m = to_statement(b);
    ASSERT_TRUE(m) << m.err().message;
    EXPECT_EQ(m->user, "*");
    EXPECT_EQ(managed_policy_name(m->user), "kafka-acl:User:*");
    EXPECT_EQ(managed_user("kafka-acl:User:*"), std::optional<std::string>("*"));
    // Read back as User:*, so DescribeAcls shows it and DeleteAcls finds it.
    EXPECT_EQ(to_bindings(m->st, "*"), std::vector<binding>{b});
}

TEST(acl, refuses_what_policies_cannot_express_naming_why) {
    auto topic_read = make(resource_type::topic, "orders", pattern_type::literal, operation::read);
    auto with = [&](auto change) {
        binding b = topic_read;
        change(b);
        return refusal(b);
    };
    EXPECT_EQ(with([](binding& b) { b.host = "10.0.0.1"; }),
              "host '10.0.0.1' cannot be expressed: Sluice policies do not restrict hosts, so "
              "an ACL's host must be '*'");
    EXPECT_EQ(with([](binding& b) { b.principal = "Group:ops"; }),
              "principal 'Group:ops' cannot be expressed: Sluice policies attach to users, "
              "written User:NAME");
    EXPECT_EQ(with([](binding& b) { b.principal = "User:"; }),
              "the principal 'User:' has an empty user name");
    for (auto t : {resource_type::delegation_token, resource_type::user}) {
        EXPECT_EQ(with([&](binding& b) { b.type = t; }),
                  fmt::format("ACLs on {} resources cannot be expressed as Sluice policies, "
                              "which cover topics, groups, transactional ids and the cluster",
                              name_of(t)));
    }
    EXPECT_EQ(with([](binding& b) { b.type = resource_type::any; }),
              "invalid resource type ANY for an ACL");
    EXPECT_EQ(with([](binding& b) { b.type = static_cast<resource_type>(9); }),
              "invalid resource type INVALID for an ACL");
    EXPECT_EQ(with([](binding& b) { b.pattern = pattern_type::match; }),
              "pattern type MATCH is for filters; an ACL's pattern type is LITERAL or PREFIXED");
    EXPECT_EQ(with([](binding& b) { b.pattern = pattern_type::any; }),
              "pattern type ANY is for filters; an ACL's pattern type is LITERAL or PREFIXED");
    EXPECT_EQ(with([](binding& b) { b.pattern = pattern_type::unknown; }),
              "invalid pattern type UNKNOWN for an ACL");
    EXPECT_EQ(with([](binding& b) { b.name = "ord*rs"; }),
              "the resource name 'ord*rs' contains '*' or '?', which Sluice policies read as "
              "wildcards; only the whole name \"*\" (LITERAL) means every topic");
    EXPECT_EQ(with([](binding& b) {
                  b.type = resource_type::group;
                  b.pattern = pattern_type::prefixed;
                  b.name = "g?";
              }),
              "the resource name 'g?' contains '*' or '?', which Sluice policies read as "
              "wildcards; only the whole name \"*\" (LITERAL) means every group");
    EXPECT_NE(with([](binding& b) {
                  b.pattern = pattern_type::prefixed;
                  b.name = "*";
              }).find("contains '*' or '?'"),
              std::string::npos);
    EXPECT_EQ(with([](binding& b) { b.name = ""; }), "the resource name must not be empty");
    EXPECT_EQ(with([](binding& b) {
                  b.type = resource_type::cluster;
                  b.name = "my-cluster";
              }),
              "the only valid name for the CLUSTER resource is kafka-cluster");
    EXPECT_EQ(with([](binding& b) {
                  b.type = resource_type::cluster;
                  b.name = "kafka-cluster";
                  b.pattern = pattern_type::prefixed;
              }),
              "the CLUSTER resource takes a LITERAL pattern");
    for (auto op : {operation::create_tokens, operation::describe_tokens,
                    operation::two_phase_commit}) {
        EXPECT_EQ(with([&](binding& b) { b.op = op; }),
                  fmt::format("operation {} has no Sluice action (Sluice has no delegation "
                              "tokens or two-phase commit)",
                              name_of(op)));
    }
    EXPECT_EQ(with([](binding& b) { b.op = operation::any; }), "invalid operation ANY for an ACL");
    EXPECT_EQ(with([](binding& b) { b.op = operation::unknown; }),
              "invalid operation UNKNOWN for an ACL");
    EXPECT_EQ(with([](binding& b) { b.perm = permission::any; }),
              "invalid permission type ANY for an ACL");
}

TEST(acl, filters_follow_kafka) {
    auto lit = make(resource_type::topic, "orders", pattern_type::literal, operation::read);
    auto star = make(resource_type::topic, "*", pattern_type::literal, operation::read);
    auto pre = make(resource_type::topic, "ord", pattern_type::prefixed, operation::write,
                    permission::deny, "User:bob");
    filter any;
    for (const auto& b : {lit, star, pre}) EXPECT_TRUE(matches(any, b));

    filter exact{resource_type::topic, "orders", pattern_type::literal};
    EXPECT_TRUE(matches(exact, lit));
    EXPECT_FALSE(matches(exact, star));
    EXPECT_FALSE(matches(exact, pre));

    filter match{resource_type::topic, "orders", pattern_type::match};  // what applies to it
    EXPECT_TRUE(matches(match, lit));
    EXPECT_TRUE(matches(match, star));
    EXPECT_TRUE(matches(match, pre));
    match.name = "other";
    EXPECT_FALSE(matches(match, lit));
    EXPECT_TRUE(matches(match, star));
    EXPECT_FALSE(matches(match, pre));

    filter by_name_any_pattern{resource_type::any, "ord", pattern_type::any};
    EXPECT_TRUE(matches(by_name_any_pattern, pre));
    EXPECT_FALSE(matches(by_name_any_pattern, lit));

    filter prefixed{resource_type::topic, std::nullopt, pattern_type::prefixed};
    EXPECT_TRUE(matches(prefixed, pre));
    EXPECT_FALSE(matches(prefixed, lit));

    filter group_only{resource_type::group};
    EXPECT_FALSE(matches(group_only, lit));

    filter entry;
    entry.principal = "User:bob";
    EXPECT_TRUE(matches(entry, pre));
    EXPECT_FALSE(matches(entry, lit));
    entry = {};
    entry.host = "*";
    entry.op = operation::write;
    entry.perm = permission::deny;
    EXPECT_TRUE(matches(entry, pre));
    entry.host = "10.0.0.1";
    EXPECT_FALSE(matches(entry, pre));
    entry.host.reset();
    entry.perm = permission::allow;
    EXPECT_FALSE(matches(entry, pre));
}

TEST(acl, malformed_filters_are_named) {
    EXPECT_EQ(filter_error(filter{}), std::nullopt);
    filter f;
    f.type = resource_type::unknown;
    EXPECT_EQ(filter_error(f), "the filter's resource type is UNKNOWN");
    f = {};
    f.pattern = static_cast<pattern_type>(7);
    EXPECT_EQ(filter_error(f), "the filter's pattern type is INVALID");
    f = {};
    f.op = operation::unknown;
    EXPECT_EQ(filter_error(f), "the filter's operation is UNKNOWN");
    f = {};
    f.perm = static_cast<permission>(-1);
    EXPECT_EQ(filter_error(f), "the filter's permission type is INVALID");
}

TEST(acl, managed_policies_are_named_by_principal_and_documents_parse_back) {
    EXPECT_EQ(managed_policy_name("alice"), "kafka-acl:User:alice");
    EXPECT_EQ(managed_user("kafka-acl:User:alice"), "alice");
    EXPECT_EQ(managed_user("kafka-acl:User:"), std::nullopt);
    EXPECT_EQ(managed_user("alice-rw"), std::nullopt);

    std::vector<statement> sts = {
        statement_of(make(resource_type::group, "we\"ird\\", pattern_type::literal,
                          operation::read)),
        {effect::deny, {"KafkaRead", "KafkaWrite"}, {"sluice:topic:a", "sluice:topic:b"}}};
    auto doc = policy_document(sts);
    auto p = parse_policy("kafka-acl:User:alice", doc);
    ASSERT_TRUE(p) << doc << ": " << p.err().message;
    ASSERT_EQ(p->statements.size(), 2u);
    EXPECT_EQ(p->statements[0].resources, std::vector<std::string>{"sluice:group:we\"ird\\"});
    EXPECT_EQ(p->statements[1].eff, effect::deny);
    EXPECT_EQ(p->statements[1].actions, sts[1].actions);
    EXPECT_EQ(p->statements[1].resources, sts[1].resources);
}

TEST(acl, statements_from_bindings_are_enforced_as_kafka_enforces_acls) {
    std::vector<statement> sts = {
        statement_of(make(resource_type::topic, "orders-", pattern_type::prefixed,
                          operation::read)),
        statement_of(make(resource_type::topic, "orders-secret", pattern_type::literal,
                          operation::read, permission::deny)),
        statement_of(make(resource_type::group, "*", pattern_type::literal, operation::read)),
    };
    auto p = parse_policy("kafka-acl:User:alice", policy_document(sts));
    ASSERT_TRUE(p);
    authorizer authz(authz_mode::required);
    authz.replace({{"alice", {*p}}});
    principal alice{"alice", true};
    EXPECT_TRUE(authz.allowed(alice, action::read, test::topic("orders-eu")));
    EXPECT_TRUE(authz.allowed(alice, action::read, test::topic("orders-")));
    EXPECT_TRUE(authz.allowed(alice, action::describe, test::topic("orders-eu")));  // implied
    EXPECT_FALSE(authz.allowed(alice, action::read, test::topic("orders-secret")));  // deny wins
    EXPECT_FALSE(authz.allowed(alice, action::read, test::topic("order")));
    EXPECT_FALSE(authz.allowed(alice, action::write, test::topic("orders-eu")));
    EXPECT_TRUE(authz.allowed(alice, action::read, test::group("any-group")));
    EXPECT_FALSE(authz.allowed(principal{"bob", true}, action::read, test::topic("orders-eu")));
}

}  // namespace
}  // namespace sluice::security::acl

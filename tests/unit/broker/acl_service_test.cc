// Kafka's ACL APIs over a real catalog: managed policies made, attached, extended once per
// request, read back with every policy's statements, removed down to deletion; user
// policies and unparsable stored documents left alone with the reason.

#include "broker/acl_service.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "catalog/catalog.h"

namespace sluice::broker {
namespace {

namespace fs = std::filesystem;
namespace acl = security::acl;
using acl::operation;
using acl::pattern_type;
using acl::permission;
using acl::resource_type;

acl::binding topic_acl(std::string name, operation op, std::string principal = "User:alice",
                       pattern_type p = pattern_type::literal, permission perm = permission::allow) {
    return {resource_type::topic, std::move(name), p, std::move(principal), "*", op, perm};
}

class acl_service_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "acl_service.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        auto c = catalog::catalog::open(_dir / "catalog.db");
        ASSERT_TRUE(c.ok()) << c.err().message;
        _cat = std::move(c.value());
        _acls = std::make_unique<acl_service>(*_cat);
    }
    void TearDown() override {
        _acls.reset();
        _cat.reset();
        fs::remove_all(_dir);
    }
    std::vector<acl::binding> all() const { return _acls->describe(acl::filter{}); }

    fs::path _dir;
    std::unique_ptr<catalog::catalog> _cat;
    std::unique_ptr<acl_service> _acls;
};

TEST_F(acl_service_test, creations_make_one_attached_managed_policy_per_principal) {
    uint64_t gen = _cat->security_generation();
    auto r = _acls->create({topic_acl("orders", operation::read), topic_acl("orders", operation::read),
                            topic_acl("orders-", operation::write, "User:alice",
                                      pattern_type::prefixed, permission::deny),
                            topic_acl("orders", operation::read, "User:carol"),
                            topic_acl("orders", operation::read, "User:*")});
    ASSERT_EQ(r.size(), 5u);
    for (size_t i = 0; i < 5; ++i) EXPECT_TRUE(r[i]) << i << ": " << r[i].err().message;

    auto alice = _cat->find_policy("kafka-acl:User:alice");
    ASSERT_TRUE(alice);
    EXPECT_EQ(alice->users, std::vector<std::string>{"alice"});
    EXPECT_EQ(alice->document,
              "{\"Version\": \"1\", \"Statement\": [\n"
              "  {\"Effect\": \"Allow\", \"Action\": \"KafkaRead\", \"Resource\": "
              "\"sluice:topic:orders\"},\n"
              "  {\"Effect\": \"Deny\", \"Action\": \"KafkaWrite\", \"Resource\": "
              "\"sluice:topic:orders-*\"}\n]}\n");
    auto carol = _cat->find_policy("kafka-acl:User:carol");
    ASSERT_TRUE(carol);
    EXPECT_EQ(carol->users, std::vector<std::string>{"carol"});
    // User:* (every user): its policy is attached to '*', which the authorizer gives everyone.
    auto everyone = _cat->find_policy("kafka-acl:User:*");
    ASSERT_TRUE(everyone);
    EXPECT_EQ(everyone->users, std::vector<std::string>{"*"});
    // Three policies, each put once and attached once.
    EXPECT_EQ(_cat->security_generation(), gen + 6);

    // Again: nothing changes (Kafka's creation of an existing binding succeeds).
    r = _acls->create({topic_acl("orders", operation::read)});
    EXPECT_TRUE(r.at(0));
    EXPECT_EQ(_cat->security_generation(), gen + 6);
    EXPECT_EQ(all().size(), 4u);
    // Read back as User:*, and removed as such.
    acl::filter f;
    f.principal = "User:*";
    ASSERT_EQ(_acls->describe(f),
              std::vector<acl::binding>{topic_acl("orders", operation::read, "User:*")});
    auto removed = _acls->remove(f);
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_FALSE(removed[0].refused) << *removed[0].refused;
    EXPECT_FALSE(_cat->find_policy("kafka-acl:User:*"));
}

TEST_F(acl_service_test, a_transactional_id_acl_is_a_policy_statement_on_that_id) {
    // kafka-acls --transactional-id pay- --resource-pattern-type prefixed --operation Write
    const acl::binding b{resource_type::transactional_id, "pay-", pattern_type::prefixed,
                         "User:alice", "*", operation::write, permission::allow};
    auto r = _acls->create({b});
    ASSERT_TRUE(r.at(0)) << r[0].err().message;
    auto alice = _cat->find_policy("kafka-acl:User:alice");
    ASSERT_TRUE(alice);
    EXPECT_EQ(alice->document,
              "{\"Version\": \"1\", \"Statement\": [\n"
              "  {\"Effect\": \"Allow\", \"Action\": \"KafkaWrite\", \"Resource\": "
              "\"sluice:transactional-id:pay-*\"}\n]}\n");
    acl::filter f;
    f.type = resource_type::transactional_id;
    EXPECT_EQ(_acls->describe(f), std::vector<acl::binding>{b});
    auto removed = _acls->remove(f);
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_FALSE(removed[0].refused) << *removed[0].refused;
    EXPECT_FALSE(_cat->find_policy("kafka-acl:User:alice"));
}

TEST_F(acl_service_test, describe_reads_user_policies_and_delete_leaves_them) {
    ASSERT_TRUE(_cat->put_policy("ops", R"({"Statement": [
        {"Effect": "Allow", "Action": "KafkaRead", "Resource": "sluice:topic:orders"},
        {"Effect": "Allow", "Action": "KafkaRead", "Resource": "sluice:topic:*-audit"}]})"));
    ASSERT_TRUE(_cat->attach_policy("ops", "bob"));
    ASSERT_TRUE(_acls->create({topic_acl("orders", operation::read)}).at(0));

    acl::filter on_orders{resource_type::topic, "orders", pattern_type::literal};
    auto found = _acls->describe(on_orders);
    ASSERT_EQ(found.size(), 2u);  // the *-audit statement has no ACL form
    EXPECT_EQ(found[0], topic_acl("orders", operation::read, "User:alice"));
    EXPECT_EQ(found[1], topic_acl("orders", operation::read, "User:bob"));

    auto removed = _acls->remove(on_orders);
    ASSERT_EQ(removed.size(), 2u);
    for (const auto& x : removed) {
        if (x.b.principal == "User:alice") {
            EXPECT_EQ(x.refused, std::nullopt);
        } else {
            EXPECT_EQ(x.refused, "the binding comes from policy 'ops', which the ACL APIs do not "
                                 "manage for User:bob: change it with `sluice policy put`, or "
                                 "detach it");
        }
    }
    // alice's policy held only that statement: it is gone; bob's is untouched.
    EXPECT_FALSE(_cat->find_policy("kafka-acl:User:alice"));
    EXPECT_EQ(_acls->describe(on_orders),
              std::vector<acl::binding>{topic_acl("orders", operation::read, "User:bob")});
    ASSERT_TRUE(_cat->find_policy("ops"));
}

TEST_F(acl_service_test, a_managed_statement_with_several_bindings_is_not_split) {
    ASSERT_TRUE(_cat->put_policy("kafka-acl:User:alice", R"({"Statement": [
        {"Effect": "Allow", "Action": ["KafkaRead", "KafkaWrite"], "Resource": "sluice:topic:t"}]})"));
    ASSERT_TRUE(_cat->attach_policy("kafka-acl:User:alice", "alice"));
    auto removed = _acls->remove({resource_type::topic, "t", pattern_type::literal, std::nullopt,
                                  std::nullopt, operation::read});
    ASSERT_EQ(removed.size(), 1u);
    EXPECT_EQ(removed[0].refused,
              "the binding comes from statement 0 of policy 'kafka-acl:User:alice', which holds 2 "
              "bindings: change it with `sluice policy put`");
    EXPECT_EQ(all().size(), 2u);
}

TEST_F(acl_service_test, an_unparsable_managed_policy_is_not_overwritten) {
    // Only a hand-edited catalog holds one (the CLI and HTTP API validate documents).
    ASSERT_TRUE(_cat->put_policy("kafka-acl:User:alice", "{not json"));
    auto r = _acls->create({topic_acl("orders", operation::read),
                            topic_acl("orders", operation::read, "User:carol")});
    ASSERT_FALSE(r.at(0));
    EXPECT_EQ(r[0].code(), errc::corrupt);
    EXPECT_NE(r[0].err().message.find("policy 'kafka-acl:User:alice' in the catalog does not "
                                      "parse"),
              std::string::npos)
        << r[0].err().message;
    EXPECT_TRUE(r.at(1));  // other principals are served
    EXPECT_EQ(_cat->find_policy("kafka-acl:User:alice")->document, "{not json");
}

}  // namespace
}  // namespace sluice::broker

// Users and policies (catalog/security_store.h) and expansions' definitions
// (catalog/expansion_store.h), one test for both implementations (store_backends.h):
// what is written loads back after a restart, field for field, and the same refusals
// come back with the same error codes.

#include <gtest/gtest.h>

#include "store_backends.h"

namespace sluice::shared::testing {
namespace {

using catalog::expansion_info;
using catalog::scram_record;

template <typename Backend>
class security_stores : public store_test<Backend> {
  protected:
    catalog::security_store& sec() { return *this->_s.security; }
    catalog::expansion_store& exps() { return *this->_s.expansions; }
    void topic(const std::string& name) {
        catalog::topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = 1;
        auto r = this->_s.topics->create_topic(t);
        ASSERT_TRUE(r.ok()) << r.err().message;
    }
};
TYPED_TEST_SUITE(security_stores, backends, backend_names);

scram_record cred(std::string user, int8_t mech, std::string salt) {
    return {std::move(user), mech, std::move(salt), 4096, "stored", "server"};
}

TYPED_TEST(security_stores, credentials_are_upserted_per_mechanism_and_survive_a_restart) {
    auto& s = this->sec();
    uint64_t gen = s.security_generation();
    ASSERT_TRUE(s.upsert_credential(cred("alice", 2, "s2")).ok());
    ASSERT_TRUE(s.upsert_credential(cred("alice", 1, "s1")).ok());
    ASSERT_TRUE(s.upsert_credential(cred("alice", 1, "s1-new")).ok());
    // Bytes of any value, NUL included, come back as they went in.
    const std::string salt("\0\x01\xff", 3);
    ASSERT_TRUE(s.upsert_credential({"bob", 2, salt, 8192, std::string("\0k", 2), "\xfe"}).ok());
    EXPECT_GT(s.security_generation(), gen);
    auto c = s.credentials("alice");
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].mechanism, 1);  // ordered by mechanism
    EXPECT_EQ(c[0].salt, "s1-new");
    EXPECT_EQ(c[1].salt, "s2");
    this->reopen();
    EXPECT_EQ(this->sec().credentials("alice"), c);
    auto users = this->sec().list_users();
    ASSERT_EQ(users.size(), 2u);
    EXPECT_EQ(users.begin()->first, "alice");
    EXPECT_EQ(users["bob"],
              (std::vector<scram_record>{{"bob", 2, salt, 8192, std::string("\0k", 2), "\xfe"}}));
    EXPECT_TRUE(this->sec().credentials("nobody").empty());
}

TYPED_TEST(security_stores, credentials_and_users_refuse_what_they_must) {
    auto& s = this->sec();
    EXPECT_EQ(s.upsert_credential(cred("", 1, "s")).code(), errc::invalid_argument);
    EXPECT_EQ(s.upsert_credential(cred("a", 3, "s")).code(), errc::invalid_argument);
    EXPECT_TRUE(s.list_users().empty());
    ASSERT_TRUE(s.upsert_credential(cred("bob", 1, "a")).ok());
    ASSERT_TRUE(s.upsert_credential(cred("bob", 2, "b")).ok());
    EXPECT_EQ(s.delete_credential("bob", 2).code(), errc::ok);
    EXPECT_EQ(s.delete_credential("bob", 2).code(), errc::not_found);
    ASSERT_TRUE(s.put_policy("p", "{}").ok());
    ASSERT_TRUE(s.attach_policy("p", "bob").ok());
    ASSERT_TRUE(s.attach_policy("p", "carol").ok());
    // Deleting a user takes its credentials and attachments; others' stay.
    ASSERT_TRUE(s.delete_user("bob").ok());
    EXPECT_TRUE(s.credentials("bob").empty());
    EXPECT_EQ(s.delete_user("bob").code(), errc::not_found);
    EXPECT_EQ(s.find_policy("p")->users, std::vector<std::string>{"carol"});
    this->reopen();
    EXPECT_TRUE(this->sec().list_users().empty());
    EXPECT_EQ(this->sec().find_policy("p")->users, std::vector<std::string>{"carol"});
}

TYPED_TEST(security_stores, policies_are_put_attached_detached_and_deleted) {
    auto& s = this->sec();
    ASSERT_TRUE(s.put_policy("readers", R"({"Statement":[]})").ok());
    EXPECT_EQ(s.put_policy("", "{}").code(), errc::invalid_argument);
    EXPECT_EQ(s.attach_policy("nope", "alice").code(), errc::not_found);
    ASSERT_TRUE(s.attach_policy("readers", "zed").ok());
    ASSERT_TRUE(s.attach_policy("readers", "alice").ok());
    EXPECT_EQ(s.attach_policy("readers", "alice").code(), errc::already_exists);
    EXPECT_EQ(s.attach_policy("readers", "").code(), errc::invalid_argument);
    const uint64_t gen = s.security_generation();
    ASSERT_TRUE(s.put_policy("readers", R"({"Statement":[1]})").ok());  // attachments stay
    EXPECT_NE(s.security_generation(), gen);
    ASSERT_TRUE(s.put_policy("admins", "{}").ok());
    auto list = s.list_policies();
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].name, "admins");  // by name
    EXPECT_EQ(list[1].document, R"({"Statement":[1]})");
    EXPECT_EQ(list[1].users, (std::vector<std::string>{"alice", "zed"}));  // ordered
    EXPECT_GT(list[1].updated_ms, 0);
    this->reopen();
    auto& again = this->sec();
    EXPECT_EQ(again.list_policies(), list);
    EXPECT_EQ(again.detach_policy("readers", "bob").code(), errc::not_found);
    EXPECT_EQ(again.detach_policy("nope", "zed").code(), errc::not_found);
    ASSERT_TRUE(again.detach_policy("readers", "zed").ok());
    ASSERT_TRUE(again.delete_policy("readers").ok());
    EXPECT_EQ(again.delete_policy("readers").code(), errc::not_found);
    EXPECT_FALSE(again.find_policy("readers").has_value());
    this->reopen();
    ASSERT_EQ(this->sec().list_policies().size(), 1u);
    EXPECT_EQ(this->sec().list_policies()[0].name, "admins");
    // A deleted policy's name is free again, without its former users.
    ASSERT_TRUE(this->sec().put_policy("readers", "{}").ok());
    EXPECT_TRUE(this->sec().find_policy("readers")->users.empty());
}

expansion_info expansion(const std::string& target, const std::string& topic) {
    expansion_info e;
    e.target = target;
    e.topic = topic;
    e.source = "key";
    e.flatten = true;
    e.copy_source = false;
    e.schema = R"({"fields":[{"name":"id","type":"int64"}]})";
    e.created_ms = 1'700'000'000'123;
    return e;
}

TYPED_TEST(security_stores, expansions_need_their_topic_and_hold_it) {
    this->topic("orders");
    this->topic("audit");
    auto& x = this->exps();
    auto a = expansion("main.orders_rows", "orders");
    auto b = expansion("main.audit_rows", "audit");
    b.source = "value";
    b.flatten = false;
    b.copy_source = true;
    ASSERT_TRUE(x.create_expansion(a).ok());
    ASSERT_TRUE(x.create_expansion(b).ok());
    auto c = expansion("main.more", "orders");
    c.created_ms = 0;  // given the current time
    ASSERT_TRUE(x.create_expansion(c).ok());
    EXPECT_EQ(x.create_expansion(expansion("main.x", "missing")).code(), errc::not_found);
    auto taken = x.create_expansion(expansion("main.orders_rows", "audit"));
    EXPECT_EQ(taken.code(), errc::already_exists);
    EXPECT_NE(taken.err().message.find("'orders'"), std::string::npos) << taken.err().message;
    // A topic with expansions stays until they are dropped.
    auto del = this->_s.topics->delete_topic("orders");
    EXPECT_EQ(del.code(), errc::in_use);
    EXPECT_NE(del.err().message.find("main.more, main.orders_rows"), std::string::npos)
        << del.err().message;
    this->reopen();
    auto list = this->exps().list_expansions();
    ASSERT_EQ(list.size(), 3u);
    EXPECT_EQ(list[0], b);  // by target
    EXPECT_EQ(list[1].target, "main.more");
    EXPECT_GT(list[1].created_ms, 0);
    EXPECT_EQ(list[2], a);
    ASSERT_TRUE(this->exps().delete_expansion("main.orders_rows").ok());
    ASSERT_TRUE(this->exps().delete_expansion("main.more").ok());
    EXPECT_EQ(this->exps().delete_expansion("main.more").code(), errc::not_found);
    ASSERT_TRUE(this->_s.topics->delete_topic("orders").ok());
    this->reopen();
    EXPECT_EQ(this->exps().list_expansions(), std::vector<expansion_info>{b});
}

}  // namespace
}  // namespace sluice::shared::testing

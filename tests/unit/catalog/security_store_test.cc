// Users' SCRAM credentials and identity policies in the catalog: stored, replaced,
// removed, and read back after a reopen.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "catalog/catalog.h"

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

class security_store_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "security_store.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        _cat = open();
    }
    void TearDown() override {
        _cat.reset();
        fs::remove_all(_dir);
    }
    std::unique_ptr<catalog> open() {
        auto c = catalog::open(_dir / "catalog.db");
        EXPECT_TRUE(c.ok()) << c.err().message;
        return c.ok() ? std::move(c.value()) : nullptr;
    }
    static scram_record cred(std::string user, int8_t mech, std::string salt) {
        return {std::move(user), mech, std::move(salt), 4096, "stored", "server"};
    }

    fs::path _dir;
    std::unique_ptr<catalog> _cat;
};

TEST_F(security_store_test, credentials_are_upserted_per_mechanism_and_survive_reopen) {
    uint64_t gen = _cat->security_generation();
    ASSERT_TRUE(_cat->upsert_credential(cred("alice", 2, "s2")));
    ASSERT_TRUE(_cat->upsert_credential(cred("alice", 1, "s1")));
    ASSERT_TRUE(_cat->upsert_credential(cred("alice", 1, "s1-new")));
    EXPECT_GT(_cat->security_generation(), gen);
    auto c = _cat->credentials("alice");
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(c[0].mechanism, 1);  // ordered by mechanism
    EXPECT_EQ(c[0].salt, "s1-new");
    EXPECT_EQ(c[1].salt, "s2");

    _cat = open();
    auto again = _cat->credentials("alice");
    EXPECT_EQ(again, c);
    auto users = _cat->list_users();
    ASSERT_EQ(users.size(), 1u);
    EXPECT_EQ(users.begin()->first, "alice");
}

TEST_F(security_store_test, credential_bytes_are_kept_exactly) {
    std::string salt("\0\x01\xff\x80", 4);
    ASSERT_TRUE(_cat->upsert_credential({"u", 1, salt, 8192, std::string("\0k", 2), "\xfe"}));
    _cat = open();
    auto c = _cat->credentials("u");
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0].salt, salt);
    EXPECT_EQ(c[0].iterations, 8192);
    EXPECT_EQ(c[0].stored_key, std::string("\0k", 2));
    EXPECT_EQ(c[0].server_key, "\xfe");
}

TEST_F(security_store_test, invalid_credentials_are_refused) {
    EXPECT_EQ(_cat->upsert_credential(cred("", 1, "s")).code(), errc::invalid_argument);
    EXPECT_EQ(_cat->upsert_credential(cred("a", 3, "s")).code(), errc::invalid_argument);
    EXPECT_TRUE(_cat->list_users().empty());
}

TEST_F(security_store_test, deleting_credentials_and_users) {
    ASSERT_TRUE(_cat->upsert_credential(cred("bob", 1, "a")));
    ASSERT_TRUE(_cat->upsert_credential(cred("bob", 2, "b")));
    EXPECT_EQ(_cat->delete_credential("bob", 2).code(), errc::ok);
    EXPECT_EQ(_cat->delete_credential("bob", 2).code(), errc::not_found);
    ASSERT_EQ(_cat->credentials("bob").size(), 1u);
    ASSERT_TRUE(_cat->put_policy("p", "{}"));
    ASSERT_TRUE(_cat->attach_policy("p", "bob"));
    ASSERT_TRUE(_cat->attach_policy("p", "carol"));
    ASSERT_TRUE(_cat->delete_user("bob"));
    EXPECT_TRUE(_cat->credentials("bob").empty());
    EXPECT_EQ(_cat->delete_user("bob").code(), errc::not_found);
    EXPECT_EQ(_cat->find_policy("p")->users, std::vector<std::string>{"carol"});
    _cat = open();
    EXPECT_TRUE(_cat->credentials("bob").empty());
    EXPECT_EQ(_cat->find_policy("p")->users, std::vector<std::string>{"carol"});
}

TEST_F(security_store_test, policies_and_attachments) {
    ASSERT_TRUE(_cat->put_policy("readers", R"({"Statement":[]})"));
    EXPECT_EQ(_cat->attach_policy("nope", "alice").code(), errc::not_found);
    ASSERT_TRUE(_cat->attach_policy("readers", "zed"));
    ASSERT_TRUE(_cat->attach_policy("readers", "alice"));
    EXPECT_EQ(_cat->attach_policy("readers", "alice").code(), errc::already_exists);
    EXPECT_EQ(_cat->attach_policy("readers", "").code(), errc::invalid_argument);
    ASSERT_TRUE(_cat->put_policy("readers", R"({"Statement":[1]})"));  // attachments stay
    ASSERT_TRUE(_cat->put_policy("admins", "{}"));
    auto list = _cat->list_policies();
    ASSERT_EQ(list.size(), 2u);
    EXPECT_EQ(list[0].name, "admins");
    EXPECT_EQ(list[1].name, "readers");
    EXPECT_EQ(list[1].document, R"({"Statement":[1]})");
    EXPECT_EQ(list[1].users, (std::vector<std::string>{"alice", "zed"}));

    _cat = open();
    EXPECT_EQ(_cat->list_policies(), list);
    EXPECT_EQ(_cat->detach_policy("readers", "bob").code(), errc::not_found);
    ASSERT_TRUE(_cat->detach_policy("readers", "zed"));
    ASSERT_TRUE(_cat->delete_policy("readers"));
    EXPECT_EQ(_cat->delete_policy("readers").code(), errc::not_found);
    EXPECT_FALSE(_cat->find_policy("readers"));
    _cat = open();
    ASSERT_EQ(_cat->list_policies().size(), 1u);
    EXPECT_EQ(_cat->list_policies()[0].name, "admins");
}

}  // namespace
}  // namespace sluice::catalog

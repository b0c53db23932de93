#include "catalog/catalog.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

namespace sluice::catalog {
namespace {

namespace fs = std::filesystem;

class catalog_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "catalog_test.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        _path = _dir / "data" / "catalog.db";  // parent does not exist yet: open() creates it
    }
    void TearDown() override { fs::remove_all(_dir); }

    std::unique_ptr<catalog> open_ok() {
        auto c = catalog::open(_path);
        EXPECT_TRUE(c.ok()) << c.err().message;
        return c.ok() ? std::move(c.value()) : nullptr;
    }

    // Runs SQL on the file through a plain SQLite connection, as a tool or a future
    // version of Sluice would.
    void raw_exec(const std::string& sql) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open(_path.c_str(), &db), SQLITE_OK);
        char* msg = nullptr;
        int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg);
        EXPECT_EQ(rc, SQLITE_OK) << (msg ? msg : "");
        sqlite3_free(msg);
        sqlite3_close(db);
    }
    std::string raw_query(const std::string& sql) {
        sqlite3* db = nullptr;
        EXPECT_EQ(sqlite3_open(_path.c_str(), &db), SQLITE_OK);
        sqlite3_stmt* st = nullptr;
        std::string out;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW) {
            out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        }
        sqlite3_finalize(st);
        sqlite3_close(db);
        return out;
    }

    static topic_info make(std::string name, int32_t partitions = 3,
                           std::map<std::string, std::string> configs = {}) {
        return topic_info{std::move(name), random_uuid(), partitions, std::move(configs),
                          1700000000000};
    }

    fs::path _dir;
    fs::path _path;
};

TEST_F(catalog_test, create_find_list_delete) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_TRUE(c->list_topics().empty());

    topic_info b = make("beta", 1, {{"retention.ms", "1000"}});
    topic_info a = make("alpha", 6);
    ASSERT_TRUE(c->create_topic(b).ok());
    ASSERT_TRUE(c->create_topic(a).ok());

    auto all = c->list_topics();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0], a);  // ordered by name
    EXPECT_EQ(all[1], b);

    EXPECT_EQ(c->find_topic("beta"), b);
    EXPECT_EQ(c->find_topic(a.id), a);
    EXPECT_FALSE(c->find_topic("gamma"));
    EXPECT_FALSE(c->find_topic(random_uuid()));

    ASSERT_TRUE(c->delete_topic("beta").ok());
    EXPECT_FALSE(c->find_topic("beta"));
    EXPECT_FALSE(c->find_topic(b.id));
    ASSERT_EQ(c->list_topics().size(), 1u);

    // The name is free again, with a new id.
    topic_info b2 = make("beta", 2);
    ASSERT_TRUE(c->create_topic(b2).ok());
    EXPECT_EQ(c->find_topic("beta"), b2);
    EXPECT_FALSE(c->find_topic(b.id));
}

TEST_F(catalog_test, duplicate_name_or_id_is_already_exists) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    topic_info t = make("t");
    ASSERT_TRUE(c->create_topic(t).ok());

    auto again = c->create_topic(make("t", 9));
    EXPECT_EQ(again.code(), errc::already_exists);
    EXPECT_NE(again.err().message.find("'t' already exists"), std::string::npos);
    EXPECT_EQ(c->find_topic("t")->partitions, 3);  // the original is untouched

    topic_info same_id = make("u");
    same_id.id = t.id;
    EXPECT_EQ(c->create_topic(same_id).code(), errc::already_exists);
    EXPECT_FALSE(c->find_topic("u"));
}

TEST_F(catalog_test, delete_unknown_is_not_found) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    auto r = c->delete_topic("nope");
    EXPECT_EQ(r.code(), errc::not_found);
    EXPECT_NE(r.err().message.find("'nope'"), std::string::npos);
}

TEST_F(catalog_test, invalid_topics_are_rejected_and_not_stored) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    topic_info bad_name = make("a/b");
    topic_info no_partitions = make("p", 0);
    topic_info zero_id = make("z");
    zero_id.id = {};
    topic_info bad_config = make("cfg", 1, {{"cleanup.policy", "shred"}});
    topic_info unknown_config = make("unk", 1, {{"colour", "blue"}});
    for (const auto* t : {&bad_name, &no_partitions, &zero_id, &bad_config, &unknown_config}) {
        auto r = c->create_topic(*t);
        EXPECT_EQ(r.code(), errc::invalid_argument) << t->name;
        // Name errors describe the name; every other error says which topic it is about.
        if (t != &bad_name) {
            EXPECT_NE(r.err().message.find(t->name), std::string::npos) << r.err().message;
        }
    }
    EXPECT_TRUE(c->list_topics().empty());
}

TEST_F(catalog_test, configs_are_replaced_atomically_and_survive_reopen) {
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->create_topic(make("t", 3, {{"retention.ms", "1000"}})).ok());
        ASSERT_TRUE(c->set_topic_configs("t", {{"segment.bytes", "1048576"}}).ok());
        EXPECT_EQ(c->find_topic("t")->configs,
                  (std::map<std::string, std::string>{{"segment.bytes", "1048576"}}));
        // A bad value or unknown key changes nothing and names the key.
        auto bad = c->set_topic_configs("t", {{"segment.bytes", "2"}, {"retention.ms", "5"}});
        EXPECT_EQ(bad.code(), errc::invalid_argument);
        EXPECT_NE(bad.err().message.find("segment.bytes"), std::string::npos);
        auto unknown = c->set_topic_configs("t", {{"no.such.key", "1"}});
        EXPECT_NE(unknown.err().message.find("no.such.key"), std::string::npos);
        EXPECT_EQ(c->set_topic_configs("missing", {}).code(), errc::not_found);
    }
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->find_topic("t")->configs,
              (std::map<std::string, std::string>{{"segment.bytes", "1048576"}}));
}

TEST_F(catalog_test, broker_configs_per_scope_are_replaced_and_survive_reopen) {
    using cfg = std::map<std::string, std::string>;
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        EXPECT_EQ(c->broker_configs("").value(), cfg{});
        ASSERT_TRUE(c->set_broker_configs("", {{"log.retention.ms", "1000"}, {"a", "b"}}).ok());
        ASSERT_TRUE(c->set_broker_configs("broker", {{"log.retention.ms", "2000"}}).ok());
        ASSERT_TRUE(c->set_broker_configs("", {{"log.retention.ms", "3000"}}).ok());  // replaces
        EXPECT_EQ(c->set_broker_configs("7", {}).code(), errc::invalid_argument);
    }
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->broker_configs("").value(), (cfg{{"log.retention.ms", "3000"}}));
    EXPECT_EQ(c->broker_configs("broker").value(), (cfg{{"log.retention.ms", "2000"}}));
}

// Group configs (schema version 11): a group's whole set replaced, an empty set forgets
// the group, and both survive a reopen.
TEST_F(catalog_test, group_configs_are_replaced_per_group_and_survive_reopen) {
    using cfg = std::map<std::string, std::string>;
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        EXPECT_TRUE(c->group_configs().value().empty());
        ASSERT_TRUE(c->set_group_configs("a", {{"share.auto.offset.reset", "earliest"},
                                               {"share.delivery.count.limit", "3"}})
                        .ok());
        ASSERT_TRUE(c->set_group_configs("b", {{"consumer.session.timeout.ms", "50000"}}).ok());
        ASSERT_TRUE(c->set_group_configs("a", {{"share.delivery.count.limit", "4"}}).ok());
        ASSERT_TRUE(c->set_group_configs("b", {}).ok());
    }
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->group_configs().value(),
              (std::map<std::string, cfg>{{"a", {{"share.delivery.count.limit", "4"}}}}));
}

TEST_F(catalog_test, partitions_only_grow_and_survive_reopen) {
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->create_topic(make("t", 3)).ok());
        EXPECT_EQ(c->set_partitions("t", 3).code(), errc::invalid_argument);
        EXPECT_EQ(c->set_partitions("t", 2).code(), errc::invalid_argument);
        EXPECT_EQ(c->set_partitions("missing", 9).code(), errc::not_found);
        ASSERT_TRUE(c->set_partitions("t", 7).ok());
        EXPECT_EQ(c->find_topic("t")->partitions, 7);
    }
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->find_topic("t")->partitions, 7);
}

TEST_F(catalog_test, zero_created_ms_is_stamped) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    topic_info t = make("t");
    t.created_ms = 0;
    ASSERT_TRUE(c->create_topic(t).ok());
    EXPECT_GT(c->find_topic("t")->created_ms, 1700000000000);
}

TEST_F(catalog_test, topics_and_configs_survive_reopen) {
    topic_info a = make("a", 4, {{"retention.ms", "-1"}, {"segment.bytes", "1048576"}});
    topic_info b = make("__consumer_offsets", 50, {{"compression.type", "producer"}});
    topic_info gone = make("gone");
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        ASSERT_TRUE(c->create_topic(a).ok());
        ASSERT_TRUE(c->create_topic(b).ok());
        ASSERT_TRUE(c->create_topic(gone).ok());
        ASSERT_TRUE(c->delete_topic("gone").ok());
    }
    auto c = open_ok();
    ASSERT_TRUE(c);
    auto all = c->list_topics();
    ASSERT_EQ(all.size(), 2u);
    EXPECT_EQ(all[0], b);
    EXPECT_EQ(all[1], a);
    EXPECT_EQ(c->find_topic(a.id), a);
    EXPECT_FALSE(c->find_topic(gone.id));
    EXPECT_EQ(raw_query("SELECT count(*) FROM topic_configs"), "3");
}

// A process that dies right after create_topic() returns (no destructor, no checkpoint:
// the topic lives only in the WAL) must not lose the topic.
TEST_F(catalog_test, created_topic_survives_process_death) {
    topic_info t = make("durable", 2, {{"retention.ms", "60000"}});
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        auto c = catalog::open(_path);
        bool ok = c.ok() && c.value()->create_topic(t).ok();
        ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(WEXITSTATUS(status), 0);
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->find_topic("durable"), t);
}

TEST_F(catalog_test, cluster_id_is_stable_across_reopen) {
    std::string id;
    {
        auto c = open_ok();
        ASSERT_TRUE(c);
        id = c->cluster_id();
    }
    EXPECT_EQ(id.size(), 22u);
    EXPECT_TRUE(uuid_from_string(id).has_value()) << id;
    auto c = open_ok();
    ASSERT_TRUE(c);
    EXPECT_EQ(c->cluster_id(), id);

    // Another database gets another id.
    auto other = catalog::open(_dir / "other.db");
    ASSERT_TRUE(other.ok());
    EXPECT_NE(other.value()->cluster_id(), id);
}

TEST_F(catalog_test, file_is_wal_with_schema_version_and_magic) {
    { ASSERT_TRUE(open_ok()); }
    EXPECT_EQ(raw_query("PRAGMA journal_mode"), "wal");
    EXPECT_EQ(raw_query("PRAGMA user_version"), std::to_string(catalog::schema_version));
    EXPECT_EQ(raw_query("PRAGMA application_id"), std::to_string(0x534C4354));
}

TEST_F(catalog_test, newer_schema_version_is_refused_untouched) {
    { ASSERT_TRUE(open_ok()); }
    const int64_t newer = catalog::schema_version + 1;
    raw_exec("PRAGMA user_version = " + std::to_string(newer));

    auto c = catalog::open(_path);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.code(), errc::unsupported);
    const std::string& msg = c.err().message;
    EXPECT_NE(msg.find("schema version " + std::to_string(newer)), std::string::npos) << msg;
    EXPECT_NE(msg.find("newer"), std::string::npos) << msg;
    EXPECT_EQ(raw_query("PRAGMA user_version"), std::to_string(newer));
}

TEST_F(catalog_test, foreign_sqlite_file_is_refused) {
    fs::create_directories(_path.parent_path());
    raw_exec("CREATE TABLE t (x); INSERT INTO t VALUES (1)");
    auto c = catalog::open(_path);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.code(), errc::corrupt);
    EXPECT_NE(c.err().message.find("not a Sluice catalog"), std::string::npos) << c.err().message;
}

TEST_F(catalog_test, unopenable_path_is_io_error) {
    fs::create_directories(_path);  // a directory where the file should be
    auto c = catalog::open(_path);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.code(), errc::io_error);
}

TEST_F(catalog_test, concurrent_creates_and_reads) {
    auto c = open_ok();
    ASSERT_TRUE(c);
    constexpr int threads = 4;
    constexpr int per_thread = 10;
    std::vector<std::thread> ts;
    ts.reserve(threads);
    for (int i = 0; i < threads; ++i) {
        ts.emplace_back([&, i] {
            for (int j = 0; j < per_thread; ++j) {
                std::string name = "t" + std::to_string(i) + "_" + std::to_string(j);
                EXPECT_TRUE(c->create_topic(make(name)).ok());
                EXPECT_TRUE(c->find_topic(name).has_value());
                (void)c->list_topics();
            }
        });
    }
    for (auto& t : ts) t.join();
    EXPECT_EQ(c->list_topics().size(), static_cast<size_t>(threads * per_thread));
}

}  // namespace
}  // namespace sluice::catalog

namespace sluice::catalog {
namespace {

class producer_id_test : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::path(::testing::TempDir()) / "producer_id_test.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
    }
    void TearDown() override { fs::remove_all(_dir); }
    fs::path _dir;
};

TEST_F(producer_id_test, ids_ascend_and_are_never_given_twice_across_opens) {
    const fs::path path = _dir / "catalog.db";
    {
        auto c = catalog::open(path);
        ASSERT_TRUE(c.ok()) << c.err().message;
        EXPECT_EQ(*(*c)->allocate_producer_id(), 0);
        EXPECT_EQ(*(*c)->allocate_producer_id(), 1);
    }
    auto c = catalog::open(path);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(*(*c)->allocate_producer_id(), 2);
}

TEST_F(producer_id_test, a_version_4_file_is_migrated_with_the_counter_at_0) {
    const fs::path path = _dir / "catalog.db";
    {
        auto c = catalog::open(path);
        ASSERT_TRUE(c.ok()) << c.err().message;
    }
    // What version 4 left: no counter (and no group state, from version 6, nor broker
    // configs, from version 7, nor transaction state, from version 8, nor consumer groups,
    // from version 9, nor share-partitions, from version 10, nor classic members' protocols
    // in consumer groups and group configs, from version 11).
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db,
                           "DELETE FROM meta WHERE key = 'next_producer_id'; "
                           "DROP TABLE group_metadata; DROP TABLE group_members; "
                           "DROP TABLE group_member_protocols; DROP TABLE broker_configs; "
                           "DROP TABLE txn_metadata; DROP TABLE txn_partitions; "
                           "DROP TABLE txn_groups; DROP TABLE txn_offsets; "
                           "DROP TABLE consumer_group_member_protocols; DROP TABLE group_configs; "
                           "DROP TABLE consumer_group_members; DROP TABLE consumer_groups; "
                           "DROP TABLE share_partitions; PRAGMA user_version = 4",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
    auto c = catalog::open(path);
    ASSERT_TRUE(c.ok()) << c.err().message;
    EXPECT_EQ(*(*c)->allocate_producer_id(), 0);
    EXPECT_EQ(*(*c)->allocate_producer_id(), 1);
}

}  // namespace
}  // namespace sluice::catalog

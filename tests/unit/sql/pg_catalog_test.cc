// The catalog over the engine's schemas (sql/pg_catalog.h), in SQLite's syntax: the
// PostgreSQL spellings tools send are the PostgreSQL front end's (catalog_rewrite.h).

#include <gtest/gtest.h>

#include "sql/pg_catalog.h"
#include "sql_test_util.h"

namespace sluice::sql::test {
namespace {

using rows = std::vector<std::vector<std::string>>;

struct catalog_fixture : ::testing::Test {
    void SetUp() override {
        engine_options o;
        o.data_dir = dir.path;
        open_engine_and_session(o, eng, sess);
        if (HasFatalFailure()) return;
        query(*sess,
              "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT NOT NULL);"
              "CREATE SCHEMA shop; CREATE TABLE shop.items(sku TEXT PRIMARY KEY, qty INT DEFAULT 0);"
              "CREATE UNIQUE INDEX shop.items_qty ON items(qty); CREATE TABLE shop.users(x);");
    }
    temp_dir dir;
    std::unique_ptr<engine> eng;
    std::unique_ptr<session> sess;
};

TEST_F(catalog_fixture, relations_of_every_schema_with_stable_oids) {
    EXPECT_EQ(query(*sess,
                    "SELECT n.nspname, c.relname, c.relkind, c.oid = pg_regclass(n.nspname || '.' "
                    "|| c.relname) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON "
                    "n.oid = c.relnamespace WHERE n.nspname IN ('main', 'shop') ORDER BY 1, 2"),
              (rows{{"main", "users", "r", "1"},
                    {"main", "users_pkey", "i", "1"},
                    {"shop", "items", "r", "1"},
                    {"shop", "items_pkey", "i", "1"},
                    {"shop", "items_qty", "i", "1"},
                    {"shop", "users", "r", "1"}}));
    EXPECT_EQ(pg_relation_oid("shop", "items"), pg_relation_oid("shop", "items"));
    EXPECT_NE(pg_relation_oid("shop", "items"), pg_relation_oid("main", "items"));
    EXPECT_GE(pg_relation_oid("shop", "items"), 16384);
    EXPECT_EQ(pg_namespace_oid("main"), 2200);
    // The same OIDs in another session.
    auto other = eng->open_session();
    ASSERT_TRUE(other);
    const char* oid = "SELECT pg_regclass('shop.items')";
    EXPECT_EQ(query(**other, oid), query(*sess, oid));
}

TEST_F(catalog_fixture, visibility_follows_sqlite_name_resolution) {
    // main.users hides shop.users; shop.items is found by its bare name.
    EXPECT_EQ(query(*sess,
                    "SELECT n.nspname, c.relname, pg_table_is_visible(c.oid) FROM "
                    "pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = "
                    "c.relnamespace WHERE c.relname IN ('users', 'items') ORDER BY 1"),
              (rows{{"main", "users", "1"}, {"shop", "items", "1"}, {"shop", "users", "0"}}));
    EXPECT_EQ(query(*sess, "SELECT pg_regclass(pg_regclass('items')), "
                           "pg_regclass(pg_regclass('shop.users'))"),
              (rows{{"items", "shop.users"}}));
}

TEST_F(catalog_fixture, columns_keys_and_defaults) {
    EXPECT_EQ(query(*sess,
                    "SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull, "
                    "a.atthasdef FROM pg_catalog.pg_attribute a WHERE a.attrelid = "
                    "pg_regclass('shop.items') ORDER BY a.attnum"),
              (rows{{"sku", "text", "0", "0"}, {"qty", "bigint", "0", "1"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT pg_get_indexdef(i.indexrelid), i.indisprimary, i.indkey FROM "
                    "pg_catalog.pg_index i WHERE i.indrelid = pg_regclass('shop.items') ORDER BY 1"),
              (rows{{"CREATE UNIQUE INDEX items_pkey ON shop.items USING btree (sku)", "1", "1"},
                    {"CREATE UNIQUE INDEX items_qty ON shop.items USING btree (qty)", "0", "2"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT conname, contype, conkey FROM pg_catalog.pg_constraint WHERE conrelid "
                    "= pg_regclass('users')"),
              (rows{{"users_pkey", "p", "{1}"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT column_name, is_nullable, column_default FROM "
                    "information_schema.columns WHERE table_name = 'users' AND table_schema = "
                    "'main' ORDER BY ordinal_position"),
              (rows{{"id", "NO", "NULL"}, {"name", "NO", "NULL"}}));
}

TEST_F(catalog_fixture, the_catalog_is_the_engines) {
    for (const char* sql : {"DELETE FROM pg_catalog.pg_type", "DROP TABLE pg_catalog.pg_am",
                            "CREATE TABLE information_schema.x(y)"}) {
        auto st = sess->prepare(sql);
        ASSERT_FALSE(st) << sql;
        EXPECT_EQ(st.error().kind, failure::read_only) << sql << ": " << st.error().message;
    }
    auto st = sess->prepare("CREATE SCHEMA pg_catalog");
    if (st) {
        ASSERT_TRUE(*st);
        EXPECT_EQ((*st)->step(), statement::step_state::failed);
        EXPECT_EQ((*st)->error().kind, failure::invalid_parameter);
    } else {
        EXPECT_EQ(st.error().kind, failure::invalid_parameter);
    }
}

}  // namespace
}  // namespace sluice::sql::test

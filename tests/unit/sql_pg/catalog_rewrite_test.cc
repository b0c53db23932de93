#include "sql/pg/catalog_rewrite.h"

#include <gtest/gtest.h>

namespace sluice::sql::pg {
namespace {

TEST(CatalogRewrite, StatementsSQLiteParsesComeBackUnchanged) {
    for (const char* sql : {"SELECT ~5, a FROM t WHERE b = 'x::y' -- c::d",
                            "SELECT \"a~b\", [x] FROM t", "INSERT INTO t VALUES (1, 'E''s')"})
        EXPECT_EQ(rewrite_catalog_sql(sql), sql);
}

TEST(CatalogRewrite, OnlyCatalogQueriesAreRewritten) {
    EXPECT_TRUE(names_catalog("SELECT 1 FROM pg_catalog.pg_class"));
    EXPECT_TRUE(names_catalog("select nspname from PG_NAMESPACE"));
    EXPECT_TRUE(names_catalog("SELECT * FROM information_schema.tables"));
    EXPECT_TRUE(names_catalog("SELECT current_user"));
    EXPECT_TRUE(names_catalog("SELECT 'users'::regclass"));
    EXPECT_FALSE(names_catalog("INSERT INTO t VALUES ('a'::text, 'b'::text)"));
    EXPECT_FALSE(names_catalog("SELECT key FROM kafka_topics.orders WHERE value ~ 'x'"));
}

TEST(CatalogRewrite, QualifiedFunctionsOperatorsAndCollations) {
    EXPECT_EQ(rewrite_catalog_sql("SELECT pg_catalog.pg_get_userbyid(c.relowner) FROM "
                                  "pg_catalog.pg_class c"),
              "SELECT pg_get_userbyid(c.relowner) FROM pg_catalog.pg_class c");
    EXPECT_EQ(rewrite_catalog_sql("WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE "
                                  "pg_catalog.default"),
              "WHERE c.relname   REGEXP   '^(t)$' ");
    EXPECT_EQ(rewrite_catalog_sql("WHERE n !~ '^pg_' AND m ~* 'x'"),
              "WHERE n  NOT REGEXP  '^pg_' AND m  REGEXP '(?i)' ||  'x'");
    EXPECT_EQ(rewrite_catalog_sql("SELECT array_to_string(a, E'\\n')"),
              "SELECT array_to_string(a, '\n')");
}

TEST(CatalogRewrite, Casts) {
    EXPECT_EQ(rewrite_catalog_sql("SELECT c.oid::pg_catalog.regclass"),
              "SELECT pg_regclass(c.oid)");
    EXPECT_EQ(rewrite_catalog_sql("SELECT c.oid::regclass::text"),
              "SELECT pg_regclass_text(c.oid)");
    EXPECT_EQ(rewrite_catalog_sql("SELECT x::int4, f(y)::text, 'a'::character varying(3)"),
              "SELECT CAST(x AS INTEGER), CAST(f(y) AS TEXT), CAST('a' AS TEXT)");
    EXPECT_EQ(rewrite_catalog_sql("SELECT pr.prattrs::pg_catalog.int2[]"), "SELECT (pr.prattrs)");
}

TEST(CatalogRewrite, ArraysAndSetReturningFunctions) {
    EXPECT_EQ(rewrite_catalog_sql("SELECT 1 WHERE 'd' = any(stxkind)"),
              "SELECT 1 WHERE 'd' IN (SELECT value FROM json_each(pg_array_json(stxkind)))");
    EXPECT_EQ(rewrite_catalog_sql("SELECT (current_schemas(true))[1]"),
              "SELECT pg_array_get((current_schemas(true)), 1)");
    EXPECT_EQ(rewrite_catalog_sql("SELECT array(select rolname from r order by 1)"),
              "SELECT (SELECT pg_array_agg(_v) FROM (SELECT rolname AS _v from r order by 1))");
    const auto srf = rewrite_catalog_sql(
        "SELECT unnest(ix.indkey) attnum, generate_subscripts(ix.indkey, 1) ord FROM pg_index ix "
        "WHERE ix.indisprimary");
    // One json_each walks the array for both, joined to the FROM list.
    EXPECT_EQ(srf.find("unnest"), std::string::npos);
    EXPECT_NE(srf.find(".value attnum, (_srf"), std::string::npos) << srf;
    EXPECT_NE(srf.find("FROM pg_index ix  , json_each(pg_array_json(ix.indkey)) AS _srf"),
              std::string::npos)
        << srf;
    EXPECT_EQ(srf.find("json_each", srf.find("json_each") + 1), std::string::npos) << srf;
    // In FROM, unnest is a table of the elements, its alias their value.
    EXPECT_EQ(rewrite_catalog_sql("SELECT 'toast.' || x FROM pg_catalog.unnest(a) x"),
              "SELECT 'toast.' || x.value FROM json_each(pg_array_json(a)) x");
    EXPECT_EQ(rewrite_catalog_sql("SELECT (r.keys).x FROM r"),
              "SELECT json_extract((r.keys), '$.x') FROM r");
}

TEST(CatalogRewrite, NamesPostgreSQLAllows) {
    EXPECT_EQ(rewrite_catalog_sql("SELECT current_user, current_schema()"),
              "SELECT current_user(), current_schema()");
    EXPECT_EQ(rewrite_catalog_sql("SELECT 1 AS DEFAULT"), "SELECT 1 AS \"default\"");
    EXPECT_EQ(rewrite_catalog_sql("WHERE ix.indisprimary = 'f' AND c.relkind = 't'"),
              "WHERE ix.indisprimary = 0 AND c.relkind = 't'");
    EXPECT_EQ(rewrite_catalog_sql("SELECT string_agg(a, ', ') FROM generate_series(0, 3) s "
                                  "WHERE s > 1"),
              "SELECT group_concat(a, ', ') FROM generate_series(0, 3) s WHERE s.value > 1");
}

}  // namespace
}  // namespace sluice::sql::pg

// Correlated INs rewritten as EXISTS (sql/pg/subquery_rewrite.h): the shapes rewritten,
// and the ones left as written because the two would differ or nothing is gained.

#include <gtest/gtest.h>

#include "sql/pg/subquery_rewrite.h"

namespace sluice::sql::pg {
namespace {

std::string rw(std::string_view sql) {
    return rewrite_correlated_in(sql).value_or("<unchanged>");
}

TEST(subquery_rewrite, a_correlated_in_becomes_exists) {
    EXPECT_EQ(rw("SELECT count(*) FROM kafka_topics.orders t WHERE t.\"offset\" IN (SELECT "
                 "_offset FROM cdc.orders c WHERE c._partition = t.partition)"),
              "SELECT count(*) FROM kafka_topics.orders t WHERE EXISTS (SELECT 1 FROM "
              "cdc.orders c WHERE (c._partition = t.partition) AND _offset = t.\"offset\")");
    // Among other conditions, with DISTINCT, in ON, and a table named by itself.
    EXPECT_EQ(rw("SELECT * FROM t WHERE a = 1 AND t.x IN (SELECT DISTINCT c.y FROM c WHERE "
                 "c.p = t.p OR c.q = 2) ORDER BY 1"),
              "SELECT * FROM t WHERE a = 1 AND EXISTS (SELECT 1 FROM c WHERE (c.p = t.p OR "
              "c.q = 2) AND c.y = t.x) ORDER BY 1");
    EXPECT_EQ(rw("SELECT * FROM t JOIN u ON u.x IN (SELECT c.y FROM c WHERE c.p = t.p) WHERE 1"),
              "SELECT * FROM t JOIN u ON EXISTS (SELECT 1 FROM c WHERE (c.p = t.p) AND c.y = "
              "u.x) WHERE 1");
    EXPECT_EQ(rw("SELECT * FROM t WHERE a AND (b OR (t.x IN (SELECT c.y FROM c WHERE c.p = t.p)))"),
              "SELECT * FROM t WHERE a AND (b OR (EXISTS (SELECT 1 FROM c WHERE (c.p = t.p) AND "
              "c.y = t.x)))");
    // The subquery's table has the outer alias's name, but its own alias hides it.
    EXPECT_EQ(rw("SELECT * FROM k.o t WHERE t.x IN (SELECT y FROM j.t AS c WHERE c.p = t.p)"),
              "SELECT * FROM k.o t WHERE EXISTS (SELECT 1 FROM j.t AS c WHERE (c.p = t.p) AND y "
              "= t.x)");
    EXPECT_EQ(rw("SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c LEFT JOIN d ON d.k = c.k, "
                 "json_each(c.j) e WHERE d.p = t.p)"),
              "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM c LEFT JOIN d ON d.k = c.k, "
              "json_each(c.j) e WHERE (d.p = t.p) AND c.y = t.x)");
    EXPECT_EQ(rw("SELECT * FROM s.t WHERE x IN (SELECT y FROM c WHERE c.p = t.p)"),
              "SELECT * FROM s.t WHERE EXISTS (SELECT 1 FROM c WHERE (c.p = t.p) AND y = x)");
}

TEST(subquery_rewrite, nested_and_repeated_ones_too) {
    EXPECT_EQ(rw("SELECT * FROM t WHERE t.a IN (SELECT c.a FROM c WHERE c.p = t.p) OR t.b IN "
                 "(SELECT d.b FROM d WHERE d.p = t.p)"),
              "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM c WHERE (c.p = t.p) AND c.a = t.a) "
              "OR EXISTS (SELECT 1 FROM d WHERE (d.p = t.p) AND d.b = t.b)");
    EXPECT_EQ(rw("SELECT * FROM t WHERE t.a IN (SELECT c.a FROM c WHERE c.p = t.p AND c.b IN "
                 "(SELECT d.b FROM d WHERE d.q = c.q))"),
              "SELECT * FROM t WHERE EXISTS (SELECT 1 FROM c WHERE (c.p = t.p AND EXISTS "
              "(SELECT 1 FROM d WHERE (d.q = c.q) AND d.b = c.b)) AND c.a = t.a)");
}

TEST(subquery_rewrite, where_in_and_exists_differ_or_nothing_is_gained) {
    for (const char* sql : {
             // Uncorrelated: SQLite builds the list once.
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c WHERE c.q > 2)",
             "SELECT * FROM t WHERE t.x IN (SELECT y FROM c)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM s.c WHERE c.p = 1)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c JOIN d AS e ON e.k = c.k WHERE "
             "e.p = c.p AND e.q = 1)",
             // NOT IN and NOT: NULLs make them differ.
             "SELECT * FROM t WHERE t.x NOT IN (SELECT c.y FROM c WHERE c.p = t.p)",
             "SELECT * FROM t WHERE NOT t.x IN (SELECT c.y FROM c WHERE c.p = t.p)",
             "SELECT * FROM t WHERE NOT (t.x IN (SELECT c.y FROM c WHERE c.p = t.p))",
             "SELECT * FROM t WHERE a AND NOT (b OR t.x IN (SELECT c.y FROM c WHERE c.p = t.p))",
             // A value, not a condition of the WHERE.
             "SELECT t.x IN (SELECT c.y FROM c WHERE c.p = t.p) FROM t",
             "SELECT * FROM t WHERE (t.x IN (SELECT c.y FROM c WHERE c.p = t.p)) = 0",
             "SELECT * FROM t WHERE f(t.x IN (SELECT c.y FROM c WHERE c.p = t.p))",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c WHERE c.p = t.p) IS NULL",
             "SELECT * FROM t WHERE CASE WHEN t.x IN (SELECT c.y FROM c WHERE c.p = t.p) THEN 1 "
             "END = 1",
             "SELECT * FROM t WHERE a BETWEEN 1 AND t.x IN (SELECT c.y FROM c WHERE c.p = t.p)",
             // An expression on the left; a subquery of another shape.
             "SELECT * FROM t WHERE t.x + 1 IN (SELECT c.y FROM c WHERE c.p = t.p)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y + 1 FROM c WHERE c.p = t.p)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c WHERE c.p = t.p LIMIT 3)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c WHERE c.p = t.p GROUP BY c.y)",
             "SELECT * FROM t WHERE t.x IN (SELECT c.y FROM c WHERE c.p = t.p UNION SELECT 1)",
             "SELECT * FROM t WHERE t.x IN (1, 2)",
             // Quotes and comments are not SQL.
             "SELECT 'WHERE t.x IN (SELECT c.y FROM c WHERE c.p = t.p)'",
         })
        EXPECT_EQ(rw(sql), "<unchanged>") << sql;
}

}  // namespace
}  // namespace sluice::sql::pg

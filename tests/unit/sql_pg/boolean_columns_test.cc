// Which select-list items the listener announces as bool (sql/pg/boolean_columns.h).

#include <gtest/gtest.h>

#include "sql/pg/boolean_columns.h"

namespace sluice::sql::pg {
namespace {

std::vector<bool> flags(std::string_view sql) {
    return boolean_columns(sql).boolean;
}

TEST(boolean_columns, comparisons_predicates_and_logic_are_boolean) {
    EXPECT_EQ(flags("SELECT now() IS NOT NULL"), std::vector<bool>{true});
    EXPECT_EQ(flags("select 1 = 2, 1 <> 2, 1 != 2, 1 <= 2, a >= b, x ~ 'y', x !~* 'y'"),
              std::vector<bool>(7, true));
    EXPECT_EQ(flags("SELECT a AND b, NOT a, a OR b, x IN (1, 2), x NOT IN (SELECT 1), "
                    "x LIKE 'a%', x ILIKE 'a%', x BETWEEN 1 AND 2, EXISTS (SELECT 1), "
                    "x IS DISTINCT FROM y, true, FALSE"),
              std::vector<bool>(12, true));
    EXPECT_EQ(flags("SELECT (a = 1) AS eq, x::bool, x::boolean, CAST(x AS BOOLEAN), a=-1"),
              std::vector<bool>(5, true));
}

TEST(boolean_columns, other_expressions_are_not) {
    EXPECT_EQ(flags("SELECT 1 + 1, a || b, v ->> '$.a', v -> 'a', (a = b)::int, "
                    "CASE WHEN a = 1 THEN 'y' END, (SELECT a = 1), f(a = 1), count(*), "
                    "x AS \"in\", 'a=b', a << 2"),
              std::vector<bool>(12, false));
}

TEST(boolean_columns, the_list_ends_where_the_select_list_ends) {
    auto t = boolean_columns(
        "WITH c AS (SELECT 1 = 1 AS x) SELECT DISTINCT x = 1, y FROM c WHERE a = b ORDER BY 1; "
        "SELECT 1 = 1");
    EXPECT_TRUE(t.complete);
    EXPECT_EQ(t.boolean, (std::vector<bool>{true, false}));
    EXPECT_EQ(flags("SELECT a = 1 UNION SELECT 2"), std::vector<bool>{true});
    EXPECT_EQ(flags("SELECT DISTINCT ON (a = 1) a, b < 1 FROM t"),
              (std::vector<bool>{false, true}));
    EXPECT_TRUE(flags("INSERT INTO t SELECT 1 = 1").empty());
    EXPECT_TRUE(flags("VALUES (1 = 1)").empty());
}

TEST(boolean_columns, a_star_leaves_the_later_columns_unknown) {
    auto t = boolean_columns("SELECT a = 1, *, b = 2 FROM t");
    EXPECT_FALSE(t.complete);
    EXPECT_EQ(t.boolean, std::vector<bool>{true});
    EXPECT_TRUE(is_boolean_column(t, 0, 9));
    EXPECT_FALSE(is_boolean_column(t, 8, 9));
    auto u = boolean_columns("SELECT t.*, 1 = 1 FROM t");
    EXPECT_TRUE(u.boolean.empty());
    // A list that does not match the statement's columns decides nothing.
    auto c = boolean_columns("SELECT 1 = 1, 2");
    EXPECT_TRUE(is_boolean_column(c, 0, 2));
    EXPECT_FALSE(is_boolean_column(c, 0, 3));
}

}  // namespace
}  // namespace sluice::sql::pg

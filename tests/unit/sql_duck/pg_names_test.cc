// src/sql/duck/pg_names.h: the select list's unnamed columns named as PostgreSQL names
// them. The expected names were read from PostgreSQL 15 (Debian's postgresql-15,
// `SELECT <expression> FROM t`, t(x int, y int, b bool, s text, d date, arr int[]),
// cursor.description); tests/integration/test_sql_column_names.py compares with a
// running one.

#include "sql/duck/pg_names.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "duckdb/parser/parser.hpp"
#include "duckdb/parser/query_node/select_node.hpp"
#include "duckdb/parser/query_node/set_operation_node.hpp"
#include "duckdb/parser/statement/select_statement.hpp"
#include "duckdb/parser/tableref/joinref.hpp"
#include "duckdb/parser/tableref/subqueryref.hpp"

namespace sluice::sql::duck {
namespace {

namespace d = ::duckdb;

// The name of the first select-list entry of `SELECT <entry> FROM t`.
std::string name_of(const std::string& entry) {
    d::Parser p;
    p.ParseQuery("SELECT " + entry + " FROM t");
    auto& node = *p.statements.at(0)->Cast<d::SelectStatement>().node;
    return pg_column_name(*node.Cast<d::SelectNode>().select_list.at(0));
}

TEST(pg_names, expressions_are_named_as_postgresql_names_them) {
    const std::vector<std::pair<std::string, std::string>> cases{
        // Functions, aggregates and windows: the function's name.
        {"count(*)", "count"},
        {"count(DISTINCT x)", "count"},
        {"sum(x)", "sum"},
        {"now()", "now"},
        {"upper(s)", "upper"},
        {"pg_catalog.upper(s)", "upper"},
        {"array_agg(x)", "array_agg"},
        {"string_agg(s, ',')", "string_agg"},
        {"row_number() OVER (ORDER BY x)", "row_number"},
        {"sum(x) OVER ()", "sum"},
        {"count(*) OVER ()", "count"},
        {"substring(s FROM 1 FOR 2)", "substring"},
        {"s AT TIME ZONE 'UTC'", "timezone"},
        // Constructs named by their keyword.
        {"coalesce(x, 0)", "coalesce"},
        {"nullif(x, 0)", "nullif"},
        {"greatest(x, y)", "greatest"},
        {"least(x, y)", "least"},
        {"ARRAY[1, 2]", "array"},
        {"EXISTS (SELECT 1)", "exists"},
        {"ARRAY(SELECT x FROM t)", "array"},
        {"ROW(1, 2)", "row"},
        {"trim(s)", "btrim"},
        {"position('a' IN s)", "position"},
        // Columns, fields, subscripts.
        {"x", "x"},
        {"t.x", "x"},
        {"(x)", "x"},
        {"arr[1]", "arr"},
        // Casts: what they cast, else the type in PostgreSQL's spelling.
        {"x::int", "x"},
        {"CAST(x AS BIGINT)", "x"},
        {"x::text::varchar", "x"},
        {"count(*)::int", "count"},
        {"1::int", "int4"},
        {"1::integer", "int4"},
        {"CAST(1 AS bigint)", "int8"},
        {"1::smallint", "int2"},
        {"1::real", "float4"},
        {"1::numeric(10, 2)", "numeric"},
        {"1::double precision", "float8"},
        {"1::numeric", "numeric"},
        {"'1'::boolean", "bool"},
        {"'a'::text", "text"},
        // DuckDB's parser reads text and varchar alike: named `text`, PostgreSQL's type.
        {"'a'::varchar(3)", "varchar"},
        {"'a'::bytea", "bytea"},
        {"NULL::int[]", "int4"},
        {"'a'::json", "json"},
        {"INTERVAL '1 day'", "interval"},
        {"DATE '2024-01-01'", "date"},
        {"true", "?column?"},
        {"'1'::boolean", "bool"},
        {"'2024-01-01'::date", "date"},
        {"'2024-01-01'::timestamptz", "timestamptz"},
        {"(x + 1)::text", "text"},
        {"NULL::int", "int4"},
        // CASE: its ELSE when that has a name of its own, else `case`.
        {"CASE WHEN x > 1 THEN 'a' ELSE 'b' END", "case"},
        {"CASE WHEN x > 1 THEN 'a' END", "case"},
        {"CASE WHEN x > 1 THEN 0 ELSE y END", "y"},
        {"CASE WHEN x > 1 THEN 0 ELSE 1::int END", "case"},
        // Scalar subqueries: their own first column's name.
        {"(SELECT max(x) FROM t)", "max"},
        {"(SELECT x AS z FROM t)", "z"},
        {"(SELECT 1)", "?column?"},
        // The rest: ?column?.
        {"1 + 1", "?column?"},
        {"x + 1", "?column?"},
        {"-x", "?column?"},
        {"'abc'", "?column?"},
        {"42", "?column?"},
        {"NULL", "?column?"},
        {"x = 1", "?column?"},
        {"x IS NULL", "?column?"},
        {"x IN (1, 2)", "?column?"},
        {"x BETWEEN 1 AND 2", "?column?"},
        {"b AND x > 1", "?column?"},
        {"NOT b", "?column?"},
        {"s || 'x'", "?column?"},
        {"s LIKE 'a%'", "?column?"},
        {"s ~ 'a'", "?column?"},
        {"s SIMILAR TO 'a'", "?column?"},
        {"s ->> 'a'", "?column?"},
        {"x IS DISTINCT FROM y", "?column?"},
        {"NOT EXISTS (SELECT 1)", "?column?"},
        {"x = ANY (SELECT 1)", "?column?"},
        {"$1", "?column?"},
    };
    for (const auto& [entry, want] : cases) EXPECT_EQ(name_of(entry), want) << entry;
}

TEST(pg_names, unnamed_entries_are_named_in_every_select_a_star_can_show) {
    d::Parser p;
    p.ParseQuery(
        "WITH c AS (SELECT sum(x) FROM t) SELECT 1 + 1, x AS kept, *, y, count(*) FROM "
        "(SELECT upper(s) FROM t) q JOIN (SELECT now()) r ON true UNION ALL SELECT 1, 2, 3, 4, "
        "max(x) FROM t");
    auto& top = *p.statements.at(0)->Cast<d::SelectStatement>().node;
    name_columns_as_postgres(top);
    ASSERT_EQ(top.type, d::QueryNodeType::SET_OPERATION_NODE);
    const auto alias_of = [](const d::QueryNode& n, size_t i) {
        return n.Cast<d::SelectNode>().select_list.at(i)->GetAlias();
    };
    const auto& sides = top.Cast<d::SetOperationNode>().children;
    const auto& left = *sides.at(0);
    EXPECT_EQ(alias_of(left, 0), "?column?");
    EXPECT_EQ(alias_of(left, 1), "kept");
    EXPECT_EQ(alias_of(left, 2), "");  // *
    EXPECT_EQ(alias_of(left, 3), "");  // a column: DuckDB names it so already
    EXPECT_EQ(alias_of(left, 4), "count");
    EXPECT_EQ(alias_of(*sides.at(1), 4), "max");
    const auto& join = left.Cast<d::SelectNode>().from_table->Cast<d::JoinRef>();
    EXPECT_EQ(alias_of(*join.left->Cast<d::SubqueryRef>().subquery->node, 0), "upper");
    EXPECT_EQ(alias_of(*join.right->Cast<d::SubqueryRef>().subquery->node, 0), "now");
    EXPECT_EQ(alias_of(*top.cte_map.map.at("c")->query->node, 0), "sum");
}

}  // namespace
}  // namespace sluice::sql::duck

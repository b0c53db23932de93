#pragma once

// The names PostgreSQL gives the columns of a query's result that the query does not
// name (docs/sql.md, "Engines"), so that psql's headers, pandas' columns, JDBC's
// getColumnLabel and Grafana's fields read as against PostgreSQL. DuckDB names such a
// column by its whole expression (`(1 + 1)`, `count_star()`, `CAST(x AS INTEGER)`);
// PostgreSQL by the rule of its parser (FigureColname):
// - a column reference by the column (`t.x` is `x`), a field by the field;
// - a function call by the function (`count(*)` is `count`, `now()` is `now`), and so
//   coalesce, nullif, greatest, least, grouping; ARRAY[...] and ARRAY(subquery) `array`,
//   ROW(...) `row`, EXISTS `exists`, a scalar subquery by its own first column;
// - a cast by what it casts when that has a name of the above (`x::int` is `x`), else
//   by the type, in PostgreSQL's spelling (`1::int` is `int4`, `'x'::text` `text`);
// - CASE by its ELSE when that has a name of the first two kinds, else `case`;
// - a subscript by what it subscripts; COLLATE by what it collates;
// - anything else (operators, comparisons, literals, parameters) `?column?`.
// Internal to src/sql/duck.

#include <string>

#include "duckdb.hpp"

namespace duckdb {
class ParsedExpression;
class QueryNode;
}  // namespace duckdb

namespace sluice::sql::duck {

// PostgreSQL's name for the select-list entry `e` (its alias aside).
std::string pg_column_name(const duckdb::ParsedExpression& e);

// Names each select-list entry of the query `n` that has no alias (not `*`) as PostgreSQL
// does: of a set operation (UNION, ...), the leftmost SELECT's, which name its columns.
void name_columns_as_postgres(duckdb::QueryNode& n);

}  // namespace sluice::sql::duck

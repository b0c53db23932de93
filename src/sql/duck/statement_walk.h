#pragma once

// Every expression and table reference of a parsed DuckDB statement, for the serving
// layer's checks and rewrites before DuckDB binds it. Internal to src/sql/duck.

#include <functional>

#include "duckdb.hpp"

namespace duckdb {
class ParsedExpression;
class SQLStatement;
class TableRef;
}  // namespace duckdb

namespace sluice::sql::duck {

// Calls `on_expression` for every expression of `s` (a SELECT, its CTEs, subqueries and
// joins; EXPLAIN's statement; INSERT ... SELECT and RETURNING; UPDATE's and DELETE's
// tables, SET, WHERE and RETURNING; CREATE TABLE/VIEW ... AS), each before its children:
// it may replace the expression, whose replacement's children are then walked. And
// `on_table` (when given) for every table reference. Other statements have none walked.
void walk_statement(duckdb::SQLStatement& s,
                    const std::function<void(duckdb::unique_ptr<duckdb::ParsedExpression>&)>&
                        on_expression,
                    const std::function<void(duckdb::TableRef&)>& on_table = {});

}  // namespace sluice::sql::duck

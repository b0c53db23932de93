#pragma once

// One JSON parse per row for a query that extracts several fields of one value (issue 36,
// docs/design/sql-engine.md). Internal to src/sql/duck; pg_shape.h calls it.
//
// DuckDB's `x ->> 'path'` (and json_extract_string(x, 'path')) parses x each time it is
// called: `SELECT v ->> 'kind', sum((v ->> 'amount')::BIGINT) ... GROUP BY 1` parses every
// value twice. Within one SELECT's projection (its select list, GROUP BY, HAVING,
// QUALIFY, window clauses, ORDER BY and DISTINCT ON, the parts DuckDB computes in one
// projection or aggregate), the text extractions of two or more constant paths from
// the same expression x become elements of one extraction of the list of paths:
//     x ->> 'a'  ->  json_extract_string(x, ['a', 'b'])[1]
//     x ->> 'b'  ->  json_extract_string(x, ['a', 'b'])[2]
// which DuckDB's common-subexpression optimizer computes once per row. Results are the
// same: text, NULL for a missing path or a NULL x, the same error for invalid JSON or an
// invalid path. Left as written: WHERE (a filter is not shared; its AND evaluates the
// second extraction only on the rows the first lets through), extractions inside CASE
// (evaluated only when their branch is taken), paths with wildcards (their result is a
// list), and a path that is not a constant string.

namespace duckdb {
class QueryNode;
}

namespace sluice::sql::duck {

// Rewrites n and every query nested in it (CTEs, subqueries, set operations) in place.
void share_json_parses(duckdb::QueryNode& n);

}  // namespace sluice::sql::duck

#pragma once

// The PostgreSQL syntax of the catalog queries tools send (psql's \d commands, JDBC's
// DatabaseMetaData, SQLAlchemy's inspector) rewritten into SQLite's, over the catalog
// the engine provides (sql/pg_catalog.h). Each rewrite is of a construct SQLite does
// not parse, so a statement SQLite already accepts comes back unchanged:
//
//   pg_catalog.f(...)              f(...)   (schema-qualified function names)
//   x::regclass, x::text, ...      pg_regclass(x), CAST(x AS TEXT), ...
//   a ~ b, a !~ b, a ~* b          a REGEXP b, a NOT REGEXP b, a REGEXP '(?i)' || b
//   OPERATOR(pg_catalog.~)         ~
//   COLLATE pg_catalog.default     (dropped: SQLite's default collation)
//   E'\n'                          '<newline>'
//   x = ANY (arr), x <> ALL (arr)  x IN (SELECT value FROM json_each(pg_array_json(arr)))
//   arr[i]                         pg_array_get(arr, i)
//   ARRAY(SELECT y ...)            (SELECT pg_array_agg(_v) FROM (SELECT y AS _v ...))
//   unnest(a), generate_subscripts(a, 1), _pg_expandarray(a) in a select list
//                                  a json_each(pg_array_json(a)) joined to the FROM list
//   FROM unnest(arr) x, FROM generate_series(a, b) x, with x as a value
//                                  FROM json_each(pg_array_json(arr)) x, ... with x.value
//   (composite).field              json_extract(composite, '$.field')
//   ix.indisprimary = 'f'          ix.indisprimary = 0  (the catalog's boolean columns)
//   current_user, current_schema   current_user(), current_schema()
//   string_agg, json_build_object  group_concat, json_object
//
// Arrays are PostgreSQL's text form ('{1,2}', int2vector's '1 2') throughout.

#include <string>
#include <string_view>

namespace sluice::sql::pg {

// The statement `sql` (one statement, without its ';') in SQLite's syntax.
std::string rewrite_catalog_sql(std::string_view sql);

// Whether `sql` may be a catalog query: it names pg_catalog, information_schema, a pg_
// table or function, a reg* type (x::regclass), or current_user and its kin. Only those are rewritten, so users'
// own statements (a bulk INSERT of literals, say) never go through the rewrites, whose
// cost grows with their number.
bool names_catalog(std::string_view sql);

}  // namespace sluice::sql::pg

#include "sql/duck/pg_types.h"

#include <fmt/format.h>

#include <string>

#include "sql/duck/pg_relations.h"
#include "sql/pg_type_table.h"

namespace sluice::sql::duck {

namespace {

// The element type of an array type (typelem), 0 for the others.
int64_t element_of(const pg_type_info& t) {
    if (t.name[0] != '_') return 0;
    for (const auto& e : pg_types())
        if (e.array_oid == t.oid) return e.oid;
    return 0;
}

// PostgreSQL's columns of pg_type, a row per type; in pg_catalog (its schema's OID as
// pg_namespace gives it), owned by the one role (10), base types ('b') with their
// input and output functions' names, text types collatable (100, the default collation).
std::string type_rows_sql() {
    std::string rows;
    for (const auto& t : pg_types()) {
        const bool array = t.name[0] == '_';
        rows += fmt::format("{}({}, '{}', {}, {}, '{}', {}, {}, '{}', '{}', {}, {})",
                            rows.empty() ? "" : ",\n", t.oid, t.name, t.len,
                            t.len > 0 && t.len <= 8 ? "true" : "false", t.category,
                            element_of(t), t.array_oid, array ? "array_in" : std::string(t.name) + "in",
                            array ? "array_out" : std::string(t.name) + "out",
                            std::string_view(t.category) == "S" ? 100 : 0,
                            t.len == -1 ? "'x'" : "'p'");
    }
    return R"(
SELECT oid, typname,
       (SELECT oid FROM duckdb_schemas()
        WHERE database_name = 'system' AND schema_name = 'pg_catalog') AS typnamespace,
       10 AS typowner, typlen, typbyval, 'b' AS typtype, typcategory, false AS typispreferred,
       true AS typisdefined, ',' AS typdelim, 0 AS typrelid, 0 AS typsubscript, typelem,
       typarray, typinput, typoutput, typname || 'recv' AS typreceive,
       typname || 'send' AS typsend, 0 AS typmodin, 0 AS typmodout, 0 AS typanalyze,
       CASE WHEN typlen = 8 THEN 'd' WHEN typlen = 2 THEN 's' WHEN typlen = 1 THEN 'c'
            ELSE 'i' END AS typalign,
       typstorage, false AS typnotnull, 0 AS typbasetype, -1 AS typtypmod, 0 AS typndims,
       typcollation, CAST(NULL AS VARCHAR) AS typdefaultbin, CAST(NULL AS VARCHAR) AS typdefault,
       CAST(NULL AS VARCHAR[]) AS typacl
FROM (VALUES )" +
           rows +
           R"() t(oid, typname, typlen, typbyval, typcategory, typelem, typarray, typinput,
       typoutput, typcollation, typstorage))";
}

}  // namespace

void register_pg_types(duckdb::ExtensionLoader& loader) {
    relation_macro(loader, "pg_type_rows", type_rows_sql().c_str());
}

}  // namespace sluice::sql::duck

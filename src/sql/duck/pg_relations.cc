#include "sql/duck/pg_relations.h"

#include <array>

#include "duckdb/catalog/default/default_functions.hpp"
#include "duckdb/catalog/default/default_table_functions.hpp"
#include "duckdb/main/extension/extension_loader.hpp"
#include "duckdb/parser/parsed_data/create_macro_info.hpp"
#include "sql/duck/pg_types.h"

namespace sluice::sql::duck {

namespace {

namespace d = ::duckdb;

// The indexes of the current database as PostgreSQL has them: one per PRIMARY KEY and
// UNIQUE constraint (named as PostgreSQL names them; its OID 2^29 + table * 64 + its rank
// among the table's, which pg_constraint_rows gives as conindid), then DuckDB's own, whose
// expressions are column names. attnums are 1-based.
constexpr const char* index_rows_sql = R"(
SELECT (1 << 29) + k.table_oid * 64
         + row_number() OVER (PARTITION BY k.table_oid ORDER BY k.constraint_index) AS index_oid,
       k.table_oid, k.schema_oid, k.schema_name, k.table_name,
       CASE k.constraint_type WHEN 'PRIMARY KEY' THEN k.table_name || '_pkey'
            ELSE k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || '_key'
       END AS index_name,
       true AS is_unique, k.constraint_type = 'PRIMARY KEY' AS is_primary,
       CAST(k.constraint_column_names AS VARCHAR[]) AS columns,
       list_transform(k.constraint_column_indexes, lambda c: CAST(c + 1 AS SMALLINT)) AS attnums,
       k.table_oid * 1000000 + k.constraint_index AS constraint_oid
FROM duckdb_constraints() k WHERE k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
UNION ALL
SELECT i.index_oid, i.table_oid, i.schema_oid, i.schema_name, i.table_name, i.index_name,
       i.is_unique, i.is_primary, e.columns,
       list_transform(e.columns,
                      lambda c: CAST(coalesce(list_position(e.names, c), 0) AS SMALLINT)),
       CAST(NULL AS BIGINT)
FROM duckdb_indexes() i,
     (SELECT list_transform(string_split(trim(i.expressions, '[]'), ', '),
                            lambda c: trim(c, '"')) AS columns,
             (SELECT list(col.column_name ORDER BY col.column_index) FROM duckdb_columns() col
              WHERE col.table_oid = i.table_oid) AS names) e)";

// DuckDB's pg_class with PostgreSQL's access methods and relforcerowsecurity, its
// indexes permanent (DuckDB's says temporary), the arrays typed as PostgreSQL's (DuckDB's
// are untyped NULLs, which psql's unnest(reloptions) cannot take), and the constraints'
// indexes. reltuples -1 where DuckDB estimates no row (topics, system tables and empty
// tables): PostgreSQL's "never analyzed", so that planners (Trino) take the size as
// unknown rather than falling back to pg_stat_all_tables, which is not served.
constexpr const char* class_rows_sql = R"(
SELECT * REPLACE (CASE relkind WHEN 'r' THEN 2 WHEN 'i' THEN 403 ELSE 0 END AS relam,
                  CASE relkind WHEN 'i' THEN 'p' ELSE relpersistence END AS relpersistence,
                  CASE relkind WHEN 'r' THEN 'd' ELSE 'n' END AS relreplident,
                  CAST(NULL AS VARCHAR[]) AS reloptions, CAST(NULL AS VARCHAR[]) AS relacl,
                  CASE WHEN reltuples > 0 THEN reltuples ELSE CAST(-1 AS FLOAT) END AS reltuples),
       false AS relforcerowsecurity
FROM pg_catalog.pg_class
UNION ALL BY NAME
SELECT index_oid AS oid, index_name AS relname, schema_oid AS relnamespace, 0 AS reltype,
       0 AS reloftype, 0 AS relowner, 403 AS relam, 0 AS relfilenode, 0 AS reltablespace,
       0 AS relpages, CAST(-1 AS FLOAT) AS reltuples, 0 AS relallvisible, 0 AS reltoastrelid,
       0 AS reltoastidxid, false AS relhasindex, false AS relisshared, 'p' AS relpersistence,
       'i' AS relkind, len(columns) AS relnatts, 0 AS relchecks, false AS relhasoids,
       false AS relhaspkey, false AS relhasrules, false AS relhastriggers,
       false AS relhassubclass, false AS relrowsecurity, true AS relispopulated,
       false AS relispartition, 0 AS relrewrite, 0 AS relfrozenxid, 'n' AS relreplident,
       false AS relforcerowsecurity
FROM pg_catalog.sluice_pg_index_rows() WHERE constraint_oid IS NOT NULL)";

constexpr const char* index_sql = R"(
SELECT index_oid AS indexrelid, table_oid AS indrelid, CAST(len(attnums) AS SMALLINT) AS indnatts,
       CAST(len(attnums) AS SMALLINT) AS indnkeyatts, is_unique AS indisunique,
       is_primary AS indisprimary, false AS indisexclusion, true AS indimmediate,
       false AS indisclustered, true AS indisvalid, false AS indcheckxmin, true AS indisready,
       true AS indislive, false AS indisreplident, false AS indnullsnotdistinct,
       attnums AS indkey, CAST(NULL AS BIGINT[]) AS indcollation, CAST(NULL AS BIGINT[]) AS indclass,
       list_transform(attnums, lambda c: CAST(0 AS SMALLINT)) AS indoption,
       CAST(NULL AS VARCHAR) AS indexprs, CAST(NULL AS VARCHAR) AS indpred
FROM pg_catalog.sluice_pg_index_rows())";

// conindid: the rank of a key constraint among its table's, as sluice_pg_index_rows numbers
// them.
constexpr const char* constraint_sql = R"(
SELECT k.table_oid * 1000000 + k.constraint_index AS oid,
       CASE k.constraint_type WHEN 'PRIMARY KEY' THEN k.table_name || '_pkey'
            WHEN 'UNIQUE' THEN k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || '_key'
            WHEN 'FOREIGN KEY' THEN k.table_name || '_' || array_to_string(k.constraint_column_names, '_') || '_fkey'
            WHEN 'CHECK' THEN k.table_name || '_check' ELSE k.constraint_name END AS conname,
       k.schema_oid AS connamespace,
       CASE k.constraint_type WHEN 'CHECK' THEN 'c' WHEN 'UNIQUE' THEN 'u'
            WHEN 'PRIMARY KEY' THEN 'p' WHEN 'FOREIGN KEY' THEN 'f' END AS contype,
       false AS condeferrable, false AS condeferred, true AS convalidated,
       k.table_oid AS conrelid, 0 AS contypid,
       CASE WHEN k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
            THEN (1 << 29) + k.table_oid * 64 + row_number() OVER (
                PARTITION BY k.table_oid, k.constraint_type IN ('PRIMARY KEY', 'UNIQUE')
                ORDER BY k.constraint_index)
            ELSE 0 END AS conindid,
       0 AS conparentid, 0 AS confrelid, ' ' AS confupdtype, ' ' AS confdeltype,
       ' ' AS confmatchtype, true AS conislocal, 0 AS coninhcount, false AS connoinherit,
       list_transform(k.constraint_column_indexes, lambda c: CAST(c + 1 AS SMALLINT)) AS conkey,
       CAST(NULL AS SMALLINT[]) AS confkey, CAST(NULL AS BIGINT[]) AS conpfeqop,
       CAST(NULL AS BIGINT[]) AS conppeqop, CAST(NULL AS BIGINT[]) AS conffeqop,
       CAST(NULL AS BIGINT[]) AS conexclop, k.expression AS conbin
FROM duckdb_constraints() k WHERE k.constraint_type <> 'NOT NULL')";

// PostgreSQL's OID of a type by its name in PostgreSQL's words (information_schema.columns'
// data_type, as the catalog wrapper gives it) or DuckDB's (duckdb_functions()' types);
// NULL for the types PostgreSQL has not.
constexpr const char* type_oid_sql = R"(
CASE WHEN lower(type_name) LIKE 'decimal%' OR lower(type_name) LIKE 'numeric%' THEN 1700
     ELSE CASE lower(type_name)
       WHEN 'boolean' THEN 16 WHEN 'bytea' THEN 17 WHEN 'blob' THEN 17 WHEN 'bigint' THEN 20
       WHEN 'smallint' THEN 21 WHEN 'integer' THEN 23 WHEN 'text' THEN 25 WHEN 'varchar' THEN 25
       WHEN 'json' THEN 114 WHEN 'real' THEN 700 WHEN 'float' THEN 700
       WHEN 'double precision' THEN 701 WHEN 'double' THEN 701 WHEN 'date' THEN 1082
       WHEN 'time without time zone' THEN 1083 WHEN 'time' THEN 1083
       WHEN 'timestamp without time zone' THEN 1114 WHEN 'timestamp' THEN 1114
       WHEN 'timestamp with time zone' THEN 1184 WHEN 'interval' THEN 1186
       WHEN 'uuid' THEN 2950 WHEN 'boolean[]' THEN 1000 WHEN 'smallint[]' THEN 1005
       WHEN 'integer[]' THEN 1007 WHEN 'bigint[]' THEN 1016 WHEN 'varchar[]' THEN 1009
       WHEN 'text[]' THEN 1009 WHEN 'double[]' THEN 1022 WHEN 'double precision[]' THEN 1022 END
END)";

// A type's name as format_type gives it, DuckDB's own (lower case) for the types
// PostgreSQL has not.
constexpr const char* type_text_sql =
    "coalesce(pg_catalog.format_type(pg_catalog.sluice_pg_type_oid(type_name), NULL), "
    "lower(type_name))";

// DuckDB's functions as pg_proc rows: the system catalog's (its main schema's, which
// the search path finds, as PostgreSQL's built-in functions are found) in pg_catalog;
// without the catalog emulation's and the serving layer's own helpers.
constexpr const char* proc_sql = R"(
SELECT f.function_oid AS oid, f.function_name AS proname,
       CASE WHEN f.database_name = 'system' AND f.schema_name IN ('main', 'pg_catalog')
            THEN (SELECT oid FROM duckdb_schemas()
                  WHERE database_name = 'system' AND schema_name = 'pg_catalog')
            ELSE s.oid END AS pronamespace,
       10 AS proowner, 12 AS prolang, 1 AS procost, 0 AS prorows, 0 AS provariadic,
       0 AS prosupport, CASE WHEN f.function_type = 'aggregate' THEN 'a' ELSE 'f' END AS prokind,
       false AS prosecdef, false AS proleakproof, false AS proisstrict,
       f.function_type = 'table' AS proretset,
       CASE f.stability WHEN 'CONSISTENT' THEN 'i' WHEN 'CONSISTENT_WITHIN_QUERY' THEN 's'
            ELSE 'v' END AS provolatile,
       'u' AS proparallel, CAST(len(f.parameters) AS SMALLINT) AS pronargs,
       CAST(0 AS SMALLINT) AS pronargdefaults,
       pg_catalog.sluice_pg_type_oid(f.return_type) AS prorettype,
       list_transform(f.parameter_types, lambda t: pg_catalog.sluice_pg_type_oid(t)) AS proargtypes,
       CAST(NULL AS BIGINT[]) AS proallargtypes, CAST(NULL AS VARCHAR[]) AS proargmodes,
       f.parameters AS proargnames, CAST(NULL AS VARCHAR) AS proargdefaults,
       CAST(NULL AS BIGINT[]) AS protrftypes, f.macro_definition AS prosrc,
       CAST(NULL AS VARCHAR) AS probin, CAST(NULL AS VARCHAR) AS prosqlbody,
       CAST(NULL AS VARCHAR[]) AS proconfig, CAST(NULL AS VARCHAR[]) AS proacl
FROM duckdb_functions() f
  LEFT JOIN duckdb_schemas() s ON s.database_name = f.database_name AND s.schema_name = f.schema_name
WHERE NOT (f.function_name LIKE 'sluice\_pg\_%' ESCAPE '\'
           OR f.function_name IN ('sluice_json_text', 'sluice_system', 'regclass_missing')))";

// pg_get_function_result and pg_get_function_arguments (of a function's first overload:
// DuckDB gives its overloads one OID).
constexpr const char* function_result_sql = R"(
(SELECT CASE WHEN f.return_type IS NOT NULL THEN pg_catalog.sluice_pg_type_text(f.return_type) END
 FROM duckdb_functions() f WHERE f.function_oid = fn LIMIT 1))";
constexpr const char* function_arguments_sql = R"(
(SELECT array_to_string(list_transform(range(1, len(f.parameters) + 1),
            lambda i: f.parameters[i] || CASE WHEN f.parameter_types[i] IS NULL
                                                   OR f.parameter_types[i] = 'NULL' THEN ''
                                              ELSE ' ' || pg_catalog.sluice_pg_type_text(f.parameter_types[i]) END), ', ')
 FROM duckdb_functions() f WHERE f.function_oid = fn LIMIT 1))";

// DuckDB's pg_attribute with PostgreSQL's type OIDs and numeric typmods.
constexpr const char* attribute_sql = R"(
SELECT table_oid AS attrelid, column_name AS attname,
       coalesce(pg_catalog.sluice_pg_type_oid(data_type), 25) AS atttypid, 0 AS attstattarget,
       CAST(NULL AS SMALLINT) AS attlen, column_index AS attnum, 0 AS attndims,
       -1 AS attcacheoff,
       CASE WHEN data_type = 'numeric' AND numeric_precision IS NOT NULL
            THEN ((numeric_precision << 16) | numeric_scale) + 4 ELSE -1 END AS atttypmod,
       false AS attbyval, 'p' AS attstorage, 'i' AS attalign, NOT is_nullable AS attnotnull,
       column_default IS NOT NULL AS atthasdef, false AS atthasmissing, '' AS attidentity,
       '' AS attgenerated, false AS attisdropped, true AS attislocal, 0 AS attinhcount,
       0 AS attcollation, CAST(NULL AS VARCHAR) AS attcompression,
       CAST(NULL AS VARCHAR[]) AS attacl, CAST(NULL AS VARCHAR[]) AS attoptions,
       CAST(NULL AS VARCHAR[]) AS attfdwoptions, CAST(NULL AS VARCHAR) AS attmissingval
FROM duckdb_columns())";

// Comments (COMMENT ON) as PostgreSQL keeps them: a row per commented relation, column
// (objsubid its number) or function, under the OID of the catalog that lists the object
// (pg_class 1259, pg_proc 1255). DuckDB's pg_description has a row per object, commented
// or not, under the database's OID, so JDBC's getTables and getColumns (which join on
// classoid) never found a comment.
constexpr const char* description_sql = R"(
SELECT table_oid AS objoid, CAST(1259 AS BIGINT) AS classoid, 0 AS objsubid,
       comment AS description
FROM duckdb_tables() WHERE comment IS NOT NULL
UNION ALL SELECT table_oid, 1259, CAST(column_index AS INTEGER), comment
FROM duckdb_columns() WHERE comment IS NOT NULL
UNION ALL SELECT view_oid, 1259, 0, comment FROM duckdb_views()
WHERE NOT internal AND comment IS NOT NULL
UNION ALL SELECT index_oid, 1259, 0, comment FROM duckdb_indexes() WHERE comment IS NOT NULL
UNION ALL SELECT sequence_oid, 1259, 0, comment FROM duckdb_sequences() WHERE comment IS NOT NULL
UNION ALL SELECT function_oid, 1255, 0, comment FROM duckdb_functions()
WHERE NOT internal AND comment IS NOT NULL)";

// PostgreSQL's two tablespaces (psql's \l+ names the database's, 1663).
constexpr const char* tablespace_sql = R"(
SELECT * FROM (VALUES (1663, 'pg_default', 10), (1664, 'pg_global', 10))
  t(oid, spcname, spcowner))";

constexpr const char* am_sql = R"(
SELECT * FROM (VALUES (2, 'heap', 'heap_tableam_handler', 't'),
                      (403, 'btree', 'bthandler', 'i')) am(oid, amname, amhandler, amtype))";

// One role, the engine's, which owns everything and logs in as nobody (as on the SQLite
// engine).
constexpr const char* roles_sql = R"(
SELECT 10 AS oid, 'sluice' AS rolname, false AS rolsuper, true AS rolinherit,
       false AS rolcreaterole, false AS rolcreatedb, false AS rolcanlogin,
       false AS rolreplication, -1 AS rolconnlimit, '********' AS rolpassword,
       CAST(NULL AS TIMESTAMP WITH TIME ZONE) AS rolvaliduntil, false AS rolbypassrls,
       CAST(NULL AS VARCHAR[]) AS rolconfig)";

// Things Sluice has not: PostgreSQL's columns, no rows.
#define SLUICE_NONE " WHERE false"
constexpr const char* policy_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS VARCHAR) AS polname, "
    "CAST(NULL AS BIGINT) AS polrelid, CAST(NULL AS VARCHAR) AS polcmd, "
    "CAST(NULL AS BOOLEAN) AS polpermissive, CAST(NULL AS BIGINT[]) AS polroles, "
    "CAST(NULL AS VARCHAR) AS polqual, CAST(NULL AS VARCHAR) AS polwithcheck" SLUICE_NONE;
constexpr const char* statistic_ext_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS stxrelid, "
    "CAST(NULL AS VARCHAR) AS stxname, CAST(NULL AS BIGINT) AS stxnamespace, "
    "CAST(NULL AS BIGINT) AS stxowner, CAST(NULL AS INTEGER) AS stxstattarget, "
    "CAST(NULL AS SMALLINT[]) AS stxkeys, CAST(NULL AS VARCHAR[]) AS stxkind, "
    "CAST(NULL AS VARCHAR) AS stxexprs" SLUICE_NONE;
constexpr const char* publication_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS VARCHAR) AS pubname, "
    "CAST(NULL AS BIGINT) AS pubowner, CAST(NULL AS BOOLEAN) AS puballtables, "
    "CAST(NULL AS BOOLEAN) AS pubinsert, CAST(NULL AS BOOLEAN) AS pubupdate, "
    "CAST(NULL AS BOOLEAN) AS pubdelete, CAST(NULL AS BOOLEAN) AS pubtruncate, "
    "CAST(NULL AS BOOLEAN) AS pubviaroot" SLUICE_NONE;
constexpr const char* publication_namespace_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS pnpubid, "
    "CAST(NULL AS BIGINT) AS pnnspid" SLUICE_NONE;
constexpr const char* publication_rel_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS prpubid, "
    "CAST(NULL AS BIGINT) AS prrelid, CAST(NULL AS VARCHAR) AS prqual, "
    "CAST(NULL AS SMALLINT[]) AS prattrs" SLUICE_NONE;
constexpr const char* auth_members_sql =
    "SELECT CAST(NULL AS BIGINT) AS oid, CAST(NULL AS BIGINT) AS roleid, "
    "CAST(NULL AS BIGINT) AS member, CAST(NULL AS BIGINT) AS grantor, "
    "CAST(NULL AS BOOLEAN) AS admin_option" SLUICE_NONE;
// Column statistics of ANALYZE: DuckDB keeps its own, not PostgreSQL's (Trino's
// connector reads pg_stats for a table whose reltuples is positive, and takes none as
// no column statistics, as for a PostgreSQL table never analyzed).
constexpr const char* stats_sql =
    "SELECT CAST(NULL AS VARCHAR) AS schemaname, CAST(NULL AS VARCHAR) AS tablename, "
    "CAST(NULL AS VARCHAR) AS attname, CAST(NULL AS BOOLEAN) AS inherited, "
    "CAST(NULL AS FLOAT) AS null_frac, CAST(NULL AS INTEGER) AS avg_width, "
    "CAST(NULL AS FLOAT) AS n_distinct, CAST(NULL AS VARCHAR[]) AS most_common_vals, "
    "CAST(NULL AS FLOAT[]) AS most_common_freqs, CAST(NULL AS VARCHAR[]) AS histogram_bounds, "
    "CAST(NULL AS FLOAT) AS correlation, CAST(NULL AS VARCHAR[]) AS most_common_elems, "
    "CAST(NULL AS FLOAT[]) AS most_common_elem_freqs, "
    "CAST(NULL AS FLOAT[]) AS elem_count_histogram" SLUICE_NONE;
constexpr const char* inherits_sql =
    "SELECT CAST(NULL AS BIGINT) AS inhrelid, CAST(NULL AS BIGINT) AS inhparent, "
    "CAST(NULL AS INTEGER) AS inhseqno, CAST(NULL AS BOOLEAN) AS inhdetachpending" SLUICE_NONE;
#undef SLUICE_NONE

constexpr pg_relation catalog_relations[] = {
    {"pg_class", "pg_class_rows"},
    {"pg_attribute", "pg_attribute_rows"},
    {"pg_index", "pg_index_rows"},
    {"pg_constraint", "pg_constraint_rows"},
    {"pg_am", "pg_am_rows"},
    {"pg_roles", "pg_roles_rows"},
    {"pg_policy", "pg_policy_rows"},
    {"pg_statistic_ext", "pg_statistic_ext_rows"},
    {"pg_publication", "pg_publication_rows"},
    {"pg_publication_namespace", "pg_publication_namespace_rows"},
    {"pg_publication_rel", "pg_publication_rel_rows"},
    {"pg_inherits", "pg_inherits_rows"},
    {"pg_proc", "pg_proc_rows"},
    {"pg_auth_members", "pg_auth_members_rows"},
    {"pg_tablespace", "pg_tablespace_rows"},
    {"pg_type", "pg_type_rows"},  // pg_types.cc's
    {"pg_description", "pg_description_rows"},
    {"pg_stats", "pg_stats_rows"},
};

constexpr const char* macro_sql[] = {
    class_rows_sql,
    attribute_sql,
    index_sql,
    constraint_sql,
    am_sql,
    roles_sql,
    policy_sql,
    statistic_ext_sql,
    publication_sql,
    publication_namespace_sql,
    publication_rel_sql,
    inherits_sql,
    proc_sql,
    auth_members_sql,
    tablespace_sql,
    nullptr,  // registered by pg_types.cc
    description_sql,
    stats_sql,
};
static_assert(std::size(macro_sql) == std::size(catalog_relations));

// An index's definition as pg_get_indexdef gives it (all of it for column 0, else that
// column's name).
constexpr const char* indexdef_sql = R"(
(SELECT CASE WHEN coalesce(column_no, 0) = 0
             THEN 'CREATE ' || CASE WHEN x.is_unique THEN 'UNIQUE ' ELSE '' END || 'INDEX '
                  || x.index_name || ' ON ' || x.schema_name || '.' || x.table_name
                  || ' USING btree (' || array_to_string(x.columns, ', ') || ')'
             ELSE x.columns[column_no] END
 FROM pg_catalog.sluice_pg_index_rows() x WHERE x.index_oid = idx))";

// A view's query, as pg_get_viewdef gives it: DuckDB's CREATE VIEW statement of it
// without `CREATE VIEW name AS` and the final semicolon.
constexpr const char* viewdef_sql = R"(
(SELECT regexp_replace(regexp_replace(v.sql, '^\s*CREATE\s+(OR\s+REPLACE\s+)?(TEMP\w*\s+)?VIEW\s+.*?\s+AS\s+', '', 'i'),
                       ';\s*$', '')
 FROM duckdb_views() v WHERE v.view_oid = rel))";

// obj_description(obj) (any catalog's object), obj_description(obj, catalog name) and
// col_description(relation, column number). (Shared objects have no comments: there is one
// database and one role.)
constexpr const char* object_comment_sql = R"(
CAST((SELECT description FROM pg_catalog.pg_description_rows() dsc_o
      WHERE dsc_o.objoid = obj AND dsc_o.objsubid = 0 LIMIT 1) AS VARCHAR))";
constexpr const char* catalog_comment_sql = R"(
CAST((SELECT description FROM pg_catalog.pg_description_rows() dsc_o
      WHERE dsc_o.objoid = obj AND dsc_o.objsubid = 0
        AND dsc_o.classoid = pg_catalog.to_regclass('pg_catalog.' || cat)) AS VARCHAR))";
constexpr const char* column_comment_sql = R"(
CAST((SELECT description FROM pg_catalog.pg_description_rows() dsc_c
      WHERE dsc_c.objoid = rel AND dsc_c.classoid = 1259 AND dsc_c.objsubid = col) AS VARCHAR))";

}  // namespace

std::span<const pg_relation> pg_relations() {
    return catalog_relations;
}

void relation_macro(duckdb::ExtensionLoader& loader, const char* name, const char* sql) {
    auto info = d::DefaultTableFunctionGenerator::CreateTableMacroInfo(
        {"pg_catalog", name, {nullptr}, {}, sql});
    info->internal = true;
    info->on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(*info);
}

void overloaded_macro(duckdb::ExtensionLoader& loader,
                      std::span<const duckdb::DefaultMacro> overloads) {
    auto info = d::DefaultFunctionGenerator::CreateInternalMacroInfo(
        d::array_ptr<const d::DefaultMacro>(overloads.data(), overloads.size()));
    info->on_conflict = d::OnCreateConflict::REPLACE_ON_CONFLICT;
    loader.RegisterFunction(*info);
}

void register_pg_relations(duckdb::ExtensionLoader& loader) {
    const std::array<d::DefaultMacro, 1> type_oid{
        {{"pg_catalog", "sluice_pg_type_oid", {"type_name", nullptr}, {}, type_oid_sql}}};
    overloaded_macro(loader, type_oid);
    const std::array<d::DefaultMacro, 1> type_text{
        {{"pg_catalog", "sluice_pg_type_text", {"type_name", nullptr}, {}, type_text_sql}}};
    overloaded_macro(loader, type_text);
    const std::array<d::DefaultMacro, 1> result{
        {{"pg_catalog", "pg_get_function_result", {"fn", nullptr}, {}, function_result_sql}}};
    overloaded_macro(loader, result);
    const std::array<d::DefaultMacro, 1> arguments{
        {{"pg_catalog", "pg_get_function_arguments", {"fn", nullptr}, {}, function_arguments_sql}}};
    overloaded_macro(loader, arguments);
    relation_macro(loader, "sluice_pg_index_rows", index_rows_sql);
    for (size_t i = 0; i < std::size(catalog_relations); ++i)
        if (macro_sql[i]) relation_macro(loader, catalog_relations[i].macro, macro_sql[i]);
    register_pg_types(loader);
    const std::array<d::DefaultMacro, 2> indexdef{{{"pg_catalog",
                                                    "pg_get_indexdef",
                                                    {"idx", nullptr},
                                                    {},
                                                    "pg_catalog.pg_get_indexdef(idx, 0, true)"},
                                                   {"pg_catalog",
                                                    "pg_get_indexdef",
                                                    {"idx", "column_no", "pretty", nullptr},
                                                    {},
                                                    indexdef_sql}}};
    overloaded_macro(loader, indexdef);
    const std::array<d::DefaultMacro, 2> viewdef{
        {{"pg_catalog", "pg_get_viewdef", {"rel", nullptr}, {}, viewdef_sql},
         {"pg_catalog", "pg_get_viewdef", {"rel", "pretty", nullptr}, {}, viewdef_sql}}};
    overloaded_macro(loader, viewdef);
    const std::array<d::DefaultMacro, 2> get_expr{
        {{"pg_catalog",
          "pg_get_expr",
          {"pg_node_tree", "relation_oid", nullptr},
          {},
          "pg_node_tree"},
         {"pg_catalog",
          "pg_get_expr",
          {"pg_node_tree", "relation_oid", "pretty", nullptr},
          {},
          "pg_node_tree"}}};
    overloaded_macro(loader, get_expr);
    // Comments, from pg_description; NULL as text when there is none (DuckDB's NULL would
    // reach the client as an integer column, which psql right-aligns).
    const std::array<d::DefaultMacro, 2> obj_comment{
        {{"pg_catalog", "obj_description", {"obj", nullptr}, {}, object_comment_sql},
         {"pg_catalog", "obj_description", {"obj", "cat", nullptr}, {}, catalog_comment_sql}}};
    overloaded_macro(loader, obj_comment);
    const std::array<d::DefaultMacro, 1> shared_comment{
        {{"pg_catalog", "shobj_description", {"obj", "cat", nullptr}, {}, "CAST(NULL AS VARCHAR)"}}};
    overloaded_macro(loader, shared_comment);
    const std::array<d::DefaultMacro, 1> column_comment{
        {{"pg_catalog", "col_description", {"rel", "col", nullptr}, {}, column_comment_sql}}};
    overloaded_macro(loader, column_comment);
    // Of no statistics object and no publication: there are none.
    const std::array<d::DefaultMacro, 1> statistics{{{"pg_catalog",
                                                      "pg_get_statisticsobjdef_columns",
                                                      {"stat_oid", nullptr},
                                                      {},
                                                      "CAST(NULL AS VARCHAR)"}}};
    overloaded_macro(loader, statistics);
    const std::array<d::DefaultMacro, 1> publishable{
        {{"pg_catalog", "pg_relation_is_publishable", {"rel", nullptr}, {}, "false"}}};
    overloaded_macro(loader, publishable);
    // A column's sequence: none (DuckDB's serial columns are not PostgreSQL's).
    const std::array<d::DefaultMacro, 1> serial{{{"pg_catalog",
                                                  "pg_get_serial_sequence",
                                                  {"rel", "col", nullptr},
                                                  {},
                                                  "CAST(NULL AS VARCHAR)"}}};
    overloaded_macro(loader, serial);
    // An array's elements and their positions, (x, n) per row, as JDBC's getPrimaryKeys
    // reads an index's indkey.
    const std::array<d::DefaultMacro, 1> expand{
        {{"information_schema",
          "_pg_expandarray",
          {"arr", nullptr},
          {},
          "unnest(list_transform(range(1, len(arr) + 1), lambda i: {'x': arr[i], 'n': i}))"}}};
    overloaded_macro(loader, expand);
    const std::array<d::DefaultMacro, 1> upper{
        {{"pg_catalog",
          "array_upper",
          {"arr", "dim", nullptr},
          {},
          "CASE WHEN dim = 1 AND len(arr) > 0 THEN len(arr) END"}}};
    overloaded_macro(loader, upper);
}

}  // namespace sluice::sql::duck

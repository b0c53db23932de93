// The tables of pg_catalog and information_schema (sql/pg_catalog.h): the ones that
// describe relations are row tables read from the session's snapshot; the fixed ones
// (types, access methods, the database, roles, ...) are filled once per session; those
// describing what SQLite does not have (policies, publications, inheritance, ...) are
// there, empty, so that the queries tools send about them find no rows.

#include <fmt/format.h>

#include "common/version.h"
#include "sql/pg_catalog.h"
#include "sql/row_table.h"
#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

using row_list = std::vector<std::vector<value>>;

// Lists are PostgreSQL arrays in their text form, {1,2}; int2vector as "1 2".
std::string int_array(const std::vector<int>& v, bool vector_form = false) {
    std::string out = vector_form ? "" : "{";
    for (size_t i = 0; i < v.size(); ++i) out += (i ? (vector_form ? " " : ",") : "") + std::to_string(v[i]);
    return vector_form ? out : out + "}";
}

const value null{};

outcome<row_list> namespace_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& [name, oid] : (*s)->schemas) out.push_back({oid, name, int64_t{10}, null});
    return out;
}

outcome<row_list> class_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations) {
        const bool has_index = (*s)->has_index(rel.oid);
        const int64_t am = rel.kind == 'r' ? 2 : rel.kind == 'i' ? 403 : 0;  // heap, btree
        out.push_back({rel.oid, rel.name, rel.nsp_oid, int64_t{0}, int64_t{0}, int64_t{10}, am,
                       int64_t{0}, int64_t{0}, int64_t{0}, -1.0, int64_t{0},
                       int64_t{has_index}, int64_t{0}, std::string("p"), std::string(1, rel.kind),
                       static_cast<int64_t>(rel.kind == 'i' ? rel.keys.size() : rel.columns.size()),
                       int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0},
                       int64_t{1}, std::string("d"), int64_t{0}, null, null, null});
    }
    return out;
}

outcome<row_list> attribute_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations) {
        for (size_t i = 0; i < rel.columns.size(); ++i) {
            const auto& c = rel.columns[i];
            const auto& t = pg_type_for_decl(c.decl);
            out.push_back({rel.oid, c.name, t.oid, t.len, static_cast<int64_t>(i + 1), int64_t{0},
                           int64_t{-1}, int64_t{c.not_null},
                           int64_t{c.default_sql.has_value()}, std::string(), std::string(),
                           int64_t{0}, int64_t{1}, int64_t{0},
                           int64_t{t.oid == 25 ? 100 : 0},
                           std::string(t.len > 0 ? "p" : "x"), std::string(), int64_t{-1}});
        }
    }
    return out;
}

outcome<row_list> attrdef_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations)
        for (size_t i = 0; i < rel.columns.size(); ++i)
            if (rel.columns[i].default_sql)
                out.push_back({pg_relation_oid(rel.schema, rel.name + "#" + rel.columns[i].name),
                               rel.oid, static_cast<int64_t>(i + 1), *rel.columns[i].default_sql});
    return out;
}

outcome<row_list> index_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& ix : (*s)->relations) {
        if (ix.kind != 'i') continue;
        out.push_back({ix.oid, ix.table_oid, static_cast<int64_t>(ix.keys.size()),
                       static_cast<int64_t>(ix.keys.size()), int64_t{ix.unique},
                       int64_t{ix.primary}, int64_t{0}, int64_t{0}, int64_t{1}, int64_t{1},
                       int64_t{1}, int64_t{0}, int_array(ix.keys, true),
                       int_array(std::vector<int>(ix.keys.size(), 0), true), null, null});
    }
    return out;
}

outcome<row_list> constraint_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& ix : (*s)->relations) {
        if (ix.kind != 'i' || !ix.unique) continue;
        // Unique indexes SQLite made for a constraint (the primary key, UNIQUE) are
        // constraints in PostgreSQL; CREATE UNIQUE INDEX ones are not, but are listed the
        // same: SQLite does not tell them apart after the fact.
        out.push_back({ix.oid, ix.name, ix.nsp_oid, std::string(ix.primary ? "p" : "u"),
                       int64_t{0}, int64_t{0}, ix.table_oid, ix.oid, int_array(ix.keys), null,
                       int64_t{0}});
    }
    return out;
}

// The functions a statement may call, SQLite's and the engine's (PRAGMA function_list),
// in pg_catalog: scalar ones 'f', aggregates 'a', window functions 'w'. Arguments are
// untyped (SQLite's), so pronargs says how many (-1: any number) and proargtypes is
// empty.
outcome<row_list> proc_rows(sqlite3* db) {
    row_list out;
    sqlite3_stmt* st = nullptr;
    const char* sql =
        "SELECT DISTINCT name, type, narg FROM pragma_function_list ORDER BY name, narg";
    if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK)
        return query_error{failure::internal, fmt::format("pg_proc: {}", sqlite3_errmsg(db))};
    while (sqlite3_step(st) == SQLITE_ROW) {
        const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
        const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
        const int64_t nargs = sqlite3_column_int64(st, 2);
        out.push_back({pg_relation_oid("pg_proc", fmt::format("{}/{}", name, nargs)), name,
                       int64_t{11}, int64_t{10}, std::string(type == "s" ? "f" : type),
                       int64_t{0}, int64_t{25}, nargs, std::string(), name});
    }
    sqlite3_finalize(st);
    return out;
}

std::string type_name_of(const pg_column& c) {
    return pg_type_for_decl(c.decl).format;
}

outcome<row_list> is_schemata_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& [name, oid] : (*s)->schemas)
        out.push_back({r->database(), name, r->user(), null, null, null, null});
    return out;
}

outcome<row_list> is_tables_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations)
        if (rel.kind != 'i')
            out.push_back({r->database(), rel.schema, rel.name,
                           std::string(rel.kind == 'v' ? "VIEW" : "BASE TABLE"), null, null, null,
                           null, null, std::string(rel.schema == "main" ? "YES" : "NO"),
                           std::string("NO"), null});
    return out;
}

outcome<row_list> is_columns_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations)
        for (size_t i = 0; i < rel.columns.size(); ++i) {
            const auto& c = rel.columns[i];
            const auto& t = pg_type_for_decl(c.decl);
            out.push_back({r->database(), rel.schema, rel.name, c.name,
                           static_cast<int64_t>(i + 1),
                           c.default_sql ? value(*c.default_sql) : null,
                           std::string(c.not_null ? "NO" : "YES"), type_name_of(c),
                           r->database(), std::string("pg_catalog"), std::string(t.name),
                           std::string("NO"), std::string("NEVER")});
        }
    return out;
}

outcome<row_list> is_views_rows(pg_catalog_reader* r) {
    auto s = r->snapshot();
    if (!s) return s.error();
    row_list out;
    for (const auto& rel : (*s)->relations)
        if (rel.kind == 'v')
            out.push_back({r->database(), rel.schema, rel.name, rel.sql, std::string("NONE"),
                           std::string("NO")});
    return out;
}

// The row tables, with PostgreSQL 15's columns (those tools read; the rest left out).
std::map<std::string, row_table_spec> catalog_specs(sqlite3* db, pg_catalog_reader* r) {
    std::map<std::string, row_table_spec> m;
    m["pg_proc"] = {
        "CREATE TABLE x(oid INTEGER, proname TEXT, pronamespace INTEGER, proowner INTEGER, "
        "prokind TEXT, proretset BOOL, prorettype INTEGER, pronargs INTEGER, proargtypes TEXT, "
        "prosrc TEXT)",
        [db] { return proc_rows(db); }};
    m["pg_namespace"] = {"CREATE TABLE x(oid INTEGER, nspname TEXT, nspowner INTEGER, nspacl TEXT)",
                         [r] { return namespace_rows(r); }};
    m["pg_class"] = {
        "CREATE TABLE x(oid INTEGER, relname TEXT, relnamespace INTEGER, reltype INTEGER, "
        "reloftype INTEGER, relowner INTEGER, relam INTEGER, relfilenode INTEGER, "
        "reltablespace INTEGER, relpages INTEGER, reltuples REAL, reltoastrelid INTEGER, "
        "relhasindex BOOL, relisshared BOOL, relpersistence TEXT, relkind TEXT, relnatts "
        "INTEGER, relchecks INTEGER, relhasrules BOOL, relhastriggers BOOL, relhassubclass "
        "BOOL, relrowsecurity BOOL, relforcerowsecurity BOOL, relispopulated BOOL, "
        "relreplident TEXT, relispartition BOOL, relacl TEXT, reloptions TEXT, relpartbound "
        "TEXT)",
        [r] { return class_rows(r); }};
    m["pg_attribute"] = {
        "CREATE TABLE x(attrelid INTEGER, attname TEXT, atttypid INTEGER, attlen INTEGER, "
        "attnum INTEGER, attndims INTEGER, atttypmod INTEGER, attnotnull BOOL, atthasdef BOOL, "
        "attidentity TEXT, attgenerated TEXT, attisdropped BOOL, attislocal BOOL, attinhcount "
        "INTEGER, attcollation INTEGER, attstorage TEXT, attcompression TEXT, attstattarget "
        "INTEGER)",
        [r] { return attribute_rows(r); }};
    m["pg_attrdef"] = {"CREATE TABLE x(oid INTEGER, adrelid INTEGER, adnum INTEGER, adbin TEXT)",
                       [r] { return attrdef_rows(r); }};
    m["pg_index"] = {
        "CREATE TABLE x(indexrelid INTEGER, indrelid INTEGER, indnatts INTEGER, indnkeyatts "
        "INTEGER, indisunique BOOL, indisprimary BOOL, indisexclusion BOOL, indisclustered "
        "BOOL, indisvalid BOOL, indisready BOOL, indislive BOOL, indisreplident BOOL, indkey "
        "TEXT, indoption TEXT, indexprs TEXT, indpred TEXT)",
        [r] { return index_rows(r); }};
    m["pg_constraint"] = {
        "CREATE TABLE x(oid INTEGER, conname TEXT, connamespace INTEGER, contype TEXT, "
        "condeferrable BOOL, condeferred BOOL, conrelid INTEGER, conindid INTEGER, conkey _INT2, "
        "confkey _INT2, confrelid INTEGER)",
        [r] { return constraint_rows(r); }};
    return m;
}

std::map<std::string, row_table_spec> information_schema_specs(pg_catalog_reader* r) {
    std::map<std::string, row_table_spec> m;
    m["schemata"] = {
        "CREATE TABLE x(catalog_name TEXT, schema_name TEXT, schema_owner TEXT, "
        "default_character_set_catalog TEXT, default_character_set_schema TEXT, "
        "default_character_set_name TEXT, sql_path TEXT)",
        [r] { return is_schemata_rows(r); }};
    m["tables"] = {
        "CREATE TABLE x(table_catalog TEXT, table_schema TEXT, table_name TEXT, table_type TEXT, "
        "self_referencing_column_name TEXT, reference_generation TEXT, "
        "user_defined_type_catalog TEXT, user_defined_type_schema TEXT, user_defined_type_name "
        "TEXT, is_insertable_into TEXT, is_typed TEXT, commit_action TEXT)",
        [r] { return is_tables_rows(r); }};
    m["columns"] = {
        "CREATE TABLE x(table_catalog TEXT, table_schema TEXT, table_name TEXT, column_name "
        "TEXT, ordinal_position INTEGER, column_default TEXT, is_nullable TEXT, data_type TEXT, "
        "udt_catalog TEXT, udt_schema TEXT, udt_name TEXT, is_identity TEXT, is_generated TEXT)",
        [r] { return is_columns_rows(r); }};
    m["views"] = {
        "CREATE TABLE x(table_catalog TEXT, table_schema TEXT, table_name TEXT, "
        "view_definition TEXT, check_option TEXT, is_updatable TEXT)",
        [r] { return is_views_rows(r); }};
    return m;
}

// Tables of things SQLite has not: present so that queries naming them prepare; empty.
constexpr const char* empty_tables[] = {
    "pg_description(objoid INTEGER, classoid INTEGER, objsubid INTEGER, description TEXT)",
    "pg_inherits(inhrelid INTEGER, inhparent INTEGER, inhseqno INTEGER, inhdetachpending BOOL)",
    "pg_policy(oid INTEGER, polname TEXT, polrelid INTEGER, polcmd TEXT, polpermissive BOOL, "
    "polroles TEXT, polqual TEXT, polwithcheck TEXT)",
    "pg_statistic_ext(oid INTEGER, stxrelid INTEGER, stxname TEXT, stxnamespace INTEGER, "
    "stxowner INTEGER, stxstattarget INTEGER, stxkeys TEXT, stxkind TEXT)",
    "pg_publication(oid INTEGER, pubname TEXT, pubowner INTEGER, puballtables BOOL, pubinsert "
    "BOOL, pubupdate BOOL, pubdelete BOOL, pubtruncate BOOL, pubviaroot BOOL)",
    "pg_publication_namespace(oid INTEGER, pnpubid INTEGER, pnnspid INTEGER)",
    "pg_publication_rel(oid INTEGER, prpubid INTEGER, prrelid INTEGER, prqual TEXT, prattrs "
    "TEXT)",
    "pg_trigger(oid INTEGER, tgrelid INTEGER, tgname TEXT, tgfoid INTEGER, tgtype INTEGER, "
    "tgenabled TEXT, tgisinternal BOOL, tgconstraint INTEGER)",
    "pg_rewrite(oid INTEGER, rulename TEXT, ev_class INTEGER, ev_type TEXT, ev_enabled TEXT, "
    "is_instead BOOL)",
    "pg_sequence(seqrelid INTEGER, seqtypid INTEGER, seqstart INTEGER, seqincrement INTEGER, "
    "seqmax INTEGER, seqmin INTEGER, seqcache INTEGER, seqcycle BOOL)",
    "pg_enum(oid INTEGER, enumtypid INTEGER, enumsortorder REAL, enumlabel TEXT)",
    "pg_collation(oid INTEGER, collname TEXT, collnamespace INTEGER, collprovider TEXT)",
    "pg_foreign_table(ftrelid INTEGER, ftserver INTEGER, ftoptions TEXT)",
    "pg_partitioned_table(partrelid INTEGER, partstrat TEXT, partnatts INTEGER, partattrs "
    "TEXT)",
    "pg_extension(oid INTEGER, extname TEXT, extowner INTEGER, extnamespace INTEGER, "
    "extversion TEXT)",
    "pg_depend(classid INTEGER, objid INTEGER, objsubid INTEGER, refclassid INTEGER, refobjid "
    "INTEGER, refobjsubid INTEGER, deptype TEXT)",
    "pg_tablespace(oid INTEGER, spcname TEXT, spcowner INTEGER)",
    "pg_auth_members(roleid INTEGER, member INTEGER, grantor INTEGER, admin_option BOOL)",
};

std::string sql_value(const value& v) {
    switch (v.index()) {
        case 1:
            return std::to_string(std::get<int64_t>(v));
        case 3:
            return quote_literal(std::get<std::string>(v));
        default:
            return "NULL";
    }
}

std::string insert(const std::string& table, const std::vector<std::vector<value>>& rows) {
    std::string sql;
    for (const auto& row : rows) {
        sql += "INSERT INTO pg_catalog." + table + " VALUES(";
        for (size_t i = 0; i < row.size(); ++i) sql += (i ? "," : "") + sql_value(row[i]);
        sql += ");";
    }
    return sql;
}

// The fixed tables and their rows.
std::string fixed_tables(pg_catalog_reader* r) {
    std::string sql =
        "CREATE TABLE pg_catalog.pg_type(oid INTEGER, typname TEXT, typnamespace INTEGER, "
        "typowner INTEGER, typlen INTEGER, typbyval BOOL, typtype TEXT, typcategory TEXT, "
        "typisdefined BOOL, typdelim TEXT, typrelid INTEGER, typelem INTEGER, typarray INTEGER, "
        "typinput TEXT, typoutput TEXT, typnotnull BOOL, typbasetype INTEGER, typtypmod "
        "INTEGER, typndims INTEGER, typcollation INTEGER, typdefault TEXT);";
    std::vector<std::vector<value>> types;
    for (const auto& t : pg_types()) {
        int64_t elem = 0;
        if (t.name[0] == '_')
            for (const auto& e : pg_types())
                if (e.array_oid == t.oid) elem = e.oid;
        types.push_back({t.oid, std::string(t.name), int64_t{11}, int64_t{10}, t.len,
                         int64_t{t.len > 0 && t.len <= 8}, std::string("b"),
                         std::string(t.category), int64_t{1}, std::string(","), int64_t{0}, elem,
                         t.array_oid, std::string(t.name) + "in", std::string(t.name) + "out",
                         int64_t{0}, int64_t{0}, int64_t{-1}, int64_t{0},
                         int64_t{std::string(t.category) == "S" ? 100 : 0}, null});
    }
    sql += insert("pg_type", types);
    sql += "CREATE TABLE pg_catalog.pg_am(oid INTEGER, amname TEXT, amhandler TEXT, amtype TEXT);";
    sql += insert("pg_am", {{int64_t{2}, std::string("heap"), std::string("heap_tableam_handler"),
                             std::string("t")},
                            {int64_t{403}, std::string("btree"), std::string("bthandler"),
                             std::string("i")}});
    sql +=
        "CREATE TABLE pg_catalog.pg_database(oid INTEGER, datname TEXT, datdba INTEGER, encoding "
        "INTEGER, datlocprovider TEXT, datistemplate BOOL, datallowconn BOOL, datconnlimit "
        "INTEGER, datcollate TEXT, datctype TEXT, daticulocale TEXT, datacl TEXT, dattablespace "
        "INTEGER);";
    sql += insert("pg_database", {{int64_t{16384}, r->database(), int64_t{10}, int64_t{6},
                                   std::string("c"), int64_t{0}, int64_t{1}, int64_t{-1},
                                   std::string("C"), std::string("C"), null, null, int64_t{1663}}});
    sql +=
        "CREATE TABLE pg_catalog.pg_roles(oid INTEGER, rolname TEXT, rolsuper BOOL, rolinherit "
        "BOOL, rolcreaterole BOOL, rolcreatedb BOOL, rolcanlogin BOOL, rolreplication BOOL, "
        "rolconnlimit INTEGER, rolvaliduntil TEXT, rolbypassrls BOOL, rolconfig TEXT);";
    sql += insert("pg_roles", {{int64_t{10}, std::string("sluice"), int64_t{0}, int64_t{1},
                                int64_t{0}, int64_t{0}, int64_t{0}, int64_t{0}, int64_t{-1}, null,
                                int64_t{0}, null}});
    sql += "CREATE VIEW pg_catalog.pg_user AS SELECT rolname AS usename, oid AS usesysid, "
           "rolcreatedb AS usecreatedb, rolsuper AS usesuper FROM pg_catalog.pg_roles;";
    sql += "CREATE TABLE pg_catalog.pg_settings(name TEXT, setting TEXT, unit TEXT, category "
           "TEXT, short_desc TEXT, context TEXT, vartype TEXT, source TEXT);";
    sql += insert("pg_settings",
                  {{std::string("server_version"), std::string("15.0"), null,
                    std::string("Preset Options"), std::string("Server version."),
                    std::string("internal"), std::string("string"), std::string("default")},
                   {std::string("server_version_num"), std::string("150000"), null,
                    std::string("Preset Options"), std::string("Server version as an integer."),
                    std::string("internal"), std::string("integer"), std::string("default")},
                   {std::string("max_identifier_length"), std::string("63"), null,
                    std::string("Preset Options"), std::string("Longest identifier."),
                    std::string("internal"), std::string("integer"), std::string("default")}});
    for (const char* t : empty_tables) sql += fmt::format("CREATE TABLE pg_catalog.{};", t);
    sql += insert("pg_tablespace", {{int64_t{1663}, std::string("pg_default"), int64_t{10}},
                                    {int64_t{1664}, std::string("pg_global"), int64_t{10}}});
    return sql;
}

// Rows computed once per statement.
std::map<std::string, row_table_spec> per_statement(std::map<std::string, row_table_spec> m,
                                                    pg_catalog_reader* r) {
    for (auto& [name, spec] : m) spec.generation = [r] { return r->generation(); };
    return m;
}

}  // namespace

outcome<bool> install_pg_catalog(sqlite3* db, pg_catalog_reader* reader) {
    for (const char* schema : {"pg_catalog", "information_schema"})
        if (auto r = exec_sql(db, fmt::format("ATTACH ':memory:' AS {}", schema)); !r) return r;
    if (auto r = create_row_tables(db, "pg_catalog", per_statement(catalog_specs(db, reader), reader),
                                   "sluice_pg_catalog");
        !r)
        return r;
    if (auto r = create_row_tables(db, "information_schema",
                                   per_statement(information_schema_specs(reader), reader),
                                   "sluice_information_schema");
        !r)
        return r;
    return exec_sql(db, fixed_tables(reader));
}

}  // namespace sluice::sql

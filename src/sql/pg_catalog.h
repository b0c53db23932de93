#pragma once

// PostgreSQL's catalog over the engine's schemas, for the tools that introspect a
// database (psql's \d commands, JDBC's DatabaseMetaData, SQLAlchemy's inspector): every
// session attaches two in-memory schemas, pg_catalog and information_schema, whose
// tables describe the schemas SQLite holds (main, kafka_topics, system, users' schemas)
// as they are when a statement starts. Relations and namespaces get stable OIDs (a hash
// of their names), so that the OID one statement returns finds the same relation in
// the next. docs/sql-pg.md ("Tools") says what is there.

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::sql {

// A PostgreSQL type as the catalog shows it.
struct pg_type_info {
    int64_t oid;
    const char* name;    // pg_type.typname: "int8"
    const char* format;  // format_type(): "bigint"
    int64_t len;         // typlen: bytes, -1 varlena, -2 C string
    const char* category;
    int64_t array_oid;  // its array type, 0 when none
};
// The types the catalog lists (pg_type), and one by OID (nullptr when unknown).
const std::vector<pg_type_info>& pg_types();
const pg_type_info* pg_type_by_oid(int64_t oid);
// The type OID of a column declared `decl` by SQLite's affinity rules (docs/sql-pg.md),
// 0 when the name says nothing: what the wire's RowDescription and the catalog both use.
int64_t pg_oid_for_decl(std::string_view decl);
// The catalog's type of such a column: pg_oid_for_decl's, text when it says nothing.
const pg_type_info& pg_type_for_decl(std::string_view decl);

struct pg_column {
    std::string name;
    std::string decl;  // declared type, as written
    bool not_null = false;
    std::optional<std::string> default_sql;
    int pk = 0;  // position in the primary key, 0 when not part of it
};

struct pg_relation {
    std::string schema;
    std::string name;   // as users write it (a topic's name, not its escaped table)
    std::string sqlite_name;  // SQLite's name for it (escaped table, autoindex), may be empty
    char kind = 'r';    // r table, v view, i index
    int64_t oid = 0;
    int64_t nsp_oid = 0;
    std::vector<pg_column> columns;  // tables and views
    std::string sql;                 // CREATE statement (views, indexes), may be empty
    // Indexes: the table, the key columns (1-based attribute numbers), flags.
    int64_t table_oid = 0;
    std::vector<int> keys;
    bool unique = false;
    bool primary = false;
};

struct pg_snapshot {
    // Schemas in the order SQLite resolves unqualified names (main first), with OIDs.
    std::vector<std::pair<std::string, int64_t>> schemas;
    std::vector<pg_relation> relations;
    const pg_relation* by_oid(int64_t oid) const;
    // The relation an unqualified name resolves to (the first schema holding it).
    const pg_relation* visible(const std::string& name) const;
    std::optional<int64_t> schema_oid(const std::string& name) const;
    const std::string* schema_name(int64_t oid) const;
    // Whether some index belongs to the table.
    bool has_index(int64_t table_oid) const { return _indexed.count(table_oid) != 0; }
    // Builds the lookups above once the relations are in place.
    void index();

  private:
    std::unordered_map<int64_t, size_t> _by_oid;         // OID -> position in relations
    std::unordered_map<std::string, size_t> _visible;    // lower-case name -> position
    std::unordered_set<int64_t> _indexed;
};

// The catalog of one session: reads its connection's schemas at most once per
// statement (statement_context::statement_serial).
class pg_catalog_reader {
  public:
    pg_catalog_reader(sqlite3* db, statement_context* ctx) : _db(db), _ctx(ctx) {}
    outcome<const pg_snapshot*> snapshot();
    // Changes with every statement: the catalog's tables keep their rows while it stays.
    uint64_t generation() const { return _ctx ? _ctx->statement_serial() : 0; }
    // The session's user and database name, as current_user and current_database()
    // answer.
    std::string user() const;
    std::string database() const { return "sluice"; }

  private:
    sqlite3* _db;
    statement_context* _ctx;
    uint64_t _serial = UINT64_MAX;
    pg_snapshot _snap;
};

// OIDs: PostgreSQL's fixed ones for pg_catalog (11) and the default schema (2200,
// public's), a hash of the name for the others, at or above 16384 (PostgreSQL's first
// user OID) and below 2^31, so that every driver reads them as int4 as well as oid.
int64_t pg_namespace_oid(const std::string& schema);
int64_t pg_relation_oid(const std::string& schema, const std::string& name);

// Attaches pg_catalog and information_schema to `db` and fills them. Once per
// connection, after the engine's own schemas; `reader` must outlive `db`.
outcome<bool> install_pg_catalog(sqlite3* db, pg_catalog_reader* reader);
// The catalog's SQL functions (pg_table_is_visible, format_type, current_schema(), ...).
outcome<bool> register_pg_functions(sqlite3* db, pg_catalog_reader* reader);

}  // namespace sluice::sql

#include "sql/pg_type_table.h"

#include <string>

#include "sql/sql_text.h"

namespace sluice::sql {

namespace {

// OIDs, names and sizes as in PostgreSQL's pg_type.dat.
const std::vector<pg_type_info> types = {
    {16, "bool", "boolean", 1, "B", 1000},
    {17, "bytea", "bytea", -1, "U", 1001},
    {18, "char", "\"char\"", 1, "Z", 1002},
    {19, "name", "name", 64, "S", 1003},
    {20, "int8", "bigint", 8, "N", 1016},
    {21, "int2", "smallint", 2, "N", 1005},
    {22, "int2vector", "int2vector", -1, "A", 1006},
    {23, "int4", "integer", 4, "N", 1007},
    {24, "regproc", "regproc", 4, "N", 1008},
    {25, "text", "text", -1, "S", 1009},
    {26, "oid", "oid", 4, "N", 1028},
    {114, "json", "json", -1, "U", 199},
    {700, "float4", "real", 4, "N", 1021},
    {701, "float8", "double precision", 8, "N", 1022},
    {705, "unknown", "unknown", -2, "X", 0},
    {1000, "_bool", "boolean[]", -1, "A", 0},
    {1001, "_bytea", "bytea[]", -1, "A", 0},
    {1005, "_int2", "smallint[]", -1, "A", 0},
    {1007, "_int4", "integer[]", -1, "A", 0},
    {1009, "_text", "text[]", -1, "A", 0},
    {1016, "_int8", "bigint[]", -1, "A", 0},
    {1021, "_float4", "real[]", -1, "A", 0},
    {1022, "_float8", "double precision[]", -1, "A", 0},
    {1015, "_varchar", "character varying[]", -1, "A", 0},
    {1028, "_oid", "oid[]", -1, "A", 0},
    {1042, "bpchar", "character", -1, "S", 1014},
    {1043, "varchar", "character varying", -1, "S", 1015},
    {1082, "date", "date", 4, "D", 1182},
    {1083, "time", "time without time zone", 8, "D", 1183},
    {1114, "timestamp", "timestamp without time zone", 8, "D", 1115},
    {1184, "timestamptz", "timestamp with time zone", 8, "D", 1185},
    {1186, "interval", "interval", 16, "T", 1187},
    {1266, "timetz", "time with time zone", 12, "D", 1270},
    {1700, "numeric", "numeric", -1, "N", 1231},
    {2205, "regclass", "regclass", 4, "N", 2210},
    {2206, "regtype", "regtype", 4, "N", 2211},
    {2950, "uuid", "uuid", 16, "U", 2951},
    {3802, "jsonb", "jsonb", -1, "U", 3807},
};

}  // namespace

const std::vector<pg_type_info>& pg_types() {
    return types;
}

int64_t pg_oid_for_decl(std::string_view decl) {
    const auto u = to_upper(decl);
    auto has = [&](const char* s) { return u.find(s) != std::string::npos; };
    if (u == "TIMESTAMPTZ" || u == "TIMESTAMP WITH TIME ZONE") return 1184;
    if (u == "JSON" || u == "JSONB") return 114;
    // smallint[] by its catalog name (pg_constraint.conkey), held as its text form {1,2}.
    if (u == "_INT2") return 1005;
    // numeric, with its precision and scale or without: NUMERIC(10,2), NUMERIC.
    if (u.starts_with("NUMERIC")) return 1700;
    if (u == "INT2") return 21;
    if (u == "INT4") return 23;
    if (has("INT")) return 20;
    if (has("CHAR") || has("CLOB") || has("TEXT")) return 25;
    if (has("BLOB") || u == "BYTEA") return 17;
    if (has("REAL") || has("FLOA") || has("DOUB")) return 701;
    if (has("BOOL")) return 16;
    return 0;
}

}  // namespace sluice::sql

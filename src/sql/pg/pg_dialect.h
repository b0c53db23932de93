#pragma once

// The PostgreSQL spellings analysts type that SQLite lacks, rewritten into SQLite SQL
// before the engine prepares a statement (docs/sql-pg.md, "PostgreSQL spellings"):
// `x::type` casts, `extract(f FROM x)`, `ts +/- interval '...'`, typed literals
// (`timestamp '...'`, `date '...'`), `current_timestamp`, `ILIKE`, `string_agg`,
// `OFFSET` without `LIMIT`, `LIMIT ALL` and `FETCH FIRST n ROWS ONLY`. The functions the
// rewritten text calls (now(), date_trunc(), pg_cast_bool(), ...) are the engine's
// (sql/dialect_functions.h).
//
// Only tokens are rewritten: string literals, quoted identifiers and comments are
// copied as they are, so a '::' or 'ILIKE' inside them never changes. A cast to a type
// not listed (regclass, int[], ...) is left for the engine, which then names it.

#include <optional>
#include <string>
#include <string_view>

namespace sluice::sql::pg {

// The SQLite text of one statement (no ';' inside, except in quotes), or nullopt when
// it holds nothing to rewrite.
std::optional<std::string> translate_statement(std::string_view sql);

}  // namespace sluice::sql::pg

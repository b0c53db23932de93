#pragma once

// PostgreSQL's functions that analysts call, added to SQLite for every session, and the
// helpers the PostgreSQL front end's rewriting calls (sql/pg/pg_dialect.h); the table
// is in docs/sql-pg.md. Timestamps are text in the engine's form (sql/time_text.h).
//
//   now()                          the current time (transaction_timestamp() too)
//   to_timestamp(seconds)          seconds since the epoch (fractions kept)
//   date_trunc(unit, ts)           microseconds .. millennium; week starts on Monday
//   date_part(field, ts)           and pg_extract(field, ts) for extract(field FROM ts)
//   pg_add_interval(ts, text, sign) ts + interval 'text' (sign 1) or - (sign -1)
//   pg_cast_bool/bytea/timestamptz/date/json(x)   the '::' casts without a SQLite CAST
//   convert_from(bytes, 'UTF8')    a key or value as text (an error when not UTF-8)

#include <sqlite3.h>

#include "sql/engine.h"

namespace sluice::sql {

outcome<bool> register_dialect_functions(sqlite3* db);

}  // namespace sluice::sql

#pragma once

// CREATE SCHEMA [IF NOT EXISTS] name and DROP SCHEMA [IF EXISTS] name [CASCADE |
// RESTRICT]: PostgreSQL's statements for users' schemas, which SQLite lacks (there a
// schema is an attached database; see schemas.h). The engine reads these two itself.

#include <memory>
#include <optional>
#include <string_view>

#include "sql/engine.h"

namespace sluice::sql {

class sqlite_session;

// nullopt when `sql` does not start with CREATE SCHEMA or DROP SCHEMA; otherwise the
// statement that runs it (on its first step), or why it cannot be parsed. `tail`
// receives the text after the statement's ';'.
std::optional<outcome<std::unique_ptr<statement>>> parse_schema_command(sqlite_session& s,
                                                                        std::string_view sql,
                                                                        std::string_view* tail);

}  // namespace sluice::sql

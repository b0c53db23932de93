#pragma once

// Names of users' own schemas (CREATE SCHEMA; docs/sql.md): what the engine accepts, and
// what the one-time copy of an older data directory's schema files keeps
// (sql/duck_migration).

#include <string>

namespace sluice::sql {

// Why a name cannot be a user schema (empty when it can): letters, digits and '_', not
// starting with a digit, at most 63 characters, and not one of the engine's own schemas
// (main, temp, kafka_topics, system, pg_catalog, information_schema).
std::string check_schema_name(const std::string& name);

}  // namespace sluice::sql

#pragma once

// Parameters whose type DuckDB cannot infer when it prepares a statement (`i < ? +
// 9000000000`: `+` has several overloads). DuckDB then leaves the statement's result open
// (one placeholder column) and binds it again with each run's values; a PostgreSQL client
// must be told the result's columns before it sends values (Describe of the statement) or
// before the first row (Describe of the portal). So the result is found as PostgreSQL finds
// it: with each parameter of the type the client declared (Parse), else of the type DuckDB
// infers from the statement, else text (PostgreSQL's choice for an unknown literal); the
// values a run binds are then converted to those types, so that DuckDB's binding with them
// answers the columns announced. Internal to src/sql/duck.

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "duckdb.hpp"
#include "sql/engine.h"

namespace sluice::sql::duck {

struct typed_parameters {
    bool returns_rows = false;
    duckdb::vector<std::string> names;          // the result's columns
    duckdb::vector<duckdb::LogicalType> types;  // and their types
    std::vector<duckdb::LogicalType> params;    // one per parameter: its values' type
};

// Whether DuckDB left a prepared statement's result open (a parameter it could not type).
bool result_open(duckdb::PreparedStatement& p);

// The result of `s` (the statement as prepared, with `n_params` parameters $1..$n) and its
// parameters' types, found by preparing a copy whose typed parameters are typed NULLs;
// nullopt when DuckDB cannot bind it even so (the statement keeps DuckDB's own binding at
// each run).
std::optional<typed_parameters> type_parameters(duckdb::Connection& con,
                                                const duckdb::SQLStatement& s, size_t n_params,
                                                std::span<const param_type> declared);

}  // namespace sluice::sql::duck

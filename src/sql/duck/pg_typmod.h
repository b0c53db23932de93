#pragma once

// Which result columns carry their type's modifier (numeric(10,2)'s precision and scale)
// as PostgreSQL's RowDescription does (docs/sql-pg.md, "Types"). PostgreSQL gives it to a
// column read from a table and to a cast to a type written with one (`::numeric(10,2)`),
// not to a computed value (`1.5`, `x * 2`, `sum(x)`, `::numeric`), whose modifier is -1;
// DuckDB types every DECIMAL with a width and a scale. Told by the select list of the
// statement's top SELECT; for other statements (UNION, VALUES, RETURNING, ...) every
// column keeps DuckDB's. Internal to src/sql/duck.

#include <cstddef>
#include <vector>

namespace duckdb {
class SQLStatement;
}

namespace sluice::sql::duck {

class typmod_plan {
  public:
    // Read from `s` before DuckDB binds it (binding takes the statement).
    explicit typmod_plan(const duckdb::SQLStatement& s);
    // Whether column `i` of a result of `n` columns keeps its modifier.
    bool keeps(size_t i, size_t n) const;

  private:
    // The select list's entries before its first `*` and after its last, each kept or
    // not; the columns a `*` gives (and those between two) keep theirs.
    std::vector<bool> _front, _back;
    bool _star = false;
};

}  // namespace sluice::sql::duck

#pragma once

// Which result columns of a SELECT are boolean expressions (a comparison, IS [NOT]
// NULL, AND/OR/NOT, IN, LIKE, BETWEEN, EXISTS, true/false, a cast to boolean), read from
// the statement's PostgreSQL text. SQLite has no boolean type and gives such a column no
// declared type: the listener announces it as bool (OID 16), so psql prints t/f and
// drivers read True/False, as from PostgreSQL (docs/sql-pg.md).

#include <string_view>
#include <vector>

namespace sluice::sql::pg {

struct select_list_types {
    // One entry per item of the select list, up to (not including) the first `*` or
    // `t.*`, whose columns are not known here.
    std::vector<bool> boolean;
    // Whether every item is in `boolean` (no `*`).
    bool complete = false;
};

// The select list of a SELECT (or WITH ... SELECT) statement; empty for anything else.
select_list_types boolean_columns(std::string_view sql);

// Whether column i of a statement with `count` columns is boolean by `t`: only when
// the list read matches the statement's columns.
bool is_boolean_column(const select_list_types& t, size_t i, size_t count);

}  // namespace sluice::sql::pg

#pragma once

// A correlated `x IN (SELECT col FROM ... WHERE ...)` as `EXISTS`, so that SQLite
// looks the row up instead of building the subquery's whole list again for every
// outer row (docs/sql.md, "Joining a topic with its expansion target"):
//
//   WHERE t."offset" IN (SELECT c._offset FROM cdc.orders c WHERE c._partition = t.partition)
//   WHERE EXISTS (SELECT 1 FROM cdc.orders c WHERE (c._partition = t.partition)
//                 AND c._offset = t."offset")
//
// Only where the two mean the same: `x` is a column, the IN is a condition of a WHERE,
// ON or HAVING joined to the rest by AND or OR (not under NOT, in no CASE, no
// parentheses around it), and the subquery selects one column with FROM and WHERE
// only (no GROUP BY, ORDER BY, LIMIT or compound). There IN's NULL (no match, a NULL
// among the values) and EXISTS' false both reject the row. The subquery must name an
// outer table: an uncorrelated IN builds its list once, and stays as written.

#include <optional>
#include <string>
#include <string_view>

namespace sluice::sql::pg {

// The statement with each such IN rewritten (nested ones too), or nullopt when it has
// none.
std::optional<std::string> rewrite_correlated_in(std::string_view sql);

}  // namespace sluice::sql::pg

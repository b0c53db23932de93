#pragma once

// Results as an aligned text table for a terminal, in the manner of psql:
//
//    id | name
//   ----+-------
//     1 | alice
//   (1 row)
//
// Numbers align right, everything else left; NULL is an empty cell; control characters
// show as escapes (\n, \t, \x01) so that every row stays one line; a BLOB that is not
// UTF-8 shows as \x followed by hex digits. Widths count code points.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sql/engine.h"

namespace sluice::sql::http {

// The text of one cell.
std::string table_cell(const value& v);
// Width of UTF-8 text in code points.
size_t display_width(std::string_view s);
// The table with its "(N rows)" footer, each line ending in '\n'.
std::string render_table(const std::vector<column>& cols,
                         const std::vector<std::vector<value>>& rows);
// What a statement without rows prints: "INSERT 3" style, as psql's command tags.
std::string render_command(std::string_view command, int64_t changes);

}  // namespace sluice::sql::http

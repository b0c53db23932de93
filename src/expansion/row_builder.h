#pragma once

// Turns one event's JSON (its value or key) into the expanded cells of a target row,
// with the counters every row carries. See docs/expansions.md for the rules:
// - a declared field absent from its object counts as missing (a JSON null is present
//   and gives NULL); a key the schema does not declare counts as excess, at every level
//   of structs the schema declares;
// - a value whose JSON type the field's type cannot take gives NULL and counts as a
//   type error;
// - bytes that are not a JSON object set the parse-error flag, with every field NULL and
//   the counters 0; so does nothing else;
// - a tombstone (no bytes at all) gives every field NULL, the counters 0 and no flag.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <simdjson.h>

#include "common/types.h"
#include "expansion/schema.h"

namespace sluice::expansion {

struct cell {
    enum class kind : uint8_t { null, integer, real, text, blob };
    kind k = kind::null;
    int64_t i = 0;
    double d = 0;
    std::string_view s;  // text or blob bytes; valid until the next build()
};

struct expanded_row {
    std::vector<cell> fields;  // layout::field_count() of them, in column order
    int64_t missing = 0;
    int64_t excess = 0;
    int64_t type_errors = 0;
    bool parse_error = false;
};

class row_builder {
  public:
    row_builder(const schema& s, const layout& l);
    row_builder(const row_builder&) = delete;
    row_builder& operator=(const row_builder&) = delete;

    // Expands one event; nullopt for a tombstone (or a null key). The result stays
    // valid until the next call.
    const expanded_row& build(std::optional<bytes_view> source);

  private:
    struct node {
        std::string name;
        field_type type = field_type::string;
        int column = -1;  // index into fields; -1: not stored by itself (a flattened struct,
                          // or a field inside a struct kept as JSON text)
        std::vector<node> children;
        uint64_t seen = 0;  // the build() generation that last saw it
    };
    static std::vector<node> make_nodes(const std::vector<field>& fields, bool flatten, bool stored,
                                        int& next_column);
    void walk_object(simdjson::dom::object obj, std::vector<node>& nodes);
    void set_value(node& n, simdjson::dom::element v);
    std::string& scratch(int column) { return _scratch[static_cast<size_t>(column)]; }
    // v as minified JSON text, in the column's own buffer.
    std::string_view minified(int column, simdjson::dom::element v);

    simdjson::dom::parser _parser;
    std::vector<node> _root;
    expanded_row _row;
    std::vector<std::string> _scratch;  // per column: bytes decoded for it (base64)
    std::vector<simdjson::internal::string_builder<>> _json;  // per column: JSON text
    uint64_t _generation = 0;
};

// RFC 3339 date-time ("2024-05-01T12:00:00Z", "...T12:00:00.250+02:00") as ms since
// the epoch; nullopt when `s` is not one.
std::optional<int64_t> parse_rfc3339_ms(std::string_view s);

}  // namespace sluice::expansion

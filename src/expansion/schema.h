#pragma once

// An expansion's schema: the fields it reads from each JSON event, and the columns of
// its target table they become (docs/expansions.md).
//
// Schema file: {"fields": [{"name": "op", "type": "string"}, {"name": "after", "type":
// "struct", "fields": [...]}, ...]}; types int64, float64, string, bool, timestamp_ms,
// binary (base64 in JSON), json (kept as JSON text) and struct.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace sluice::expansion {

enum class field_type : uint8_t {
    int64,
    float64,
    string,
    boolean,
    timestamp_ms,
    binary,
    json,
    structure
};

const char* type_name(field_type t);  // as in the schema file ("bool", "struct", ...)

struct field {
    std::string name;
    field_type type = field_type::string;
    std::vector<field> fields;  // of a struct
};

struct schema {
    std::vector<field> fields;
    // With "key": {"type": "binary" or "string"}, targets get a _key column: the
    // record key as its bytes (BLOB), or as UTF-8 text (TEXT; a key that is not UTF-8
    // gives NULL and counts as a type error). Absent: no _key column.
    std::optional<field_type> key;
};

// Parses and checks a schema file: known types, non-empty names unique within their
// struct, structs with at least one field, at most max_depth levels. Errors
// (invalid_argument) name the field at fault ("after.id: unknown type 'int'").
result<schema> parse_schema(std::string_view json);
// The schema as a schema file, normalised (what the catalog stores).
std::string to_json(const schema& s);

// Where each event lands: the target table's columns in order, which are
//   _partition, _offset, _timestamp_broker,
//   one per expanded field (a struct's leaves named parent__child with flatten; the
//   struct as JSON text without),
//   _missing_fields, _excess_fields, _type_errors, _parse_error, with copy_source
//   _source, and with a key in the schema _key.
struct column {
    std::string name;
    const char* decl_type;  // INTEGER, REAL, TEXT, BOOLEAN, BLOB
    field_type type;        // for the expanded ones; int64 for the bookkeeping ones
};

struct layout_options {
    bool flatten = false;
    bool copy_source = false;
};

class layout {
  public:
    // Errors (invalid_argument): two fields that would make the same column (SQLite
    // compares column names without regard to case), or a field named like a
    // bookkeeping column.
    static result<layout> make(const schema& s, const layout_options& o);

    const std::vector<column>& columns() const { return _columns; }
    // Index of the first expanded column, and how many there are.
    static constexpr size_t first_field = 3;
    size_t field_count() const { return _field_count; }
    // Whether column i is an expanded field (not a bookkeeping column).
    bool expanded(size_t i) const { return i >= first_field && i < first_field + _field_count; }
    // Indexes of the bookkeeping columns after the fields.
    size_t missing_column() const { return first_field + _field_count; }
    size_t excess_column() const { return missing_column() + 1; }
    size_t type_errors_column() const { return missing_column() + 2; }
    size_t parse_error_column() const { return missing_column() + 3; }
    size_t source_column() const { return missing_column() + 4; }  // with copy_source
    bool copy_source() const { return _copy_source; }
    // The _key column (the last one), when the schema asks for it.
    std::optional<field_type> key() const { return _key; }
    size_t key_column() const { return _columns.size() - 1; }
    bool flatten() const { return _flatten; }

  private:
    std::vector<column> _columns;
    size_t _field_count = 0;
    bool _copy_source = false;
    bool _flatten = false;
    std::optional<field_type> _key;
};

// Struct nesting a schema may have.
constexpr int max_depth = 16;

}  // namespace sluice::expansion

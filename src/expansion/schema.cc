#include "expansion/schema.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <set>

#include "sql/json_text.h"
#include "sql/sql_text.h"

namespace sluice::expansion {
namespace {

constexpr std::pair<const char*, field_type> type_names[] = {
    {"int64", field_type::int64},
    {"float64", field_type::float64},
    {"string", field_type::string},
    {"bool", field_type::boolean},
    {"timestamp_ms", field_type::timestamp_ms},
    {"binary", field_type::binary},
    {"json", field_type::json},
    {"struct", field_type::structure}};

// Column names that every target has besides the expanded fields.
constexpr const char* bookkeeping[] = {"_partition",      "_offset",        "_timestamp_broker",
                                       "_missing_fields", "_excess_fields", "_type_errors",
                                       "_parse_error",    "_source",        "_key"};

error bad(const std::string& where, const std::string& what) {
    return {errc::invalid_argument, where.empty() ? what : where + ": " + what};
}

result<std::vector<field>> parse_fields(simdjson::dom::element fields, const std::string& where,
                                        int depth) {
    if (depth > max_depth)
        return bad(where, fmt::format("structs nest deeper than {} levels", max_depth));
    simdjson::dom::array arr;
    if (fields.get_array().get(arr))
        return bad(where, "\"fields\" must be an array of {\"name\", \"type\"} objects");
    std::vector<field> out;
    std::set<std::string> names;
    size_t i = 0;
    for (auto el : arr) {
        std::string at =
            where.empty() ? fmt::format("field {}", i) : fmt::format("{}[{}]", where, i);
        ++i;
        simdjson::dom::object obj;
        if (el.get_object().get(obj))
            return bad(at, "a field must be an object with name and type");
        field f;
        std::string_view name, type;
        simdjson::dom::element sub;
        bool has_sub = false;
        for (auto [key, value] : obj) {
            if (key == "name") {
                if (value.get_string().get(name)) return bad(at, "\"name\" must be a string");
            } else if (key == "type") {
                if (value.get_string().get(type)) return bad(at, "\"type\" must be a string");
            } else if (key == "fields") {
                sub = value;
                has_sub = true;
            } else if (key != "doc" && key != "description") {
                return bad(at,
                           fmt::format("unknown key \"{}\" (known: name, type, fields, doc)", key));
            }
        }
        if (name.empty()) return bad(at, "a field needs a non-empty \"name\"");
        if (!sql::is_valid_utf8(name) || name.find('\0') != std::string_view::npos)
            return bad(at, "a field name must be UTF-8 text without NUL");
        f.name = std::string(name);
        at = where.empty() ? f.name : where + "." + f.name;
        if (!names.insert(f.name).second) return bad(at, "declared twice");
        if (type.empty()) return bad(at, "a field needs a \"type\"");
        auto known = std::find_if(std::begin(type_names), std::end(type_names),
                                  [&](const auto& p) { return type == p.first; });
        if (known == std::end(type_names))
            return bad(at, fmt::format("unknown type '{}' (known: int64, float64, string, bool, "
                                       "timestamp_ms, binary, json, struct)",
                                       type));
        f.type = known->second;
        if (f.type == field_type::structure) {
            if (!has_sub) return bad(at, "a struct needs \"fields\"");
            auto children = parse_fields(sub, at, depth + 1);
            if (!children) return children.err();
            if (children->empty()) return bad(at, "a struct needs at least one field");
            f.fields = std::move(*children);
        } else if (has_sub) {
            return bad(at, fmt::format("only a struct has \"fields\", not a {}", type));
        }
        out.push_back(std::move(f));
    }
    return out;
}

void append_fields(std::string& out, const std::vector<field>& fields) {
    out += '[';
    for (size_t i = 0; i < fields.size(); ++i) {
        if (i) out += ',';
        out += "{\"name\":";
        sql::append_json_string(out, fields[i].name);
        out += ",\"type\":\"";
        out += type_name(fields[i].type);
        out += '"';
        if (fields[i].type == field_type::structure) {
            out += ",\"fields\":";
            append_fields(out, fields[i].fields);
        }
        out += '}';
    }
    out += ']';
}

const char* decl_type(field_type t) {
    switch (t) {
        case field_type::int64:
        case field_type::timestamp_ms:
            return "INTEGER";
        case field_type::float64:
            return "REAL";
        case field_type::boolean:
            return "BOOLEAN";
        case field_type::binary:
            return "BLOB";
        case field_type::string:
        case field_type::json:
        case field_type::structure:
            return "TEXT";
    }
    return "TEXT";
}

void add_columns(std::vector<column>& out, const std::vector<field>& fields,
                 const std::string& prefix, bool flatten) {
    for (const auto& f : fields) {
        std::string name = prefix.empty() ? f.name : prefix + "__" + f.name;
        if (flatten && f.type == field_type::structure)
            add_columns(out, f.fields, name, flatten);
        else
            out.push_back({std::move(name), decl_type(f.type), f.type});
    }
}

// "key": {"type": "binary" | "string"}: how the record key becomes the _key column.
result<field_type> parse_key(simdjson::dom::element el) {
    simdjson::dom::object obj;
    if (el.get_object().get(obj))
        return bad("key", "\"key\" must be an object such as {\"type\": \"string\"}");
    std::string_view type;
    for (auto [key, value] : obj) {
        if (key == "type") {
            if (value.get_string().get(type)) return bad("key", "\"type\" must be a string");
        } else if (key != "doc" && key != "description") {
            return bad("key", fmt::format("unknown key \"{}\" (known: type, doc)", key));
        }
    }
    if (type == "binary") return field_type::binary;
    if (type == "string") return field_type::string;
    return bad("key", fmt::format("unknown key type '{}' (known: binary for the key's bytes, "
                                  "string for its UTF-8 text)",
                                  type));
}

}  // namespace

const char* type_name(field_type t) {
    for (const auto& [name, type] : type_names)
        if (type == t) return name;
    return "?";
}

result<schema> parse_schema(std::string_view json) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    if (auto e = parser.parse(json.data(), json.size()).get(doc))
        return bad("", fmt::format("the schema is not valid JSON: {}", simdjson::error_message(e)));
    simdjson::dom::object obj;
    if (doc.get_object().get(obj))
        return bad("", "the schema must be a JSON object with \"fields\"");
    simdjson::dom::element fields;
    bool has = false;
    std::optional<field_type> record_key;
    for (auto [key, value] : obj) {
        if (key == "fields") {
            fields = value;
            has = true;
        } else if (key == "key") {
            auto k = parse_key(value);
            if (!k) return k.err();
            record_key = *k;
        } else if (key != "doc" && key != "description" && key != "name" && key != "type") {
            return bad("", fmt::format("unknown key \"{}\" at the top of the schema", key));
        }
    }
    if (!has) return bad("", "the schema needs \"fields\"");
    auto parsed = parse_fields(fields, "", 1);
    if (!parsed) return parsed.err();
    if (parsed->empty()) return bad("", "the schema needs at least one field");
    return schema{std::move(*parsed), record_key};
}

std::string to_json(const schema& s) {
    std::string out = "{\"fields\":";
    append_fields(out, s.fields);
    if (s.key) out += fmt::format(",\"key\":{{\"type\":\"{}\"}}", type_name(*s.key));
    out += '}';
    return out;
}

result<layout> layout::make(const schema& s, const layout_options& o) {
    layout l;
    l._flatten = o.flatten;
    l._copy_source = o.copy_source;
    l._columns = {{"_partition", "INTEGER", field_type::int64},
                  {"_offset", "INTEGER", field_type::int64},
                  {"_timestamp_broker", "INTEGER", field_type::int64}};
    add_columns(l._columns, s.fields, "", o.flatten);
    l._field_count = l._columns.size() - first_field;
    for (const char* name : {"_missing_fields", "_excess_fields", "_type_errors", "_parse_error"})
        l._columns.push_back({name, "INTEGER", field_type::int64});
    if (o.copy_source) l._columns.push_back({"_source", "TEXT", field_type::string});
    l._key = s.key;
    if (s.key) l._columns.push_back({"_key", decl_type(*s.key), *s.key});
    std::set<std::string> seen;
    for (size_t i = 0; i < l._columns.size(); ++i) {
        const auto& c = l._columns[i];
        if (l.expanded(i)) {
            const auto low = sql::to_lower(c.name);
            for (const char* b : bookkeeping)
                if (low == b)
                    return bad(c.name, "this name is reserved for a column every target has");
        }
        if (!seen.insert(sql::to_lower(c.name)).second)
            return bad(c.name, o.flatten ? "two fields make this column (with --flatten, a "
                                           "struct's fields are named parent__child; SQLite "
                                           "ignores case in column names)"
                                         : "two fields make this column (SQLite ignores case "
                                           "in column names)");
    }
    return l;
}

}  // namespace sluice::expansion

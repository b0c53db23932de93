// Schema files and the layout of target tables.

#include <gtest/gtest.h>

#include "expansion/schema.h"

namespace sluice::expansion {
namespace {

std::vector<std::string> names(const layout& l) {
    std::vector<std::string> out;
    for (const auto& c : l.columns()) out.push_back(c.name);
    return out;
}

std::string error_of(std::string_view json) {
    auto s = parse_schema(json);
    EXPECT_FALSE(s) << json;
    return s ? "" : s.err().message;
}

constexpr const char* debezium = R"({"fields": [
    {"name": "before", "type": "struct", "fields": [{"name": "id", "type": "int64"},
                                                    {"name": "name", "type": "string"}]},
    {"name": "after", "type": "struct", "fields": [{"name": "id", "type": "int64"},
                                                   {"name": "name", "type": "string"}]},
    {"name": "op", "type": "string"},
    {"name": "ts_ms", "type": "timestamp_ms"}]})";

TEST(schema, parses_every_type_and_nesting) {
    auto s = parse_schema(R"({"fields": [
        {"name": "a", "type": "int64"}, {"name": "b", "type": "float64"},
        {"name": "c", "type": "string"}, {"name": "d", "type": "bool"},
        {"name": "e", "type": "timestamp_ms"}, {"name": "f", "type": "binary"},
        {"name": "g", "type": "json", "doc": "anything"},
        {"name": "h", "type": "struct", "fields": [{"name": "i", "type": "struct",
            "fields": [{"name": "j", "type": "int64"}]}]}]})");
    ASSERT_TRUE(s) << s.err().message;
    ASSERT_EQ(s->fields.size(), 8u);
    EXPECT_EQ(s->fields[3].type, field_type::boolean);
    EXPECT_EQ(s->fields[7].fields[0].fields[0].name, "j");
    // The normalised form parses to the same schema.
    auto again = parse_schema(to_json(*s));
    ASSERT_TRUE(again);
    EXPECT_EQ(to_json(*again), to_json(*s));
    EXPECT_EQ(to_json(*s).find("doc"), std::string::npos);
}

TEST(schema, errors_name_the_field_at_fault) {
    EXPECT_EQ(error_of(R"({"fields": [{"name": "a", "type": "int"}]})"),
              "a: unknown type 'int' (known: int64, float64, string, bool, timestamp_ms, binary, "
              "json, struct)");
    EXPECT_EQ(error_of(R"({"fields": [{"name": "after", "type": "struct", "fields": [
                  {"name": "id", "type": "int64"}, {"name": "id", "type": "string"}]}]})"),
              "after.id: declared twice");
    EXPECT_EQ(error_of(R"({"fields": [{"name": "s", "type": "struct"}]})"),
              "s: a struct needs \"fields\"");
    EXPECT_EQ(error_of(R"({"fields": [{"name": "s", "type": "struct", "fields": []}]})"),
              "s: a struct needs at least one field");
    EXPECT_EQ(error_of(R"({"fields": [{"name": "x", "type": "int64", "fields": []}]})"),
              "x: only a struct has \"fields\", not a int64");
    EXPECT_EQ(error_of(R"({"fields": [{"type": "int64"}]})"),
              "field 0: a field needs a non-empty \"name\"");
    EXPECT_EQ(error_of(R"({"fields": []})"), "the schema needs at least one field");
    EXPECT_EQ(error_of(R"({"fields": [{"name": "a", "type": "int64", "nullable": true}]})"),
              "field 0: unknown key \"nullable\" (known: name, type, fields, doc)");
    EXPECT_NE(error_of("{\"fields\": [").find("not valid JSON"), std::string::npos);
    EXPECT_EQ(error_of("[]"), "the schema must be a JSON object with \"fields\"");
    std::string deep = R"({"name": "leaf", "type": "int64"})";
    for (int i = 0; i < max_depth; ++i)
        deep = R"({"name": "s", "type": "struct", "fields": [)" + deep + "]}";
    EXPECT_NE(error_of(R"({"fields": [)" + deep + "]}").find("nest deeper than"),
              std::string::npos);
}

TEST(schema, layout_with_and_without_flatten) {
    auto s = parse_schema(debezium);
    ASSERT_TRUE(s);
    auto flat = layout::make(*s, {.flatten = true, .copy_source = true});
    ASSERT_TRUE(flat) << flat.err().message;
    EXPECT_EQ(names(*flat),
              (std::vector<std::string>{"_partition", "_offset", "_timestamp_broker", "before__id",
                                        "before__name", "after__id", "after__name", "op", "ts_ms",
                                        "_missing_fields", "_excess_fields", "_type_errors",
                                        "_parse_error", "_source"}));
    EXPECT_EQ(flat->field_count(), 6u);
    EXPECT_EQ(flat->columns()[flat->parse_error_column()].name, "_parse_error");
    EXPECT_EQ(flat->columns()[flat->source_column()].name, "_source");
    EXPECT_STREQ(flat->columns()[3].decl_type, "INTEGER");

    auto whole = layout::make(*s, {});
    ASSERT_TRUE(whole);
    EXPECT_EQ(names(*whole),
              (std::vector<std::string>{"_partition", "_offset", "_timestamp_broker", "before",
                                        "after", "op", "ts_ms", "_missing_fields", "_excess_fields",
                                        "_type_errors", "_parse_error"}));
    EXPECT_STREQ(whole->columns()[3].decl_type, "TEXT");
}

TEST(schema, layout_refuses_columns_that_collide) {
    auto s = parse_schema(R"({"fields": [{"name": "a__b", "type": "int64"},
        {"name": "a", "type": "struct", "fields": [{"name": "b", "type": "string"}]}]})");
    ASSERT_TRUE(s);
    EXPECT_TRUE(layout::make(*s, {}));  // without flatten: columns a__b and a
    auto flat = layout::make(*s, {.flatten = true});
    ASSERT_FALSE(flat);
    EXPECT_EQ(flat.err().message.rfind("a__b: two fields make this column", 0), 0u)
        << flat.err().message;

    auto cased = parse_schema(R"({"fields": [{"name": "Id", "type": "int64"},
                                             {"name": "id", "type": "int64"}]})");
    ASSERT_TRUE(cased);
    EXPECT_FALSE(layout::make(*cased, {}));

    auto reserved = parse_schema(R"({"fields": [{"name": "_Offset", "type": "int64"}]})");
    ASSERT_TRUE(reserved);
    auto r = layout::make(*reserved, {});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().message, "_Offset: this name is reserved for a column every target has");
}

}  // namespace
}  // namespace sluice::expansion

namespace sluice::expansion {
namespace {

TEST(schema, a_key_in_the_schema_adds_the_key_column_last) {
    auto s = parse_schema(R"({"fields": [{"name": "n", "type": "int64"}],
                              "key": {"type": "string", "doc": "the user id"}})");
    ASSERT_TRUE(s) << s.err().message;
    ASSERT_TRUE(s->key);
    EXPECT_EQ(*s->key, field_type::string);
    // Stored normalised, and read back the same.
    auto again = parse_schema(to_json(*s));
    ASSERT_TRUE(again) << to_json(*s);
    EXPECT_EQ(again->key, s->key);
    auto l = layout::make(*s, {.flatten = false, .copy_source = true});
    ASSERT_TRUE(l) << l.err().message;
    EXPECT_EQ(names(*l).back(), "_key");
    EXPECT_STREQ(l->columns()[l->key_column()].decl_type, "TEXT");
    EXPECT_EQ(l->columns()[l->source_column()].name, "_source");
    auto b = parse_schema(R"({"fields": [{"name": "n", "type": "int64"}], "key": {"type": "binary"}})");
    ASSERT_TRUE(b);
    auto lb = layout::make(*b, {});
    ASSERT_TRUE(lb);
    EXPECT_STREQ(lb->columns().back().decl_type, "BLOB");
    // Without a key: no column, and the stored schema says nothing of one.
    auto plain = parse_schema(R"({"fields": [{"name": "n", "type": "int64"}]})");
    ASSERT_TRUE(plain);
    EXPECT_FALSE(plain->key);
    EXPECT_EQ(to_json(*plain).find("key"), std::string::npos);
    EXPECT_NE(error_of(R"({"fields": [{"name": "n", "type": "int64"}], "key": {"type": "int64"}})")
                  .find("unknown key type 'int64'"),
              std::string::npos);
    EXPECT_NE(error_of(R"({"fields": [{"name": "n", "type": "int64"}], "key": "string"})").find("key"),
              std::string::npos);
    auto clash = parse_schema(R"({"fields": [{"name": "_key", "type": "string"}]})");
    ASSERT_TRUE(clash);
    EXPECT_FALSE(layout::make(*clash, {}));
}

}  // namespace
}  // namespace sluice::expansion

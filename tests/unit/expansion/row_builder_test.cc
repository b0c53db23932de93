// JSON events into cells, with the counters of missing and excess fields, type errors
// and the parse-error flag.

#include <gtest/gtest.h>

#include "expansion/row_builder.h"

namespace sluice::expansion {
namespace {

struct built {
    std::vector<std::string> cells;  // rendered: NULL, i:N, r:X, t:TEXT, b:BYTES
    int64_t missing, excess, type_errors;
    bool parse_error;
};

struct builder_fixture : ::testing::Test {
    void use(const char* schema_json, bool flatten) {
        auto s = parse_schema(schema_json);
        ASSERT_TRUE(s) << s.err().message;
        sch = std::move(*s);
        auto l = layout::make(sch, {.flatten = flatten});
        ASSERT_TRUE(l) << l.err().message;
        lay = std::move(*l);
        rows = std::make_unique<row_builder>(sch, *lay);
    }
    built build(std::optional<std::string> json) {
        std::optional<bytes_view> src;
        if (json) src = bytes_view(reinterpret_cast<const uint8_t*>(json->data()), json->size());
        const auto& r = rows->build(src);
        built b{{}, r.missing, r.excess, r.type_errors, r.parse_error};
        for (const auto& c : r.fields) {
            switch (c.k) {
                case cell::kind::null:
                    b.cells.push_back("NULL");
                    break;
                case cell::kind::integer:
                    b.cells.push_back("i:" + std::to_string(c.i));
                    break;
                case cell::kind::real:
                    b.cells.push_back("r:" + std::to_string(c.d));
                    break;
                case cell::kind::text:
                    b.cells.push_back("t:" + std::string(c.s));
                    break;
                case cell::kind::blob:
                    b.cells.push_back("b:" + std::string(c.s));
                    break;
            }
        }
        return b;
    }
    schema sch;
    std::optional<layout> lay;
    std::unique_ptr<row_builder> rows;
};

using cells = std::vector<std::string>;

constexpr const char* every_type = R"({"fields": [
    {"name": "i", "type": "int64"}, {"name": "f", "type": "float64"},
    {"name": "s", "type": "string"}, {"name": "b", "type": "bool"},
    {"name": "t", "type": "timestamp_ms"}, {"name": "bin", "type": "binary"},
    {"name": "j", "type": "json"}]})";

TEST_F(builder_fixture, every_type) {
    use(every_type, false);
    auto r = build(R"({"i": -42, "f": 2.5, "s": "h\u00e9", "b": true, "t": 1700000000123,
                      "bin": "AAEC/w==", "j": {"k": [1, 2, {"x": null}]}})");
    EXPECT_EQ(r.cells,
              (cells{"i:-42", "r:2.500000", "t:h\xc3\xa9", "i:1", "i:1700000000123",
                     std::string("b:\x00\x01\x02\xff", 6), "t:{\"k\":[1,2,{\"x\":null}]}"}));
    EXPECT_EQ(r.missing, 0);
    EXPECT_EQ(r.excess, 0);
    EXPECT_EQ(r.type_errors, 0);
    EXPECT_FALSE(r.parse_error);
    // Conversions a field's type allows: integral floats to int64, integers to float64,
    // RFC 3339 text to timestamps, false to 0, any JSON to json.
    r = build(R"({"i": 5.0, "f": 7, "b": false, "t": "2024-05-01T12:00:00.250+02:00",
                  "j": "text", "s": ""})");
    EXPECT_EQ(r.cells,
              (cells{"i:5", "r:7.000000", "t:", "i:0", "i:1714557600250", "NULL", "t:\"text\""}));
    EXPECT_EQ(r.missing, 1);  // bin
    EXPECT_EQ(r.type_errors, 0);
}

TEST_F(builder_fixture, values_of_the_wrong_type_are_null_and_counted) {
    use(every_type, false);
    auto r = build(R"({"i": "42", "f": "x", "s": 3, "b": 1, "t": "yesterday", "bin": "@@@",
                      "j": null})");
    EXPECT_EQ(r.cells, (cells{"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"}));
    EXPECT_EQ(r.type_errors, 6);
    EXPECT_EQ(r.missing, 0);  // a JSON null is present
    r = build(R"({"i": 1.5, "t": 18446744073709551615})");
    EXPECT_EQ(r.type_errors, 2);
    EXPECT_EQ(r.missing, 5);
}

constexpr const char* cdc = R"({"fields": [
    {"name": "before", "type": "struct", "fields": [{"name": "id", "type": "int64"},
                                                    {"name": "name", "type": "string"}]},
    {"name": "after", "type": "struct", "fields": [{"name": "id", "type": "int64"},
                                                   {"name": "name", "type": "string"}]},
    {"name": "op", "type": "string"}]})";

TEST_F(builder_fixture, flattened_structs_count_missing_and_excess_at_every_level) {
    use(cdc, true);
    auto r = build(R"({"before": null, "after": {"id": 7, "name": "x", "extra": 1},
                      "op": "c", "source": {"db": "inventory"}, "ts_ms": 1})");
    EXPECT_EQ(r.cells, (cells{"NULL", "NULL", "i:7", "t:x", "t:c"}));
    EXPECT_EQ(r.missing, 0);
    EXPECT_EQ(r.excess, 3);  // after.extra, source, ts_ms
    r = build(R"({"after": {"id": 8}, "op": "u"})");
    EXPECT_EQ(r.cells, (cells{"NULL", "NULL", "i:8", "NULL", "t:u"}));
    EXPECT_EQ(r.missing, 2);  // before (one, however many fields it has), after.name
    r = build(R"({"before": 3, "op": "d"})");
    EXPECT_EQ(r.type_errors, 1);
    EXPECT_EQ(r.missing, 1);  // after
}

TEST_F(builder_fixture, unflattened_structs_are_json_text_and_still_counted) {
    use(cdc, false);
    auto r = build(R"({"before": null, "after": {"name": "x", "id": 7, "z": true}, "op": "c"})");
    EXPECT_EQ(r.cells, (cells{"NULL", "t:{\"name\":\"x\",\"id\":7,\"z\":true}", "t:c"}));
    EXPECT_EQ(r.excess, 1);
    EXPECT_EQ(r.missing, 0);
}

TEST_F(builder_fixture, tombstones_invalid_json_and_non_objects) {
    use(cdc, true);
    auto r = build(std::nullopt);
    EXPECT_EQ(r.cells, (cells(5, "NULL")));
    EXPECT_FALSE(r.parse_error);
    EXPECT_EQ(r.missing + r.excess + r.type_errors, 0);
    for (const char* bad : {"not json", "{\"op\": ", "[1, 2]", "42", "\"op\"", "", "{} {}"}) {
        r = build(std::string(bad));
        EXPECT_TRUE(r.parse_error) << bad;
        EXPECT_EQ(r.cells, (cells(5, "NULL"))) << bad;
        EXPECT_EQ(r.missing + r.excess + r.type_errors, 0) << bad;
    }
    // Invalid UTF-8 inside a string makes the document invalid JSON.
    r = build(std::string("{\"op\": \"\xff\"}"));
    EXPECT_TRUE(r.parse_error);
    // The builder is reusable after a failure.
    r = build(R"({"op": "r", "before": null, "after": null})");
    EXPECT_FALSE(r.parse_error);
    EXPECT_EQ(r.cells, (cells{"NULL", "NULL", "NULL", "NULL", "t:r"}));
}

TEST_F(builder_fixture, a_duplicate_key_counts_once) {
    use(cdc, true);
    auto r = build(R"({"op": "a", "op": "b", "before": null, "after": null})");
    EXPECT_EQ(r.cells[4], "t:a");
    EXPECT_EQ(r.missing, 0);
    EXPECT_EQ(r.excess, 0);
}

TEST(rfc3339, accepts_the_forms_of_the_rfc_and_nothing_else) {
    EXPECT_EQ(parse_rfc3339_ms("1970-01-01T00:00:00Z"), 0);
    EXPECT_EQ(parse_rfc3339_ms("2024-02-29T23:59:59.999Z"), 1709251199999);
    EXPECT_EQ(parse_rfc3339_ms("2024-05-01T12:00:00.25+02:00"), 1714557600250);
    EXPECT_EQ(parse_rfc3339_ms("1969-12-31T23:59:59-00:30"), 1799000);
    EXPECT_EQ(parse_rfc3339_ms("2024-05-01 12:00:00.123456z"), 1714564800123);
    for (const char* bad :
         {"2024-05-01", "2024-13-01T00:00:00Z", "2024-05-01T25:00:00Z", "2024-05-01T12:00:00",
          "2024-05-01T12:00:00.Z", "2024-05-01T12:00:00+0200", "2024-05-01T12:00:00Zjunk", ""})
        EXPECT_FALSE(parse_rfc3339_ms(bad)) << bad;
}

}  // namespace
}  // namespace sluice::expansion

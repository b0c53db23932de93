#include "sql/http/result_format.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sql/http/sql_client.h"
#include "sql/http/table_format.h"
#include "string_reader.h"

namespace sluice::sql::http {
namespace {

using test::reader_of;

bytes to_bytes(std::string_view s) {
    return bytes(s.begin(), s.end());
}

std::string json_of(const value& v) {
    std::string out;
    append_json_value(out, v);
    return out;
}

// One row of every kind of value, and the columns to hold it.
const std::vector<column> every_type_cols = {{"i", "INTEGER"}, {"r", "REAL"},   {"t", "TEXT"},
                                             {"b", "BLOB"},    {"bin", "BLOB"}, {"n", ""}};
std::vector<value> every_type_row() {
    return {int64_t{-42},
            2.5,
            std::string("a \"q\", b\nc é"),
            to_bytes("{\"k\":1}"),
            to_bytes(std::string("\x00\xff\x01", 3)),
            std::monostate{}};
}

TEST(ResultFormat, JsonValues) {
    EXPECT_EQ(json_of(std::monostate{}), "null");
    EXPECT_EQ(json_of(int64_t{-9223372036854775807 - 1}), "-9223372036854775808");
    EXPECT_EQ(json_of(1.0), "1.0");
    EXPECT_EQ(json_of(0.1), "0.1");
    EXPECT_EQ(json_of(-0.0), "-0.0");
    EXPECT_EQ(json_of(1e300), "1e+300");
    EXPECT_EQ(json_of(std::numeric_limits<double>::quiet_NaN()), "null");
    EXPECT_EQ(json_of(-std::numeric_limits<double>::infinity()), "null");
    EXPECT_EQ(json_of(std::string("\"\\/\b\f\n\r\t\x01\x7f")),
              "\"\\\"\\\\/\\b\\f\\n\\r\\t\\u0001\\u007f\"");
    EXPECT_EQ(json_of(std::string("é😀")), "\"é😀\"");
    EXPECT_EQ(json_of(std::string("\xe2\x80\xa8")), "\"\\u2028\"");
    // Ill-formed UTF-8 in TEXT: replaced, the document stays valid.
    EXPECT_EQ(json_of(std::string("a\xff"
                                  "b\xc0\xaf")),
              "\"a\\ufffdb\\ufffd\\ufffd\"");
    EXPECT_EQ(json_of(to_bytes("plain")), "\"plain\"");
    EXPECT_EQ(json_of(to_bytes(std::string("\x00\xff\x01", 3))), "{\"base64\":\"AP8B\"}");
    EXPECT_EQ(json_of(bytes{}), "\"\"");
}

TEST(ResultFormat, Utf8Validation) {
    EXPECT_TRUE(is_valid_utf8("ascii é € 😀"));
    EXPECT_FALSE(is_valid_utf8("\xc0\x80"));          // overlong NUL
    EXPECT_FALSE(is_valid_utf8("\xed\xa0\x80"));      // a surrogate
    EXPECT_FALSE(is_valid_utf8("\xf4\x90\x80\x80"));  // above U+10FFFF
    EXPECT_FALSE(is_valid_utf8("\xe2\x82"));          // truncated
    EXPECT_TRUE(is_valid_utf8(std::string("\0", 1)));
}

TEST(ResultFormat, Base64RoundTrip) {
    for (std::string s : {"", "f", "fo", "foo", "foob", "fooba", "foobar"}) {
        auto enc = base64_encode(s);
        EXPECT_EQ(base64_decode(enc).value_or("?"), s) << enc;
    }
    EXPECT_EQ(base64_encode("foobar"), "Zm9vYmFy");
    EXPECT_EQ(base64_encode("fo"), "Zm8=");
    EXPECT_FALSE(base64_decode("Zm8"));
    EXPECT_FALSE(base64_decode("Z=8="));
    EXPECT_FALSE(base64_decode("Zm!="));
}

TEST(ResultFormat, JsonDocument) {
    std::string out;
    auto w = make_result_writer(result_format::json, out);
    w->begin_rows(every_type_cols);
    w->row(every_type_row());
    w->row({int64_t{1}, std::monostate{}, std::string(""), bytes{}, bytes{}, int64_t{7}});
    w->finish({2, 1.5});
    EXPECT_EQ(out,
              "{\"columns\":[{\"name\":\"i\",\"type\":\"INTEGER\"},{\"name\":\"r\",\"type\":"
              "\"REAL\"},{\"name\":\"t\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
              "{\"name\":\"bin\",\"type\":\"BLOB\"},{\"name\":\"n\",\"type\":null}],\"rows\":[\n"
              "[-42,2.5,\"a \\\"q\\\", b\\nc é\",\"{\\\"k\\\":1}\",{\"base64\":\"AP8B\"},null],\n"
              "[1,null,\"\",\"\",\"\",7]\n],\"row_count\":2,\"elapsed_ms\":1.500}\n");
}

TEST(ResultFormat, JsonTypesExpressionsByFirstRow) {
    std::string out;
    auto w = make_result_writer(result_format::json, out);
    w->begin_rows({{"a", ""}, {"b", ""}});
    w->row({int64_t{1}, std::string("x")});
    w->finish({1, 0});
    EXPECT_NE(out.find("{\"name\":\"a\",\"type\":\"INTEGER\"},{\"name\":\"b\",\"type\":\"TEXT\"}"),
              std::string::npos)
        << out;
    out.clear();
    w = make_result_writer(result_format::json, out);
    w->begin_rows({{"a", ""}});
    w->finish({0, 0});
    EXPECT_EQ(out,
              "{\"columns\":[{\"name\":\"a\",\"type\":null}],\"rows\":[],\"row_count\":0,"
              "\"elapsed_ms\":0.000}\n");
}

TEST(ResultFormat, NoRowsAndMidStreamErrors) {
    std::string out;
    auto w = make_result_writer(result_format::json, out);
    w->no_rows("INSERT", 3);
    w->finish({0, 2});
    EXPECT_EQ(out,
              "{\"columns\":[],\"rows\":[],\"command\":\"INSERT\",\"changes\":3,"
              "\"elapsed_ms\":2.000}\n");

    query_error e{failure::timeout, "too \"slow\""};
    for (auto f : {result_format::json, result_format::csv, result_format::ndjson}) {
        out.clear();
        w = make_result_writer(f, out);
        w->begin_rows({{"x", "INTEGER"}});
        w->row({int64_t{1}});
        size_t before = out.size();
        w->fail(e, {1, 3});
        std::string tail = out.substr(before);
        switch (f) {
            case result_format::json:
                EXPECT_EQ(tail,
                          "\n],\"row_count\":1,\"error\":{\"kind\":\"timeout\",\"sqlstate\":"
                          "\"57014\",\"message\":\"too \\\"slow\\\"\"},\"elapsed_ms\":3.000}\n");
                break;
            case result_format::csv:
                EXPECT_EQ(tail, "#error,timeout,57014,\"too \"\"slow\"\"\"\r\n");
                break;
            case result_format::ndjson:
                EXPECT_EQ(tail,
                          "{\"error\":{\"kind\":\"timeout\",\"sqlstate\":\"57014\","
                          "\"message\":\"too \\\"slow\\\"\"}}\n");
                break;
        }
    }
}

TEST(ResultFormat, Csv) {
    std::string out;
    auto w = make_result_writer(result_format::csv, out);
    w->begin_rows(every_type_cols);
    w->row(every_type_row());
    w->row({int64_t{0}, std::numeric_limits<double>::infinity(), std::string(""), bytes{},
            std::string("\xff"), std::monostate{}});
    w->finish({2, 0});
    EXPECT_EQ(out,
              "i,r,t,b,bin,n\r\n"
              "-42,2.5,\"a \"\"q\"\", b\nc é\",\"{\"\"k\"\":1}\",AP8B,\r\n"
              "0,Infinity,\"\",\"\",\xef\xbf\xbd,\r\n");
    out.clear();
    w = make_result_writer(result_format::csv, out);
    w->no_rows("CREATE", 0);
    EXPECT_EQ(out, "command,changes\r\nCREATE,0\r\n");
}

TEST(ResultFormat, Ndjson) {
    std::string out;
    auto w = make_result_writer(result_format::ndjson, out);
    w->begin_rows(every_type_cols);
    w->row(every_type_row());
    w->finish({1, 0});
    EXPECT_EQ(out,
              "{\"i\":-42,\"r\":2.5,\"t\":\"a \\\"q\\\", b\\nc é\",\"b\":\"{\\\"k\\\":1}\","
              "\"bin\":{\"base64\":\"AP8B\"},\"n\":null}\n");
}

TEST(ResultFormat, FormatNegotiation) {
    EXPECT_EQ(parse_format("CSV"), result_format::csv);
    EXPECT_FALSE(parse_format("xml"));
    EXPECT_EQ(format_from_accept("text/html, text/csv;q=0.9, */*"), result_format::csv);
    EXPECT_EQ(format_from_accept("application/x-ndjson"), result_format::ndjson);
    EXPECT_FALSE(format_from_accept("*/*"));
}

// ---- the command line's side: decoding what the server writes, and rendering it

struct collecting_sink : result_sink {
    std::vector<column> cols;
    std::vector<std::vector<value>> rows;
    std::string command;
    int64_t changes = -1;
    bool finished = false;
    void begin_rows(const std::vector<column>& c) override { cols = c; }
    void row(const std::vector<value>& r) override { rows.push_back(r); }
    void no_rows(std::string_view c, int64_t n) override {
        command = c;
        changes = n;
    }
    void finish(const result_summary&) override { finished = true; }
};

TEST(SqlClient, DecodesEveryTypeFromTheJsonWriter) {
    std::string doc;
    auto w = make_result_writer(result_format::json, doc);
    w->begin_rows(every_type_cols);
    w->row(every_type_row());
    w->finish({1, 0.5});
    auto in = reader_of(doc);
    collecting_sink sink;
    ASSERT_FALSE(decode_json_result(in, sink));
    ASSERT_TRUE(sink.finished);
    ASSERT_EQ(sink.cols.size(), 6u);
    EXPECT_EQ(sink.cols[0].decl_type, "INTEGER");
    EXPECT_EQ(sink.cols[5].decl_type, "");
    ASSERT_EQ(sink.rows.size(), 1u);
    auto r = sink.rows[0];
    EXPECT_EQ(std::get<int64_t>(r[0]), -42);
    EXPECT_EQ(std::get<double>(r[1]), 2.5);
    EXPECT_EQ(std::get<std::string>(r[2]), "a \"q\", b\nc é");
    EXPECT_EQ(std::get<std::string>(r[3]), "{\"k\":1}");  // UTF-8 blobs come back as text
    EXPECT_EQ(std::get<bytes>(r[4]), to_bytes(std::string("\x00\xff\x01", 3)));
    EXPECT_EQ(r[5].index(), 0u);

    // Re-rendered as CSV, the client prints what the server would have.
    std::string direct, via_client;
    auto d = make_result_writer(result_format::csv, direct);
    d->begin_rows(every_type_cols);
    d->row(every_type_row());
    d->finish({});
    writer_sink ws(result_format::csv, via_client);
    auto in2 = reader_of(doc);
    ASSERT_FALSE(decode_json_result(in2, ws));
    EXPECT_EQ(via_client, direct);
}

TEST(SqlClient, DecodesNoRowsAndCarriedErrors) {
    auto in = reader_of(
        "{\"columns\":[],\"rows\":[],\"command\":\"DELETE\",\"changes\":4,"
        "\"elapsed_ms\":0.1}");
    collecting_sink sink;
    ASSERT_FALSE(decode_json_result(in, sink));
    EXPECT_EQ(sink.command, "DELETE");
    EXPECT_EQ(sink.changes, 4);

    auto in2 = reader_of(
        "{\"columns\":[{\"name\":\"x\",\"type\":\"INTEGER\"}],\"rows\":[\n[1],\n"
        "[2]\n],\"row_count\":2,\"error\":{\"kind\":\"row_limit\",\"sqlstate\":"
        "\"54000\",\"message\":\"m\"},\"elapsed_ms\":1}");
    collecting_sink s2;
    auto e = decode_json_result(in2, s2);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->where, client_error::origin::server);
    EXPECT_EQ(e->sqlstate, "54000");
    EXPECT_EQ(s2.rows.size(), 2u);
    EXPECT_FALSE(s2.finished);

    auto in3 = reader_of("{\"columns\":[],\"rows\":[[1,");
    collecting_sink s3;
    auto e3 = decode_json_result(in3, s3);
    ASSERT_TRUE(e3);
    EXPECT_EQ(e3->where, client_error::origin::transport);
}

TEST(SqlClient, DecodesEscapes) {
    auto in = reader_of(
        "{\"columns\":[{\"name\":\"t\",\"type\":\"TEXT\"}],\"rows\":[[\"\\u00e9"
        "\\ud83d\\ude00\\n\\/\"]],\"row_count\":1,\"elapsed_ms\":0}");
    collecting_sink sink;
    ASSERT_FALSE(decode_json_result(in, sink));
    EXPECT_EQ(std::get<std::string>(sink.rows.at(0).at(0)), "é😀\n/");
}

TEST(SqlClient, RequestTarget) {
    client_request req;
    req.sql = "SELECT $1";
    req.timeout_ms = 500;
    req.params = {"a b&c"};
    EXPECT_EQ(sql_request_target(req), "/v1/sql?format=json&timeout_ms=500&param=a%20b%26c");
}

TEST(TableFormat, AlignsAndFooters) {
    std::vector<column> cols = {{"id", "INTEGER"}, {"name", "TEXT"}, {"score", "REAL"}};
    std::vector<std::vector<value>> rows = {
        {int64_t{1}, std::string("alice"), 9.5},
        {int64_t{100}, std::string("é\tb"), std::monostate{}},
    };
    EXPECT_EQ(render_table(cols, rows),
              " id  | name  | score\n"
              "-----+-------+-------\n"
              "   1 | alice |   9.5\n"
              " 100 | é\\tb  |\n"
              "(2 rows)\n");
    EXPECT_EQ(render_table({{"x", ""}}, {}), " x\n---\n(0 rows)\n");
    EXPECT_EQ(render_table({{"x", ""}}, {{int64_t{5}}}), " x\n---\n 5\n(1 row)\n");
}

TEST(TableFormat, Cells) {
    EXPECT_EQ(table_cell(std::monostate{}), "");
    EXPECT_EQ(table_cell(std::string("a\nb\x01")), "a\\nb\\x01");
    EXPECT_EQ(table_cell(to_bytes(std::string("\x00\xff", 2))), "\\x00ff");
    EXPECT_EQ(table_cell(to_bytes("text")), "text");
    EXPECT_EQ(table_cell(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(display_width("é😀a"), 3u);
    EXPECT_EQ(render_command("INSERT", 3), "INSERT 3\n");
    EXPECT_EQ(render_command("CREATE", 0), "CREATE\n");
}

}  // namespace
}  // namespace sluice::sql::http

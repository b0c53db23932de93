// The pure parts of the front end: message decoding (with truncated and corrupt
// input), type mapping and formatting, parameter decoding, lexing, durations.

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "pg_test_util.h"
#include "sql/pg/lexer.h"
#include "sql/pg/pg_commands.h"
#include "sql/pg/pg_messages.h"
#include "sql/pg/types.h"

namespace sluice::sql::pg {
namespace {

using test::raw_client;

std::string body_of(const std::string& framed) {
    return framed.substr(5);
}

TEST(pg_messages, startup_packet_with_parameters) {
    std::string body;
    raw_client::put32(body, protocol_3_0);
    body += std::string("user\0alice\0database\0db\0\0", 24);
    auto p = decode_startup(body);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->what, startup_packet::kind::startup);
    ASSERT_EQ(p->params.size(), 2u);
    EXPECT_EQ(p->params[0].first, "user");
    EXPECT_EQ(p->params[0].second, "alice");
    EXPECT_EQ(p->params[1].second, "db");
}

TEST(pg_messages, startup_requests) {
    std::string ssl, cancel, v2;
    raw_client::put32(ssl, ssl_request_code);
    EXPECT_EQ(decode_startup(ssl)->what, startup_packet::kind::ssl_request);
    raw_client::put32(cancel, cancel_request_code);
    raw_client::put32(cancel, 4242);
    raw_client::put32(cancel, 0xdeadbeef);
    auto c = decode_startup(cancel);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->what, startup_packet::kind::cancel);
    EXPECT_EQ(c->cancel_pid, 4242);
    EXPECT_EQ(static_cast<uint32_t>(c->cancel_secret), 0xdeadbeefu);
    raw_client::put32(v2, 2 << 16);
    EXPECT_EQ(decode_startup(v2)->what, startup_packet::kind::unsupported_version);
}

TEST(pg_messages, malformed_startup_is_rejected) {
    std::string no_terminator;
    raw_client::put32(no_terminator, protocol_3_0);
    no_terminator += std::string("user\0alice\0", 11);  // the final NUL is missing
    EXPECT_FALSE(decode_startup(no_terminator));
    std::string short_cancel;
    raw_client::put32(short_cancel, cancel_request_code);
    raw_client::put32(short_cancel, 1);
    EXPECT_FALSE(decode_startup(short_cancel));
    EXPECT_FALSE(decode_startup(std::string("\0\0", 2)));
}

TEST(pg_messages, bind_round_trip_and_truncation) {
    std::string body = body_of(raw_client::bind("p1", "s1", {"42", "abc"}));
    bind_msg m;
    ASSERT_TRUE(decode(body, m));
    EXPECT_EQ(m.portal, "p1");
    EXPECT_EQ(m.statement, "s1");
    ASSERT_EQ(m.params.size(), 2u);
    EXPECT_EQ(*m.params[0], "42");
    EXPECT_EQ(*m.params[1], "abc");
    for (size_t cut = 0; cut < body.size(); ++cut)
        EXPECT_FALSE(decode(body.substr(0, cut), m)) << "truncated at " << cut;
    EXPECT_FALSE(decode(body + "x", m)) << "trailing bytes";
}

TEST(pg_messages, bind_with_null_and_bad_length) {
    std::string b = raw_client::cstr("") + raw_client::cstr("");
    raw_client::put16(b, 0);
    raw_client::put16(b, 1);
    raw_client::put32(b, 0xFFFFFFFF);  // -1: NULL
    raw_client::put16(b, 0);
    bind_msg m;
    ASSERT_TRUE(decode(b, m));
    ASSERT_EQ(m.params.size(), 1u);
    EXPECT_FALSE(m.params[0].has_value());

    std::string bad = raw_client::cstr("") + raw_client::cstr("");
    raw_client::put16(bad, 0);
    raw_client::put16(bad, 1);
    raw_client::put32(bad, 0xFFFFFFFE);  // -2: invalid
    raw_client::put16(bad, 0);
    EXPECT_FALSE(decode(bad, m));
}

TEST(pg_messages, parse_describe_execute) {
    parse_msg p;
    std::string parse_body = body_of(raw_client::parse("s", "select $1"));
    ASSERT_TRUE(decode(parse_body, p));
    EXPECT_EQ(p.name, "s");
    EXPECT_EQ(p.query, "select $1");
    EXPECT_TRUE(p.param_oids.empty());
    describe_msg d;
    std::string describe_body = body_of(raw_client::describe('P', "x"));
    ASSERT_TRUE(decode(describe_body, d));
    EXPECT_EQ(d.what, 'P');
    EXPECT_FALSE(decode(body_of(raw_client::describe('Q', "x")), d));
    execute_msg e;
    ASSERT_TRUE(decode(body_of(raw_client::execute("", 7)), e));
    EXPECT_EQ(e.max_rows, 7);
}

TEST(pg_messages, writer_patches_length) {
    std::string out;
    put_command_complete(out, "SELECT 1");
    ASSERT_EQ(out.size(), 1u + 4 + 9);
    EXPECT_EQ(out[0], 'C');
    EXPECT_EQ(raw_client::be32(out.data() + 1), 13u);
    EXPECT_EQ(out.substr(5), std::string("SELECT 1\0", 9));
    out.clear();
    put_error(out, {"42601", "bad"});
    EXPECT_EQ(raw_client::error_field(out.substr(5), 'C'), "42601");
    EXPECT_EQ(raw_client::error_field(out.substr(5), 'M'), "bad");
    EXPECT_EQ(raw_client::error_field(out.substr(5), 'S'), "ERROR");
}

TEST(pg_types, decl_types) {
    EXPECT_EQ(oid_for_decl_type("INTEGER"), oid::int8);
    EXPECT_EQ(oid_for_decl_type("bigint"), oid::int8);
    EXPECT_EQ(oid_for_decl_type("INT"), oid::int8);
    EXPECT_EQ(oid_for_decl_type("REAL"), oid::float8);
    EXPECT_EQ(oid_for_decl_type("DOUBLE PRECISION"), oid::float8);
    EXPECT_EQ(oid_for_decl_type("FLOAT"), oid::float8);
    EXPECT_EQ(oid_for_decl_type("TEXT"), oid::text);
    EXPECT_EQ(oid_for_decl_type("VARCHAR(20)"), oid::text);
    EXPECT_EQ(oid_for_decl_type("BLOB"), oid::bytea);
    EXPECT_EQ(oid_for_decl_type("BOOLEAN"), oid::boolean);
    EXPECT_FALSE(oid_for_decl_type(""));
    EXPECT_EQ(oid_for_decl_type("NUMERIC"), oid::numeric);
    EXPECT_EQ(oid_for_decl_type("NUMERIC(10,2)"), oid::numeric);
    EXPECT_FALSE(oid_for_decl_type("DATE"));
    // numeric(10,2)'s modifier as PostgreSQL packs it; none without precision and scale.
    EXPECT_EQ(type_modifier_for_decl("NUMERIC(10,2)"), (10 << 16 | 2) + 4);
    EXPECT_EQ(type_modifier_for_decl("NUMERIC(38,0)"), (38 << 16) + 4);
    EXPECT_EQ(type_modifier_for_decl("NUMERIC"), -1);
    EXPECT_EQ(type_modifier_for_decl("INTEGER"), -1);
    EXPECT_EQ(oid_for_value(value(int64_t{1})), oid::int8);
    EXPECT_EQ(oid_for_value(value(1.5)), oid::float8);
    EXPECT_EQ(oid_for_value(value(std::string("x"))), oid::text);
    EXPECT_EQ(oid_for_value(value(bytes{1})), oid::bytea);
    EXPECT_FALSE(oid_for_value(value()));
}

TEST(pg_types, float_text_as_postgres_prints_it) {
    EXPECT_EQ(format_float8(1.5), "1.5");
    EXPECT_EQ(format_float8(0.1), "0.1");
    EXPECT_EQ(format_float8(100.0), "100");
    EXPECT_EQ(format_float8(-2.25), "-2.25");
    EXPECT_EQ(format_float8(1e20), "1e+20");
    EXPECT_EQ(format_float8(std::numeric_limits<double>::quiet_NaN()), "NaN");
    EXPECT_EQ(format_float8(HUGE_VAL), "Infinity");
    EXPECT_EQ(format_float8(-HUGE_VAL), "-Infinity");
}

std::string text_cell(const value& v, uint32_t type_oid) {
    std::string out;
    pg_error err;
    EXPECT_TRUE(append_cell(out, v, type_oid, 0, err));
    auto len = static_cast<int32_t>(raw_client::be32(out.data()));
    return len < 0 ? "<NULL>" : out.substr(4);
}

TEST(pg_types, text_cells_follow_the_announced_type) {
    EXPECT_EQ(text_cell(value(int64_t{-7}), oid::int8), "-7");
    EXPECT_EQ(text_cell(value(), oid::int8), "<NULL>");
    EXPECT_EQ(text_cell(value(bytes{0x00, 0xff}), oid::bytea), "\\x00ff");
    EXPECT_EQ(text_cell(value(std::string("hi")), oid::bytea), "\\x6869");
    // A BLOB in a text column: its bytes when they are UTF-8, hex when not.
    EXPECT_EQ(text_cell(value(bytes{'{', '}'}), oid::text), "{}");
    EXPECT_EQ(text_cell(value(bytes{0xc3, 0x28}), oid::text), "\\xc328");
    EXPECT_EQ(text_cell(value(int64_t{1}), oid::boolean), "t");
    EXPECT_EQ(text_cell(value(int64_t{0}), oid::boolean), "f");
    EXPECT_EQ(text_cell(value(2.5), oid::text), "2.5");
}

TEST(pg_types, binary_cells) {
    std::string out;
    pg_error err;
    ASSERT_TRUE(append_cell(out, value(int64_t{258}), oid::int8, 1, err));
    EXPECT_EQ(out, std::string("\0\0\0\x08\0\0\0\0\0\0\x01\x02", 12));
    out.clear();
    ASSERT_TRUE(append_cell(out, value(1.0), oid::float8, 1, err));
    EXPECT_EQ(out, std::string("\0\0\0\x08\x3f\xf0\0\0\0\0\0\0", 12));
    out.clear();
    ASSERT_TRUE(append_cell(out, value(int64_t{1}), oid::boolean, 1, err));
    EXPECT_EQ(out, std::string("\0\0\0\x01\x01", 5));
    out.clear();
    EXPECT_FALSE(append_cell(out, value(std::string("abc")), oid::int8, 1, err));
    EXPECT_EQ(err.sqlstate, "22P03");
}

TEST(pg_types, int2_arrays_in_binary) {
    std::string out;
    pg_error err;
    // One dimension, no NULLs, int2 elements; the dimension's length and lower bound 1.
    ASSERT_TRUE(append_cell(out, value(std::string("{3,-2}")), oid::int2_array, 1, err));
    EXPECT_EQ(out, std::string("\0\0\0\x20"
                               "\0\0\0\x01\0\0\0\0\0\0\0\x15"
                               "\0\0\0\x02\0\0\0\x01"
                               "\0\0\0\x02\0\x03\0\0\0\x02\xff\xfe",
                               36));
    out.clear();
    // The empty array has no dimensions.
    ASSERT_TRUE(append_cell(out, value(std::string("{}")), oid::int2_array, 1, err));
    EXPECT_EQ(out, std::string("\0\0\0\x0c\0\0\0\0\0\0\0\0\0\0\0\x15", 16));
    out.clear();
    // In text, the array's own text form.
    ASSERT_TRUE(append_cell(out, value(std::string("{1,2}")), oid::int2_array, 0, err));
    EXPECT_EQ(out.substr(4), "{1,2}");
    out.clear();
    for (const char* bad : {"{1,x}", "{70000}", "1,2", "{1,,2}"}) {
        EXPECT_FALSE(append_cell(out, value(std::string(bad)), oid::int2_array, 1, err)) << bad;
        EXPECT_EQ(err.sqlstate, "22P03");
        out.clear();
    }
}

TEST(pg_types, text_params) {
    auto r = decode_param(std::string_view("42"), oid::int4, 0, 1);
    ASSERT_FALSE(r.error);
    EXPECT_EQ(std::get<int64_t>(r.v), 42);
    r = decode_param(std::string_view("4x"), oid::int8, 0, 1);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "22P02");
    r = decode_param(std::string_view("70000"), oid::int2, 0, 1);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "22003");
    r = decode_param(std::string_view("\\x0aff"), oid::bytea, 0, 1);
    EXPECT_EQ(std::get<bytes>(r.v), (bytes{0x0a, 0xff}));
    r = decode_param(std::string_view("a\\\\b\\001"), oid::bytea, 0, 1);
    EXPECT_EQ(std::get<bytes>(r.v), (bytes{'a', '\\', 'b', 1}));
    r = decode_param(std::string_view("true"), oid::boolean, 0, 1);
    EXPECT_EQ(std::get<int64_t>(r.v), 1);
    r = decode_param(std::string_view("12"), oid::unspecified, 0, 1);
    EXPECT_EQ(std::get<std::string>(r.v), "12");
    r = decode_param(std::nullopt, oid::int8, 0, 1);
    EXPECT_TRUE(std::holds_alternative<std::monostate>(r.v));
}

TEST(pg_types, binary_params) {
    auto r = decode_param(std::string_view("\xff\xfe", 2), oid::int2, 1, 1);
    EXPECT_EQ(std::get<int64_t>(r.v), -2);
    r = decode_param(std::string_view("\0\0\0\0\0\0\0\x05", 8), oid::int8, 1, 1);
    EXPECT_EQ(std::get<int64_t>(r.v), 5);
    r = decode_param(std::string_view("\x40\x00\0\0\0\0\0\0", 8), oid::float8, 1, 1);
    EXPECT_EQ(std::get<double>(r.v), 2.0);
    r = decode_param(std::string_view("\0\0\0", 3), oid::int4, 1, 3);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "22P03");
    EXPECT_NE(r.error->message.find("parameter 3"), std::string::npos);
    r = decode_param(std::string_view("\x01\x02", 2), oid::unspecified, 1, 1);
    EXPECT_EQ(std::get<bytes>(r.v), (bytes{1, 2}));
    r = decode_param(std::string_view("x"), 1186 /* interval */, 1, 1);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "0A000");
    r = decode_param(std::string_view("x"), 1082 /* date: 4 bytes */, 1, 1);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "22P03");
    // numeric (JDBC's BigDecimal): 2.75 = digits [2, 7500], weight 0, scale 2.
    r = decode_param(std::string_view("\0\2\0\0\0\0\0\2\0\2\x1d\x4c", 12), oid::numeric, 1, 1);
    ASSERT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(std::get<double>(r.v), 2.75);
    // -12345.6 = digits [1, 2345, 6000], weight 1, negative, scale 1.
    r = decode_param(std::string_view("\0\3\0\1\x40\0\0\1\0\1\x09\x29\x17\x70", 14), oid::numeric, 1, 1);
    ASSERT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(std::get<double>(r.v), -12345.6);
    // 100000 = digits [10], weight 1, scale 0: an integer.
    r = decode_param(std::string_view("\0\1\0\1\0\0\0\0\0\x0a", 10), oid::numeric, 1, 1);
    ASSERT_FALSE(r.error) << r.error->message;
    EXPECT_EQ(std::get<int64_t>(r.v), 100000);
    r = decode_param(std::string_view("\0\1\0\0", 4), oid::numeric, 1, 1);
    ASSERT_TRUE(r.error);
    EXPECT_EQ(r.error->sqlstate, "22P03");
}

// numeric in binary, as PostgreSQL's numeric_send writes it (the vectors the parameter
// decoder reads above).
TEST(pg_types, numeric_binary_as_postgres_sends_it) {
    auto binary = [](std::string_view text) {
        std::string out;
        pg_error err;
        EXPECT_TRUE(append_cell(out, value(std::string(text)), oid::numeric, 1, err)) << text;
        return out;
    };
    using namespace std::string_view_literals;
    // Length, then digit count, weight, sign, display scale, base-10000 digits.
    EXPECT_EQ(binary("2.75"), "\0\0\0\x0c\0\2\0\0\0\0\0\2\0\2\x1d\x4c"sv);
    EXPECT_EQ(binary("-12345.6"), "\0\0\0\x0e\0\3\0\1\x40\0\0\1\0\1\x09\x29\x17\x70"sv);
    EXPECT_EQ(binary("100000"), "\0\0\0\x0a\0\1\0\1\0\0\0\0\0\x0a"sv);
    EXPECT_EQ(binary("0.00"), "\0\0\0\x08\0\0\0\0\0\0\0\2"sv);
    EXPECT_EQ(binary("-0.0500"), "\0\0\0\x0a\0\1\xff\xff\x40\0\0\4\x01\xf4"sv);
    // Exact beyond a double: 18 digits before the point, 4 after.
    EXPECT_EQ(binary("123456789012345678.9012"),
              "\0\0\0\x14\0\6\0\4\0\0\0\4\0\x0c\x0d\x80\x1e\xd2\x04\xd2\x16\x2e\x23\x34"sv);
    std::string out;
    pg_error err;
    EXPECT_FALSE(append_cell(out, value(std::string("abc")), oid::numeric, 1, err));
    EXPECT_EQ(err.sqlstate, "22P03");
    EXPECT_FALSE(append_cell(out, value(std::string("1.")), oid::numeric, 1, err));
    EXPECT_TRUE(out.empty());
}

TEST(pg_lexer, statement_end_respects_quotes_and_comments) {
    std::string_view s = "SET a = 'x;y'; SELECT 1";
    EXPECT_EQ(statement_end(s), 13u);
    std::string_view c = "SELECT 1 -- ; here\n, 2; next";
    EXPECT_EQ(c.substr(statement_end(c)), "; next");
    EXPECT_EQ(statement_end("SELECT \"a;b\""), 12u);
    EXPECT_EQ(skip_separators(" ;; /* c */ ; x"), 14u);
}

TEST(pg_lexer, leading_words_and_with) {
    auto w = leading_words("  create /* c */ temp table t(x)", 4);
    ASSERT_EQ(w.size(), 4u);
    EXPECT_EQ(w[0], "CREATE");
    EXPECT_EQ(w[1], "TEMP");
    EXPECT_EQ(w[2], "TABLE");
    EXPECT_EQ(w[3], "T");
    EXPECT_EQ(verb_after_with("WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x"), "INSERT");
    EXPECT_EQ(verb_after_with("with recursive c(n) as (select 1) select n from c"), "SELECT");
}

TEST(pg_commands, durations) {
    EXPECT_EQ(parse_duration_ms("250"), 250);
    EXPECT_EQ(parse_duration_ms("5s"), 5000);
    EXPECT_EQ(parse_duration_ms("1.5 s"), 1500);
    EXPECT_EQ(parse_duration_ms("2min"), 120000);
    EXPECT_EQ(parse_duration_ms("0"), 0);
    EXPECT_FALSE(parse_duration_ms("-1"));
    EXPECT_FALSE(parse_duration_ms("5 parsecs"));
    EXPECT_FALSE(parse_duration_ms(""));
    EXPECT_EQ(format_duration_ms(30000), "30s");
    EXPECT_EQ(format_duration_ms(1500), "1500ms");
    EXPECT_EQ(format_duration_ms(120000), "2min");
    EXPECT_EQ(format_duration_ms(0), "0");
}

}  // namespace
}  // namespace sluice::sql::pg

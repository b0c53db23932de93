// The PostgreSQL spellings the front end rewrites (sql/pg/pg_dialect.h): the SQLite
// text each becomes, that quotes and comments are never touched, and what the rewritten
// statements answer through libpq (values and the announced types).

#include "pg_test_util.h"
#include "sql/pg/pg_dialect.h"
#include "sql/pg/types.h"
#include "sql/time_text.h"

namespace sluice::sql::pg::test {
namespace {

std::string tr(std::string_view sql) {
    return translate_statement(sql).value_or("<unchanged>");
}

TEST(dialect, casts_to_common_types) {
    EXPECT_EQ(tr("SELECT key::text FROM t"), "SELECT CAST(key AS TEXT) AS \"key\" FROM t");
    EXPECT_EQ(tr("SELECT t.key::text"), "SELECT CAST(t.key AS TEXT) AS \"key\"");
    EXPECT_EQ(tr("SELECT kafka_topics.\"a.b\".key::varchar(20)"),
              "SELECT CAST(kafka_topics.\"a.b\".key AS TEXT) AS \"key\"");
    EXPECT_EQ(tr("SELECT '42'::int + 1"), "SELECT CAST('42' AS INTEGER) + 1");
    EXPECT_EQ(tr("SELECT x::bigint, y::int8, z::smallint"),
              "SELECT CAST(x AS INTEGER) AS \"x\", CAST(y AS INTEGER) AS \"y\", "
              "CAST(z AS INTEGER) AS \"z\"");
    EXPECT_EQ(tr("SELECT x::float8, y::double precision, z::real"),
              "SELECT CAST(x AS REAL) AS \"x\", CAST(y AS REAL) AS \"y\", CAST(z AS REAL) AS \"z\"");
    EXPECT_EQ(tr("SELECT x::numeric(10,2)"), "SELECT CAST(x AS NUMERIC) AS \"x\"");
    EXPECT_EQ(tr("SELECT 't'::bool, x::boolean"), "SELECT pg_cast_bool('t'), pg_cast_bool(x) AS \"x\"");
    EXPECT_EQ(tr("SELECT '2024-05-01'::timestamptz"),
              "SELECT pg_cast_timestamptz('2024-05-01')");
    EXPECT_EQ(tr("SELECT x::timestamp with time zone, y::timestamp without time zone"),
              "SELECT pg_cast_timestamptz(x) AS \"x\", pg_cast_timestamptz(y) AS \"y\"");
    EXPECT_EQ(tr("SELECT x::date"), "SELECT pg_cast_date(x) AS \"x\"");
    EXPECT_EQ(tr("SELECT value::json, value::jsonb"),
              "SELECT pg_cast_json(value) AS \"value\", pg_cast_json(value) AS \"value\"");
    EXPECT_EQ(tr("SELECT '\\x6b31'::bytea"), "SELECT pg_cast_bytea('\\x6b31')");
    EXPECT_EQ(tr("SELECT x::pg_catalog.text"), "SELECT CAST(x AS TEXT) AS \"x\"");
}

TEST(dialect, cast_operands) {
    // Calls, groups, parameters, CASE, chained casts, blob literals.
    EXPECT_EQ(tr("SELECT count(*)::int FROM t"), "SELECT CAST(count(*) AS INTEGER) AS \"count\" FROM t");
    EXPECT_EQ(tr("SELECT (a + b)::text"), "SELECT CAST((a + b) AS TEXT)");
    EXPECT_EQ(tr("SELECT a + b::text"), "SELECT a + CAST(b AS TEXT)");
    EXPECT_EQ(tr("SELECT $1::int"), "SELECT CAST($1 AS INTEGER)");
    EXPECT_EQ(tr("SELECT CASE WHEN a THEN 1 ELSE 0 END::bool"),
              "SELECT pg_cast_bool(CASE WHEN a THEN 1 ELSE 0 END)");
    EXPECT_EQ(tr("SELECT '1'::text::int"), "SELECT CAST(CAST('1' AS TEXT) AS INTEGER)");
    EXPECT_EQ(tr("SELECT x'6b31'::text"), "SELECT CAST(x'6b31' AS TEXT)");
    EXPECT_EQ(tr("SELECT f(a::int, b)::text"), "SELECT CAST(f(CAST(a AS INTEGER), b) AS TEXT) AS \"f\"");
    EXPECT_EQ(tr("SELECT count(*) OVER (PARTITION BY a)::int, count(*) FILTER (WHERE b)::text FROM t"),
              "SELECT CAST(count(*) OVER (PARTITION BY a) AS INTEGER) AS \"count\", "
              "CAST(count(*) FILTER (WHERE b) AS TEXT) AS \"count\" FROM t");
    EXPECT_EQ(tr("SELECT (SELECT max(x) FROM t)::text"),
              "SELECT CAST((SELECT max(x) FROM t) AS TEXT)");
}

TEST(dialect, standard_casts_sqlite_gets_wrong) {
    EXPECT_EQ(tr("SELECT CAST(x AS date), CAST(y AS timestamp with time zone) FROM t"),
              "SELECT pg_cast_date(x), pg_cast_timestamptz(y) FROM t");
    EXPECT_EQ(tr("SELECT CAST((a AT TIME ZONE 'UTC') AS boolean), cast(f(b, c) AS jsonb)"),
              "SELECT pg_cast_bool((a)), pg_cast_json(f(b, c))");
    EXPECT_EQ(tr("SELECT CAST(CAST(x AS text) AS date)"), "SELECT pg_cast_date(CAST(x AS text))");
    // What SQLite's CAST does right stays.
    EXPECT_EQ(tr("SELECT CAST(x AS bigint), CAST(y AS varchar(3)), CAST(z AS double precision)"),
              "<unchanged>");
}

TEST(dialect, cast_column_names) {
    // PostgreSQL names x::type after x; an alias, or a cast outside the select list,
    // gets nothing more.
    EXPECT_EQ(tr("SELECT key::text AS k, value::text v FROM t WHERE key::text = 'a'"),
              "SELECT CAST(key AS TEXT) AS k, CAST(value AS TEXT) v FROM t WHERE CAST(key AS TEXT) = 'a'");
    EXPECT_EQ(tr("SELECT DISTINCT \"Key\"::text, a + b::int FROM t"),
              "SELECT DISTINCT CAST(\"Key\" AS TEXT) AS \"Key\", a + CAST(b AS INTEGER) FROM t");
    EXPECT_EQ(tr("SELECT x::text::int FROM (SELECT k::text FROM t)"),
              "SELECT CAST(CAST(x AS TEXT) AS INTEGER) AS \"x\" FROM (SELECT CAST(k AS TEXT) AS \"k\" FROM t)");
    EXPECT_EQ(tr("SELECT partition, offset, key::text FROM t"),
              "SELECT partition, offset, CAST(key AS TEXT) AS \"key\" FROM t");
    EXPECT_EQ(tr("SELECT f(k::text) FROM t ORDER BY k::text"),
              "SELECT f(CAST(k AS TEXT)) FROM t ORDER BY CAST(k AS TEXT)");
}

TEST(dialect, unknown_casts_and_quotes_are_left_alone) {
    EXPECT_EQ(tr("SELECT 'a::text ILIKE b' AS \"c::int\" FROM t"), "<unchanged>");
    EXPECT_EQ(tr("SELECT \"ILIKE\" FROM \"x::text\" -- a::int ILIKE\n"), "<unchanged>");
    EXPECT_EQ(tr("SELECT 1 /* x::int ILIKE 'a' */"), "<unchanged>");
    EXPECT_EQ(tr("SELECT 'pg_class'::regclass"), "<unchanged>");
    EXPECT_EQ(tr("SELECT x::int[]"), "<unchanged>");
    EXPECT_EQ(tr("SELECT value ->> '$.op', value -> 'a' FROM t LIMIT 5 OFFSET 2"), "<unchanged>");
    EXPECT_EQ(tr("SELECT coalesce(a, 0), nullif(b, '') FROM t"), "<unchanged>");
    // Comments and spacing around what is rewritten stay.
    EXPECT_EQ(tr("SELECT /* k */ key::text -- c\nFROM t"), "SELECT /* k */ CAST(key AS TEXT) -- c\nFROM t");
}

TEST(dialect, large_statements_go_as_written) {
    std::string big = "SELECT x::text FROM t WHERE y IN (";
    while (big.size() < (5u << 20)) big += "1,";
    big += "1)";
    EXPECT_FALSE(translate_statement(big));
}

TEST(dialect, ilike_and_string_agg) {
    EXPECT_EQ(tr("SELECT * FROM t WHERE name ILIKE 'a%' AND x NOT ILIKE '%b'"),
              "SELECT * FROM t WHERE name LIKE 'a%' AND x NOT LIKE '%b'");
    // PostgreSQL's LIKE escapes with a backslash by default (JDBC's metadata patterns).
    EXPECT_EQ(tr("SELECT 1 FROM n WHERE nspname LIKE 'kafka\\_topics' AND x NOT ILIKE 'a\\%%'"),
              "SELECT 1 FROM n WHERE nspname LIKE 'kafka\\_topics' ESCAPE '\\' AND x NOT LIKE 'a\\%%' ESCAPE '\\'");
    EXPECT_EQ(tr("SELECT 1 WHERE a LIKE 'x\\_' ESCAPE '!'"), "<unchanged>");
    // A table named with its database (Trino's connector): the database goes.
    EXPECT_EQ(tr("SELECT count(*) AS \"c\" FROM \"sluice\".\"kafka_topics\".\"jt\" t JOIN db.s.u ON 1"),
              "SELECT count(*) AS \"c\" FROM \"kafka_topics\".\"jt\" t JOIN s.u ON 1");
    EXPECT_EQ(tr("SELECT s.t.c FROM s.t WHERE x = 1.5 AND y = 2.5"), "<unchanged>");
    EXPECT_EQ(tr("SELECT 1 FROM a.b.c.d"), "<unchanged>");
    EXPECT_EQ(tr("SELECT 1 FROM s.f.g(1)"), "<unchanged>");
    EXPECT_EQ(tr("SELECT 1 WHERE a LIKE 'x_'"), "<unchanged>");
    EXPECT_EQ(tr("SELECT string_agg(name, ', ') FROM t"), "SELECT group_concat(name, ', ') AS \"string_agg\" FROM t");
    EXPECT_EQ(tr("SELECT string_agg(k::text, ',') FROM t"),
              "SELECT group_concat(CAST(k AS TEXT), ',') AS \"string_agg\" FROM t");
}

TEST(dialect, times) {
    EXPECT_EQ(tr("SELECT current_timestamp"), "SELECT now()");
    EXPECT_EQ(tr("SELECT CURRENT_TIMESTAMP(3), localtimestamp"), "SELECT now(), now()");
    EXPECT_EQ(tr("CREATE TABLE e (at TEXT DEFAULT CURRENT_TIMESTAMP)"),
              "CREATE TABLE e (at TEXT DEFAULT (now()))");
    EXPECT_EQ(tr("SELECT extract(epoch FROM ts) FROM t"), "SELECT pg_extract('epoch', ts) AS \"extract\" FROM t");
    EXPECT_EQ(tr("SELECT EXTRACT(HOUR FROM now())::int"),
              "SELECT CAST(pg_extract('hour', now()) AS INTEGER) AS \"extract\"");
    EXPECT_EQ(tr("SELECT now() - interval '1 hour'"), "SELECT pg_add_interval(now(), '1 hour', -1)");
    EXPECT_EQ(tr("SELECT ts + INTERVAL '2 days' FROM t"),
              "SELECT pg_add_interval(ts, '2 days', 1) FROM t");
    EXPECT_EQ(tr("SELECT ts + '5 minutes'::interval FROM t"),
              "SELECT pg_add_interval(ts, '5 minutes', 1) FROM t");
    EXPECT_EQ(tr("SELECT * FROM t WHERE ts > now() - interval '1 day'"),
              "SELECT * FROM t WHERE ts > pg_add_interval(now(), '1 day', -1)");
    EXPECT_EQ(tr("SELECT timestamp '2024-05-01 12:00', date '2024-05-01'"),
              "SELECT pg_cast_timestamptz('2024-05-01 12:00'), pg_cast_date('2024-05-01')");
    EXPECT_EQ(tr("SELECT interval '1 day'"), "SELECT ('1 day')");
    EXPECT_EQ(tr("SELECT CAST((created AT TIME ZONE 'UTC') AS date), now() at time zone 'utc'"),
              "SELECT pg_cast_date((created)), now()");
    EXPECT_EQ(tr("SELECT x AT TIME ZONE 'Europe/Paris'"), "<unchanged>");
    // Strings compared with the topic tables' timestamptz columns are timestamps.
    EXPECT_EQ(tr("SELECT 1 FROM t WHERE timestamp_broker_tz BETWEEN '2024-05-01T10:00:00Z' AND "
                 "'2024-05-01T11:00:00Z' AND t.timestamp_producer_tz >= '2024-05-01' AND x = 'a'"),
              "SELECT 1 FROM t WHERE timestamp_broker_tz BETWEEN pg_cast_timestamptz('2024-05-01T10:00:00Z') AND "
              "pg_cast_timestamptz('2024-05-01T11:00:00Z') AND t.timestamp_producer_tz >= "
              "pg_cast_timestamptz('2024-05-01') AND x = 'a'");
    EXPECT_EQ(tr("SELECT 1 FROM t WHERE timestamp_broker = '5' AND other_tz < '2024-05-01'"), "<unchanged>");
    // A column named like a type stays a column.
    EXPECT_EQ(tr("SELECT date, timestamp FROM t"), "<unchanged>");
    EXPECT_EQ(tr("SELECT date('now')"), "<unchanged>");
}

TEST(dialect, limit_offset_fetch) {
    EXPECT_EQ(tr("SELECT * FROM t OFFSET 5"), "SELECT * FROM t LIMIT -1 OFFSET 5");
    EXPECT_EQ(tr("SELECT * FROM t LIMIT ALL OFFSET 5"), "SELECT * FROM t LIMIT -1 OFFSET 5");
    EXPECT_EQ(tr("SELECT * FROM t FETCH FIRST 10 ROWS ONLY"), "SELECT * FROM t LIMIT 10");
    EXPECT_EQ(tr("SELECT * FROM t FETCH NEXT ROW ONLY"), "SELECT * FROM t LIMIT 1");
    EXPECT_EQ(tr("SELECT * FROM t ORDER BY a OFFSET 20 ROWS FETCH NEXT 10 ROWS ONLY"),
              "SELECT * FROM t ORDER BY a LIMIT 10 OFFSET 20");
    EXPECT_EQ(tr("SELECT * FROM (SELECT * FROM t OFFSET 1) FETCH FIRST 2 ROWS ONLY"),
              "SELECT * FROM (SELECT * FROM t LIMIT -1 OFFSET 1) LIMIT 2");
    EXPECT_EQ(tr("SELECT * FROM t OFFSET $1 ROWS"), "SELECT * FROM t LIMIT -1 OFFSET $1");
    // The topic tables' column "offset" is no clause.
    EXPECT_EQ(tr("SELECT partition, offset FROM t WHERE offset >= 3 ORDER BY partition, offset"),
              "<unchanged>");
    EXPECT_EQ(tr("SELECT t.offset, offset + 1 FROM t ORDER BY offset OFFSET 2"),
              "SELECT t.offset, offset + 1 FROM t ORDER BY offset LIMIT -1 OFFSET 2");
}

TEST(dialect, timestamp_and_interval_text) {
    auto t = parse_timestamp("2024-02-29T23:59:59.000001-01:30");
    ASSERT_TRUE(t);
    EXPECT_EQ(format_timestamp(*t), "2024-03-01 01:29:59.000001+00:00");
    EXPECT_EQ(parse_timestamp(format_timestamp(*t)), t);
    EXPECT_EQ(format_timestamp(0), "1970-01-01 00:00:00+00:00");
    EXPECT_FALSE(parse_timestamp("2023-02-29"));
    EXPECT_FALSE(parse_timestamp("2024-05-01 10:00 PST"));
    EXPECT_TRUE(is_timestamp_text("2024-05-01 10:00:00.5+00"));
    EXPECT_FALSE(is_timestamp_text("2024-05-01 10:00:00+02"));
    EXPECT_FALSE(is_timestamp_text("2024-05-01"));
    auto iv = parse_interval("1 year 2 mons 3 days 04:05:06.5");
    ASSERT_TRUE(iv);
    EXPECT_EQ(iv->months, 14);
    EXPECT_EQ(iv->days, 3);
    EXPECT_EQ(iv->us, ((4 * 60 + 5) * 60 + 6) * 1'000'000LL + 500'000);
    EXPECT_EQ(parse_interval("-90 s")->us, -90'000'000);
    EXPECT_EQ(parse_interval("1.5 hours")->us, 5'400'000'000LL);
    // Out of range, or not an interval: refused, never overflowing.
    for (const char* bad : {"1e12 hours", "999999999999 years", "1e17 us 1e17 us 1e17 us 1e17 us",
                            "99999999999:00:00", "soon", "", "5 fortnights"})
        EXPECT_FALSE(parse_interval(bad)) << bad;
    // Month arithmetic clamps the day, as PostgreSQL does.
    EXPECT_EQ(format_timestamp(add_interval(*parse_timestamp("2023-01-31"), {1, 0, 0}, 1)),
              "2023-02-28 00:00:00+00:00");
    EXPECT_EQ(format_timestamp(add_interval(*parse_timestamp("2024-03-31"), {1, 0, 0}, -1)),
              "2024-02-29 00:00:00+00:00");
}

// ---- Through the wire ----

using dialect_wire = pg_fixture;

std::string one(PGconn* c, const std::string& sql, Oid* type = nullptr) {
    auto r = exec(c, sql);
    if (PQresultStatus(r.get()) != PGRES_TUPLES_OK) return "ERROR " + sqlstate_of(r.get()) + ": " + PQresultErrorMessage(r.get());
    if (PQntuples(r.get()) != 1) return "ROWS " + std::to_string(PQntuples(r.get()));
    if (type) *type = PQftype(r.get(), 0);
    return PQgetisnull(r.get(), 0, 0) ? "NULL" : PQgetvalue(r.get(), 0, 0);
}

TEST_F(dialect_wire, values_and_types) {
    auto c = connect();
    Oid type = 0;
    EXPECT_EQ(one(c.get(), "SELECT x'6b31'::text", &type), "k1");
    EXPECT_EQ(type, oid::text);
    EXPECT_EQ(one(c.get(), "SELECT '42'::int + 1", &type), "43");
    EXPECT_EQ(type, oid::int8);
    EXPECT_EQ(one(c.get(), "SELECT '2.5'::float8", &type), "2.5");
    EXPECT_EQ(type, oid::float8);
    // A boolean result column is bool, t/f (sql/pg/boolean_columns.h).
    EXPECT_EQ(one(c.get(), "SELECT 'yes'::bool", &type), "t");
    EXPECT_EQ(type, oid::boolean);
    EXPECT_EQ(one(c.get(), "SELECT CAST('2024-05-01 10:00' AS date)"), "2024-05-01");
    EXPECT_EQ(one(c.get(), "SELECT CAST('t' AS boolean), CAST('7' AS bigint)"), "t");
    EXPECT_EQ(one(c.get(), "SELECT CAST('no' AS boolean) + 0"), "0");
    EXPECT_EQ(one(c.get(), "SELECT '2024-05-01T12:30:00.250+02:00'::timestamptz", &type),
              "2024-05-01 10:30:00.25+00");
    EXPECT_EQ(type, oid::timestamptz);
    EXPECT_EQ(one(c.get(), "SELECT to_timestamp(1714566600.5)", &type), "2024-05-01 12:30:00.5+00");
    EXPECT_EQ(type, oid::timestamptz);
    EXPECT_EQ(one(c.get(), "SELECT date_trunc('hour', timestamp '2024-05-01 12:34:56.789')"),
              "2024-05-01 12:00:00+00");
    EXPECT_EQ(one(c.get(), "SELECT date_trunc('week', '2024-05-01 12:34:56')"),  // a Wednesday
              "2024-04-29 00:00:00+00");
    EXPECT_EQ(one(c.get(), "SELECT date_trunc('month', '2024-05-31 23:59:59')"),
              "2024-05-01 00:00:00+00");
    EXPECT_EQ(one(c.get(), "SELECT extract(year FROM timestamp '2024-05-01 12:34:56')"), "2024");
    EXPECT_EQ(one(c.get(), "SELECT extract(epoch FROM timestamp '1970-01-01 00:01:00.5')"), "60.5");
    EXPECT_EQ(one(c.get(), "SELECT extract(dow FROM date '2024-05-05')"), "0");
    EXPECT_EQ(one(c.get(), "SELECT extract(week FROM date '2024-12-30')"), "1");
    EXPECT_EQ(one(c.get(), "SELECT timestamp '2024-01-31 10:00' + interval '1 month'"),
              "2024-02-29 10:00:00+00");
    EXPECT_EQ(one(c.get(), "SELECT timestamp '2024-05-01 10:00' - interval '1 day 02:30:00'"),
              "2024-04-30 07:30:00+00");
    EXPECT_EQ(one(c.get(), "SELECT date '2024-05-01' + interval '90 minutes'"),
              "2024-05-01 01:30:00+00");
    EXPECT_EQ(one(c.get(), "SELECT now() > timestamp '2024-01-01' AND now() - interval '1 hour' < now()"),
              "t");
    EXPECT_EQ(one(c.get(), "SELECT current_timestamp", &type).substr(0, 2), "20");
    EXPECT_EQ(type, oid::timestamptz);
    EXPECT_EQ(one(c.get(), "SELECT convert_from(x'c582c3b3647a', 'UTF8')"), "łódz");
    EXPECT_EQ(one(c.get(), "SELECT '{\"a\": {\"b\": 2}}'::json -> 'a' ->> 'b'"), "2");
    EXPECT_EQ(one(c.get(), "SELECT '\\x6b31'::bytea", &type), "\\x6b31");
    EXPECT_EQ(type, oid::bytea);
}

TEST_F(dialect_wire, several_statements_with_spellings) {
    auto c = connect();
    auto rs = exec_all(c.get(), "SELECT 'a'::text; SELECT 'b;c' ILIKE 'B;%'; SELECT 3::text");
    ASSERT_EQ(rs.size(), 3u);
    for (auto& r : rs) ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(rs[0].get(), 0, 0), "a");
    EXPECT_STREQ(PQgetvalue(rs[1].get(), 0, 0), "t");
    EXPECT_STREQ(PQgetvalue(rs[2].get(), 0, 0), "3");
    // Extended protocol: a parameter cast, run twice.
    for (const char* v : {"41", "9"}) {
        const char* values[] = {v};
        result_ptr r(PQexecParams(c.get(), "SELECT $1::int + 1 AS n", 1, nullptr, values, nullptr, nullptr, 0));
        ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
        EXPECT_EQ(std::stoi(PQgetvalue(r.get(), 0, 0)), std::stoi(v) + 1);
        EXPECT_STREQ(PQfname(r.get(), 0), "n");
    }
}

TEST_F(dialect_wire, queries) {
    auto c = connect();
    auto r = exec(c.get(),
                  "CREATE TABLE t (id INTEGER, name TEXT, doc JSON, at TIMESTAMPTZ, ok BOOLEAN);"
                  "INSERT INTO t VALUES (1, 'Alpha', '{\"k\":1}', '2024-05-01 10:00:00+00:00', 1),"
                  "(2, 'beta', '{\"k\":2}', '2024-05-01 11:00:00+00:00', 0),"
                  "(3, 'ALPHONSE', NULL, NULL, NULL)");
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(r.get());
    EXPECT_EQ(one(c.get(), "SELECT string_agg(name, '|') FROM (SELECT name FROM t WHERE name ILIKE 'alph%' ORDER BY id)"),
              "Alpha|ALPHONSE");
    EXPECT_EQ(one(c.get(), "SELECT id FROM t ORDER BY id OFFSET 2"), "3");
    EXPECT_EQ(one(c.get(), "SELECT id FROM t ORDER BY id OFFSET 1 ROWS FETCH FIRST 1 ROW ONLY"), "2");
    EXPECT_EQ(one(c.get(), "SELECT coalesce(doc ->> 'k', 'none') FROM t WHERE id = 3"), "none");
    EXPECT_EQ(one(c.get(), "SELECT nullif(name, 'beta') FROM t WHERE id = 2"), "NULL");
    auto typed = exec(c.get(), "SELECT id, doc, at, ok FROM t ORDER BY id LIMIT 1");
    ASSERT_EQ(PQresultStatus(typed.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(typed.get());
    EXPECT_EQ(PQftype(typed.get(), 0), oid::int8);
    EXPECT_EQ(PQftype(typed.get(), 1), oid::json);
    EXPECT_EQ(PQftype(typed.get(), 2), oid::timestamptz);
    EXPECT_EQ(PQftype(typed.get(), 3), oid::boolean);
    EXPECT_STREQ(PQgetvalue(typed.get(), 0, 2), "2024-05-01 10:00:00+00");
    EXPECT_STREQ(PQgetvalue(typed.get(), 0, 3), "t");
    EXPECT_EQ(one(c.get(), "SELECT count(*) FROM t WHERE at > timestamp '2024-05-01 10:30' - interval '1 hour'"),
              "2");
    // Errors name what is wrong.
    auto bad = exec(c.get(), "SELECT date_trunc('hour', 1714566600000)");
    EXPECT_EQ(PQresultStatus(bad.get()), PGRES_FATAL_ERROR);
    EXPECT_NE(std::string(PQresultErrorMessage(bad.get())).find("to_timestamp(ms / 1000.0)"),
              std::string::npos);
    auto bad_utf8 = exec(c.get(), "SELECT convert_from(x'ff', 'UTF8')");
    EXPECT_EQ(PQresultStatus(bad_utf8.get()), PGRES_FATAL_ERROR);
}

// COPY ... TO STDOUT, whole: the CopyData bytes of every message.
std::string copy_out(PGconn* c, const std::string& sql, std::string* status = nullptr) {
    result_ptr r(PQexec(c, sql.c_str()));
    if (PQresultStatus(r.get()) != PGRES_COPY_OUT) return "ERROR " + sqlstate_of(r.get());
    std::string out;
    char* buf = nullptr;
    int n = 0;
    while ((n = PQgetCopyData(c, &buf, 0)) > 0) {
        out.append(buf, static_cast<size_t>(n));
        PQfreemem(buf);
    }
    result_ptr end(PQgetResult(c));
    if (status) *status = PQcmdStatus(end.get());
    while (PGresult* more = PQgetResult(c)) PQclear(more);
    return out;
}

TEST_F(dialect_wire, copy_to_stdout) {
    auto c = connect();
    auto r = exec(c.get(), "CREATE TABLE c (id INTEGER, name TEXT, raw BLOB);"
                           "INSERT INTO c VALUES (1, 'a\tb', x'00ff'), (2, 'say \"hi\", ok', NULL)");
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(r.get());
    std::string status;
    EXPECT_EQ(copy_out(c.get(), "COPY (SELECT id, name, raw FROM c ORDER BY id) TO STDOUT", &status),
              "1\ta\\tb\t\\\\x00ff\n2\tsay \"hi\", ok\t\\N\n");
    EXPECT_EQ(status, "COPY 2");
    EXPECT_EQ(copy_out(c.get(), "COPY c (id, name) TO STDOUT WITH (FORMAT csv, HEADER)"),
              "id,name\n1,a\tb\n2,\"say \"\"hi\"\", ok\"\n");
    std::string bin = copy_out(c.get(), "COPY (SELECT id FROM c WHERE id = 1) TO STDOUT (FORMAT binary)");
    const std::string expected = std::string("PGCOPY\n\377\r\n\0", 11) + std::string(8, '\0') +
                                 std::string("\0\1\0\0\0\x08", 6) + std::string(7, '\0') + "\x01" +
                                 std::string("\xff\xff", 2);
    EXPECT_EQ(bin, expected);
    EXPECT_EQ(copy_out(c.get(), "COPY c FROM STDIN"), "ERROR 0A000");
    EXPECT_EQ(copy_out(c.get(), "COPY c TO '/tmp/x'"), "ERROR 0A000");
}

TEST_F(dialect_wire, binary_timestamptz) {
    auto c = connect();
    const char* sql = "SELECT timestamp '2000-01-01 00:00:01.5'";
    result_ptr r(PQexecParams(c.get(), sql, 0, nullptr, nullptr, nullptr, nullptr, 1));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    ASSERT_EQ(PQgetlength(r.get(), 0, 0), 8);
    const auto* p = reinterpret_cast<const unsigned char*>(PQgetvalue(r.get(), 0, 0));
    int64_t v = 0;
    for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
    EXPECT_EQ(v, 1'500'000);  // microseconds after PostgreSQL's epoch
}

TEST_F(dialect_wire, typed_timestamp_parameters) {
    auto c = connect();
    // Text with an offset, as JDBC sends it, becomes the engine's UTC text.
    Oid types[] = {oid::timestamptz, oid::date};
    const char* values[] = {"2024-05-01 12:00:00.25+02", "2024-05-01"};
    result_ptr r(PQexecParams(c.get(), "SELECT $1, $2", 2, types, values, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "2024-05-01 10:00:00.25+00");
    EXPECT_EQ(PQftype(r.get(), 0), oid::timestamptz);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 1), "2024-05-01");
    // Binary: microseconds (days for a date) since 2000-01-01.
    const char ts_bin[8] = {0, 0, 0, 0, 0, 0x16, static_cast<char>(0xe3), 0x60};  // 1.5 s
    const char date_bin[4] = {0, 0, 0, 1};
    const char* bin_values[] = {ts_bin, date_bin};
    int lengths[] = {8, 4};
    int formats[] = {1, 1};
    result_ptr b(PQexecParams(c.get(), "SELECT $1, $2", 2, types, bin_values, lengths, formats, 0));
    ASSERT_EQ(PQresultStatus(b.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(b.get());
    EXPECT_STREQ(PQgetvalue(b.get(), 0, 0), "2000-01-01 00:00:01.5+00");
    EXPECT_STREQ(PQgetvalue(b.get(), 0, 1), "2000-01-02");
    // Untyped, as JDBC's setTimestamp sends it: a timestamp with a zone is one; other
    // text stays as it is.
    const char* untyped[] = {"2024-05-01 12:00:00.25+02", "2024-05-01 12:00", "2024-05-01 +02"};
    result_ptr u(PQexecParams(c.get(), "SELECT $1, $2, $3", 3, nullptr, untyped, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(u.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(u.get());
    EXPECT_STREQ(PQgetvalue(u.get(), 0, 0), "2024-05-01 10:00:00.25+00");
    EXPECT_STREQ(PQgetvalue(u.get(), 0, 1), "2024-05-01 12:00");
    EXPECT_STREQ(PQgetvalue(u.get(), 0, 2), "2024-05-01");
    const char* bad[] = {"yesterday", "2024-05-01"};
    result_ptr e(PQexecParams(c.get(), "SELECT $1, $2", 2, types, bad, nullptr, nullptr, 0));
    EXPECT_EQ(sqlstate_of(e.get()), "22P02");
}

}  // namespace
}  // namespace sluice::sql::pg::test

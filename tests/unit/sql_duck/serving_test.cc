// src/sql/duck/serving.h: DuckDB behind the front ends' engine interface (sql/engine.h):
// the names users write, streaming steps, the limits, cancel, authorization.

#include "sql/duck/serving.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>
#include <tuple>

#include "duckdb/parser/parser.hpp"
#include "log/log_manager.h"
#include "sql/budget.h"
#include "sql/duck/pg_catalog.h"
#include "sql/duck/pg_shape.h"
#include "sql/sql_security_util.h"
#include "sql/sql_test_util.h"
#include "support/batch_builder.h"

namespace sluice::sql::duck {
namespace {

using rows = std::vector<std::vector<std::string>>;
using sluice::testing::build_batch;
using sluice::testing::test_record;

std::string text_of(const value& v) {
    if (std::holds_alternative<std::monostate>(v)) return "NULL";
    if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v)) return std::to_string(*d);
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    const auto& b = std::get<bytes>(v);
    return "b:" + std::string(b.begin(), b.end());
}

std::string err(failure f) {
    return "ERROR " + std::string(failure_name(f));
}

struct serving_fixture : ::testing::Test {
    void SetUp() override {
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        engine_options o;
        o.data_dir = dir.path;
        o.logs = logs.get();
        o.defaults.timeout = std::chrono::milliseconds(5000);
        o.defaults.max_rows = 5000;
        o.bounds.total_memory = 256 << 20;
        o.bounds.max_value_bytes = 1000;
        o.gate = &gate;
        auto e = open_serving_engine(o);
        ASSERT_TRUE(e) << e.error().message;
        eng = std::move(*e);
        auto s = eng->open_session();
        ASSERT_TRUE(s);
        sess = std::move(*s);
        sess->set_principal({"alice", true});
        gate.allow("alice", security::action::read, "sluice:topic:orders");
    }
    void TearDown() override {
        sess.reset();
        eng.reset();
        logs->close();
    }
    void produce(const std::string& topic, int32_t p, const std::vector<test_record>& recs) {
        auto* pl = logs->get(topic, p);
        ASSERT_NE(pl, nullptr);
        auto payload = build_batch(recs);
        auto v = protocol::validate_batches(payload, {});
        ASSERT_TRUE(v);
        auto r = pl->append(std::span<uint8_t>(payload), *v, 1000);
        ASSERT_TRUE(r) << r.err().message;
        auto done = std::make_shared<std::promise<result<void>>>();
        auto fut = done->get_future();
        logs->when_durable(pl, r->last_offset,
                           [done](result<void> x) { done->set_value(std::move(x)); });
        ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }
    // Every row of the statement, or the error as "ERROR <kind>: message".
    rows run(std::string_view sql, std::vector<column>* cols = nullptr) {
        auto st = sess->prepare(sql);
        if (!st) return {{"ERROR " + std::string(failure_name(st.error().kind))}};
        rows out;
        if (cols) *cols = (*st)->columns();
        for (;;) {
            auto s = (*st)->step();
            if (s == statement::step_state::done) return out;
            if (s == statement::step_state::failed)
                return {{"ERROR " + std::string(failure_name((*st)->error().kind))}};
            auto& r = out.emplace_back();
            for (const auto& v : (*st)->row()) r.push_back(text_of(v));
        }
    }

    test::temp_dir dir;
    test::fake_gate gate;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<sql::engine> eng;
    std::unique_ptr<sql::session> sess;
};

TEST_F(serving_fixture, topics_read_as_kafka_topics_with_the_sqlite_engines_columns) {
    logs->add_topic("orders", 2, {});
    produce("orders", 0, {{"k1", R"({"op":"c","id":1})", 1111, {{"h", "v"}}}});
    produce("orders", 1, {{"k2", R"({"op":"u","id":2})", 2222, {}}});
    std::vector<column> cols;
    EXPECT_EQ(run("SELECT * FROM kafka_topics.\"orders\" ORDER BY partition", &cols),
              (rows{{"0", "0", "1111", "1000", "b:k1", R"(b:{"op":"c","id":1})",
                     R"([{"key":"h","value":"v"}])"},
                    {"1", "0", "2222", "1000", "b:k2", R"(b:{"op":"u","id":2})", "[]"}}));
    ASSERT_EQ(cols.size(), 7u);
    EXPECT_EQ(cols[0].name, "partition");
    EXPECT_EQ(cols[0].decl_type, "INT4");  // DuckDB's INTEGER: PostgreSQL's int4
    EXPECT_EQ(cols[5].decl_type, "BLOB");
    EXPECT_EQ(cols[6].decl_type, "TEXT");
    // PostgreSQL's spellings, natively; a sum is an integer; a boolean is one.
    EXPECT_EQ(run("SELECT decode(value) ->> '$.op' AS op, sum((decode(value) ->> '$.id')::INT), "
                  "true FROM kafka_topics.orders GROUP BY 1 ORDER BY 1",
                  &cols),
              (rows{{"c", "1", "1"}, {"u", "2", "1"}}));
    EXPECT_EQ(cols[1].decl_type, "INTEGER");
    EXPECT_EQ(cols[2].decl_type, "BOOLEAN");
    // CAST of the BLOB value to text reads it as UTF-8, as SQLite's does.
    EXPECT_EQ(run("SELECT CAST(value AS TEXT) ->> '$.op', CAST(value AS TEXT), CAST(key AS TEXT) "
                  "FROM kafka_topics.orders ORDER BY partition"),
              (rows{{"c", R"({"op":"c","id":1})", "k1"}, {"u", R"({"op":"u","id":2})", "k2"}}));
    EXPECT_EQ(run("SELECT count(*) FROM orders WHERE partition = 1"), (rows{{"1"}}));
    // A topic alice may not read is refused whether or not it exists, as on SQLite; one
    // she may read that does not exist is missing.
    EXPECT_EQ(run("SELECT * FROM kafka_topics.nosuch"), (rows{{"ERROR insufficient_privilege"}}));
    gate.allow("alice", security::action::read, "sluice:topic:nosuch");
    EXPECT_EQ(run("SELECT * FROM kafka_topics.nosuch"), (rows{{"ERROR undefined_table"}}));
}

TEST_F(serving_fixture, json_functions_read_the_blob_value_as_text) {
    logs->add_topic("orders", 1, {});
    produce("orders", 0,
            {{"k1", R"({"op":"c","id":1,"items":[{"sku":"a"}]})", 1111, {}},
             {"k2", R"({"op":"u","id":2,"items":[]})", 1112, {}},
             {"k3", "\xff\xfe not utf-8", 1113, {}}});
    // SQLite's spellings on the BLOB itself, as users wrote them for the SQLite engine.
    EXPECT_EQ(run("SELECT value ->> '$.op', value ->> 'id', (value ->> '$.id')::INT * 10, "
                  "value -> '$.items[0]', "
                  "json_extract_string(value, '$.items[0].sku') FROM orders ORDER BY \"offset\""),
              (rows{{"c", "1", "10", R"({"sku":"a"})", "a"},
                    {"u", "2", "20", "NULL", "NULL"},
                    {"NULL", "NULL", "NULL", "NULL", "NULL"}}));
    // In WHERE, GROUP BY, subqueries and CTEs; key too; text and JSON values unchanged.
    EXPECT_EQ(run("WITH t AS (SELECT value ->> 'op' AS op FROM orders WHERE value ->> 'id' = '2') "
                  "SELECT op, (SELECT count(*) FROM orders o WHERE json_valid(o.value)), "
                  "'{\"a\":5}' ->> 'a', '{\"a\":5}'::JSON ->> 'a' FROM t"),
              (rows{{"u", "2", "5", "5"}}));
    EXPECT_EQ(run("SELECT value ->> 'op' AS op, count(*) FROM orders WHERE value ->> 'op' "
                  "IS NOT NULL GROUP BY value ->> 'op' ORDER BY 1"),
              (rows{{"c", "1"}, {"u", "1"}}));
}

// A statement as DuckDB prints it once shape_statement has shaped it.
std::string shaped(const std::string& sql) {
    duckdb::Parser p;
    p.ParseQuery(sql);
    shape_statement(*p.statements.at(0));
    return p.statements[0]->ToString();
}

TEST(json_paths, several_paths_of_one_value_in_a_projection_parse_it_once) {
    const std::string shared = "json_extract_string(sluice_json_text(\"value\"), ['$.kind', 'n'])";
    // Select list, GROUP BY, HAVING and ORDER BY share one extraction of both paths;
    // WHERE, CASE, another value and a single path are left as written.
    const auto s = shaped(
        "SELECT value ->> '$.kind' AS kind, sum((value ->> 'n')::INT), key ->> 'a', "
        "CASE WHEN true THEN value ->> 'c' END FROM t WHERE (value ->> 'w') = 'x' AND "
        "(value ->> 'v') = 'y' GROUP BY value ->> '$.kind' HAVING max(value ->> 'n') > '1' "
        "ORDER BY value ->> '$.kind'");
    EXPECT_NE(s.find("array_extract(" + shared + ", 1) AS kind"), std::string::npos) << s;
    EXPECT_NE(s.find("GROUP BY array_extract(" + shared + ", 1)"), std::string::npos) << s;
    EXPECT_NE(s.find("max(array_extract(" + shared + ", 2))"), std::string::npos) << s;
    EXPECT_NE(s.find("ORDER BY array_extract(" + shared + ", 1)"), std::string::npos) << s;
    EXPECT_NE(s.find("(sluice_json_text(\"key\") ->> 'a')"), std::string::npos) << s;
    EXPECT_NE(s.find("(sluice_json_text(\"value\") ->> 'c')"), std::string::npos) << s;
    EXPECT_NE(s.find("(sluice_json_text(\"value\") ->> 'w')"), std::string::npos) << s;
    // In subqueries and CTEs too, each its own projection; a wildcard path is a list.
    const auto sub = shaped(
        "WITH c AS (SELECT v ->> 'a', v ->> 'b' FROM t) SELECT * FROM c, "
        "(SELECT json_extract_string(v, '$.x'), v ->> '$.y', v ->> '$.z[*]' FROM t)");
    EXPECT_NE(sub.find("json_extract_string(sluice_json_text(v), ['a', 'b'])"), std::string::npos)
        << sub;
    EXPECT_NE(sub.find("json_extract_string(sluice_json_text(v), ['$.x', '$.y'])"),
              std::string::npos)
        << sub;
    EXPECT_NE(sub.find("(sluice_json_text(v) ->> '$.z[*]')"), std::string::npos) << sub;
}

TEST_F(serving_fixture, one_parse_of_several_paths_answers_as_one_parse_each) {
    logs->add_topic("orders", 1, {});
    produce("orders", 0,
            {{"k1", R"({"op":"c","id":1,"n":{"m":[5]}})", 1111, {}},
             {"k2", R"({"op":"c","id":2})", 1112, {}},
             {"k3", R"({"op":"u"})", 1113, {}},
             {"k4", std::nullopt, 1114, {}},
             {"k5", "\xff not utf-8", 1115, {}},
             {"k6", "[1,2]", 1116, {}}});
    // Text results, NULL for a missing path, a NULL value or one not UTF-8.
    EXPECT_EQ(run("SELECT value ->> '$.op' AS op, sum((value ->> 'id')::INT), "
                  "count(value ->> '$.n.m[0]'), max(value ->> '$.n') FROM orders "
                  "GROUP BY value ->> '$.op' ORDER BY value ->> '$.op'"),
              (rows{{"c", "3", "1", R"({"m":[5]})"},
                    {"u", "NULL", "0", "NULL"},
                    {"NULL", "NULL", "0", "NULL"}}));
    EXPECT_EQ(run("SELECT value ->> 'op', value ->> '$[1]' FROM orders ORDER BY \"offset\""),
              (rows{{"c", "NULL"},
                    {"c", "NULL"},
                    {"u", "NULL"},
                    {"NULL", "NULL"},
                    {"NULL", "NULL"},
                    {"NULL", "2"}}));
    // Invalid JSON fails the statement as one extraction does; so does an invalid path.
    produce("orders", 0, {{"k7", "{bad", 1117, {}}});
    const auto one = run("SELECT value ->> 'op' FROM orders");
    ASSERT_EQ(one.size(), 1u);
    EXPECT_EQ(one[0][0].rfind("ERROR ", 0), 0u);
    EXPECT_EQ(run("SELECT value ->> 'op', value ->> 'id' FROM orders"), one);
    EXPECT_EQ(run("SELECT value ->> '$.[x', value ->> 'id' FROM orders WHERE \"offset\" = 0"),
              run("SELECT value ->> '$.[x' FROM orders WHERE \"offset\" = 0"));
}

TEST_F(serving_fixture, hidden_timestamp_columns_and_postgres_column_names) {
    logs->add_topic("orders", 1, {});
    produce("orders", 0, {{"k1", "v", 1714564800250, {}}});
    std::vector<column> cols;
    EXPECT_EQ(run("SELECT timestamp_producer_tz, epoch_ms(timestamp_producer_tz), "
                  "timestamp_broker_tz = make_timestamptz(timestamp_broker * 1000), "
                  "value_text, key_text FROM kafka_topics.orders",
                  &cols),
              (rows{{"2024-05-01 12:00:00.25+00", "1714564800250", "1", "v", "k1"}}));
    EXPECT_EQ(cols[0].decl_type, "TIMESTAMPTZ");
    EXPECT_EQ(run("SELECT count(*) FROM orders WHERE timestamp_producer_tz >= "
                  "TIMESTAMPTZ '2024-05-01 12:00:00+00'"),
              (rows{{"1"}}));
    // Hidden: SELECT * has the seven columns.
    EXPECT_EQ(run("SELECT * FROM orders", &cols).at(0).size(), 7u);
    // PostgreSQL's names: a function call by the function, an operator ?column?.
    run("SELECT count(*), sum(\"offset\"), max(partition) AS m, partition + 1, value ->> 'x', "
        "\"offset\" FROM orders GROUP BY ALL",
        &cols);
    std::vector<std::string> names;
    names.reserve(cols.size());
    for (const auto& c : cols) names.push_back(c.name);
    EXPECT_EQ(names,
              (std::vector<std::string>{"count", "sum", "m", "?column?", "?column?", "offset"}));
    run("SELECT count(*) FROM orders UNION ALL SELECT 1", &cols);
    EXPECT_EQ(cols.at(0).name, "count");
}

TEST_F(serving_fixture, an_unquoted_offset_gets_a_hint) {
    logs->add_topic("orders", 1, {});
    for (const char* sql : {"SELECT offset FROM orders", "SELECT * FROM orders WHERE offset > 1"}) {
        auto st = sess->prepare(sql);
        ASSERT_FALSE(st) << sql;
        EXPECT_EQ(st.error().kind, failure::syntax);
        EXPECT_NE(st.error().message.find("quote it: \"offset\""), std::string::npos)
            << st.error().message;
    }
    auto st = sess->prepare("SELECT \"offset\", o.offset FROM orders o WHERE");
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().message.find("quote it"), std::string::npos) << st.error().message;
}

TEST_F(serving_fixture, reading_needs_kafka_read_on_the_topic) {
    logs->add_topic("orders", 1, {});
    logs->add_topic("secret", 1, {});
    EXPECT_EQ(run("SELECT count(*) FROM kafka_topics.orders"), (rows{{"0"}}));
    EXPECT_EQ(run("SELECT count(*) FROM kafka_topics.secret"),
              (rows{{err(failure::not_authorized)}}));
    EXPECT_EQ(run("SELECT count(*) FROM kafka_topic('secret')"),
              (rows{{err(failure::not_authorized)}}));
    sess->set_principal({"bob", true});
    EXPECT_EQ(run("SELECT count(*) FROM kafka_topics.orders"),
              (rows{{err(failure::not_authorized)}}));
}

TEST_F(serving_fixture, several_statements_parameters_and_refused_writes) {
    std::string_view tail;
    auto st = sess->prepare("SELECT $1::BIGINT + 1; SELECT 2", &tail);
    ASSERT_TRUE(st) << st.error().message;
    EXPECT_EQ((*st)->param_count(), 1);
    ASSERT_TRUE((*st)->bind({int64_t{41}}));
    ASSERT_EQ((*st)->step(), statement::step_state::row);
    EXPECT_EQ(std::get<int64_t>((*st)->row()[0]), 42);
    EXPECT_EQ((*st)->step(), statement::step_state::done);
    EXPECT_EQ(run(tail), (rows{{"2"}}));
    auto empty = sess->prepare("  -- nothing\n");
    ASSERT_TRUE(empty);
    EXPECT_EQ(empty->get(), nullptr);
    for (const char* sql : {"COPY (SELECT 1) TO 'x.csv'", "ATTACH 'x.db'", "INSTALL httpfs",
                            "LOAD httpfs", "CREATE MACRO m(x) AS x + 1"})
        EXPECT_EQ(run(sql), (rows{{"ERROR read_only"}})) << sql;
    EXPECT_EQ(run("SELECT * FROM read_csv('/etc/passwd')"), (rows{{err(failure::not_authorized)}}));
    EXPECT_EQ(run("BEGIN"), rows{});
    EXPECT_TRUE(sess->in_transaction());
    EXPECT_EQ(run("COMMIT"), rows{});
    EXPECT_FALSE(sess->in_transaction());
}

// `? + 9000000000`: DuckDB cannot type the parameter alone (`+` has several forms), so it
// leaves the result open until values come. The front end must announce the columns
// before (PostgreSQL's Describe): they come from the types Parse declared, the others as
// the statement implies, else text; the values bound take those types.
TEST_F(serving_fixture, parameters_duckdb_cannot_type_take_the_declared_ones) {
    ASSERT_EQ(run("CREATE TABLE p(i BIGINT, d DATE)"), rows{});
    ASSERT_EQ(run("INSERT INTO p VALUES (9000000001, DATE '2024-05-01'), "
                  "(9000000200, DATE '2024-05-01'), (9000000002, DATE '2024-05-02')"),
              rows{});
    const std::string sql = "SELECT count(*), min(i) FROM p WHERE i < ? + 9000000000 AND d = ?";
    // Without declared types the result stays open: DuckDB's one placeholder column.
    auto open = sess->prepare(sql);
    ASSERT_TRUE(open) << open.error().message;
    EXPECT_EQ((*open)->columns().size(), 1u);
    const std::vector<param_type> declared{param_type::int32};
    auto st = sess->prepare_declared(sql, nullptr, declared);
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_EQ((*st)->columns().size(), 2u);
    EXPECT_EQ((*st)->columns()[0].name, "count");
    EXPECT_EQ((*st)->columns()[1].name, "min");
    EXPECT_EQ((*st)->columns()[1].decl_type, "INTEGER");
    // The second parameter, unspecified, is the DATE its comparison implies: its text
    // converts; so does the first's integer, and a NULL keeps the types.
    for (const auto& [limit, date, want] :
         std::vector<std::tuple<value, value, std::vector<std::string>>>{
             {int64_t{100}, std::string("2024-05-01"), {"1", "9000000001"}},
             {int64_t{300}, std::string("2024-05-01"), {"2", "9000000001"}},
             {std::monostate{}, std::string("2024-05-01"), {"0", "NULL"}}}) {
        (*st)->reset();
        ASSERT_TRUE((*st)->bind({limit, date}));
        ASSERT_EQ((*st)->step(), statement::step_state::row) << (*st)->error().message;
        std::vector<std::string> got;
        for (const auto& v : (*st)->row()) got.push_back(text_of(v));
        EXPECT_EQ(got, want);
        EXPECT_EQ((*st)->step(), statement::step_state::done);
    }
    // A value that is not of its parameter's type is refused at bind, naming both.
    (*st)->reset();
    auto bad = (*st)->bind({std::string("many"), std::string("2024-05-01")});
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().kind, failure::invalid_parameter);
    EXPECT_NE(bad.error().message.find("parameter $1 is not a valid INTEGER"), std::string::npos)
        << bad.error().message;
    // An INSERT whose parameter DuckDB cannot type returns no rows once typed.
    auto ins = sess->prepare_declared("INSERT INTO p VALUES (? + 9000000000, DATE '2024-05-03')",
                                      nullptr, declared);
    ASSERT_TRUE(ins) << ins.error().message;
    EXPECT_TRUE((*ins)->columns().empty());
    ASSERT_TRUE((*ins)->bind({int64_t{7}}));
    EXPECT_EQ((*ins)->step(), statement::step_state::done) << (*ins)->error().message;
    EXPECT_EQ(run("SELECT i FROM p WHERE d = DATE '2024-05-03'"), (rows{{"9000000007"}}));
}

// DuckDB plans a filter on a table with its statistics (on an empty table it plans an
// empty result) and plans a prepared statement again only when the catalog changes: a
// statement that reads a table is planned again at each run, so rows written after it
// was prepared are found.
TEST_F(serving_fixture, a_statement_prepared_on_an_empty_table_finds_the_rows_written_after) {
    ASSERT_EQ(run("CREATE TABLE later(x BIGINT)"), rows{});
    auto st = sess->prepare("SELECT count(*) FROM later WHERE x > 3");
    ASSERT_TRUE(st) << st.error().message;
    ASSERT_EQ(run("INSERT INTO later SELECT range FROM range(10)"), rows{});
    ASSERT_EQ((*st)->step(), statement::step_state::row) << (*st)->error().message;
    EXPECT_EQ(text_of((*st)->row().at(0)), "6");
    ASSERT_EQ(run("INSERT INTO later VALUES (100)"), rows{});
    (*st)->reset();
    ASSERT_EQ((*st)->step(), statement::step_state::row) << (*st)->error().message;
    EXPECT_EQ(text_of((*st)->row().at(0)), "7");
}

TEST_F(serving_fixture, users_tables_are_written_kept_and_fenced_off_the_engines_schemas) {
    logs->add_topic("orders", 1, {});
    produce("orders", 0, {{"k", R"({"n": 2})", 1, {}}, {"k", R"({"n": 5})", 2, {}}});
    EXPECT_EQ(run("CREATE SCHEMA shop"), rows{});
    EXPECT_EQ(run("CREATE TABLE shop.items(sku TEXT PRIMARY KEY, qty INTEGER)"), rows{});
    EXPECT_EQ(run("CREATE INDEX items_qty ON shop.items(qty)"), rows{});
    EXPECT_EQ(run("INSERT INTO shop.items SELECT key_text || \"offset\", (value ->> '$.n')::INT "
                  "FROM kafka_topics.orders"),
              rows{});
    EXPECT_EQ(run("UPDATE shop.items SET qty = qty + 1 WHERE sku = 'k1'"), rows{});
    EXPECT_EQ(run("SELECT sku, qty FROM shop.items ORDER BY sku"),
              (rows{{"k0", "2"}, {"k1", "6"}}));
    EXPECT_EQ(run("INSERT INTO shop.items VALUES ('k0', 1)"), (rows{{err(failure::constraint)}}));
    EXPECT_EQ(run("CREATE TABLE scratch AS SELECT 1 AS x"), rows{});
    EXPECT_EQ(run("DROP TABLE scratch"), rows{});
    // The engine's schemas and other catalogs are not users'.
    for (const char* sql :
         {"INSERT INTO kafka_topics.orders(key) VALUES ('x')", "DELETE FROM system.topics",
          "DELETE FROM pg_catalog.pg_type", "CREATE TABLE kafka_topics.t(a INT)",
          "CREATE TABLE system.t(a INT)", "CREATE VIEW information_schema.v AS SELECT 1",
          "DROP SCHEMA kafka_topics", "UPDATE system.topics SET partitions = 1",
          "CREATE TABLE elsewhere.main.t(a INT)"})
        EXPECT_EQ(run(sql), (rows{{err(failure::read_only)}})) << sql;
    for (const char* sql : {"CREATE SCHEMA pg_catalog", "CREATE SCHEMA kafka_topics",
                            "CREATE SCHEMA system", "CREATE SCHEMA \"a-b\""})
        EXPECT_EQ(run(sql), (rows{{err(failure::invalid_parameter)}})) << sql;
    // Kept in <data_dir>/sql-duck across restarts.
    sess.reset();
    eng.reset();
    engine_options o;
    o.data_dir = dir.path;
    o.logs = logs.get();
    auto e = open_serving_engine(o);
    ASSERT_TRUE(e) << e.error().message;
    eng = std::move(*e);
    sess = std::move(*eng->open_session());
    EXPECT_TRUE(std::filesystem::exists(dir.path / "sql-duck" / "sluice.duckdb"));
    EXPECT_EQ(run("SELECT sku, qty FROM shop.items ORDER BY sku"),
              (rows{{"k0", "2"}, {"k1", "6"}}));
}

TEST_F(serving_fixture, postgres_spellings_the_clients_send) {
    // bytea's hex input (psycopg2's and JDBC's parameters), DuckDB's escapes still read.
    EXPECT_EQ(run("SELECT '\\x6b3137'::bytea, '\\x41\\x42'::bytea, octet_length('\\x'::bytea)"),
              (rows{{"b:k17", "b:AB", "0"}}));
    EXPECT_EQ(run("SELECT convert_from('\\x6b31'::bytea, 'UTF8')"), (rows{{"k1"}}));
    EXPECT_EQ(run("SELECT ('\\x7b2261223a317d'::bytea)::json ->> 'a'"), (rows{{"1"}}));
    EXPECT_EQ(run("SELECT convert_from('\\xff'::bytea, 'UTF8')"),
              (rows{{err(failure::invalid_parameter)}}));
    // Integer division as PostgreSQL's; a cast keeps the column's name.
    std::vector<column> cols;
    EXPECT_EQ(run("SELECT 7 / 2, 7 / 2.0 AS half, x::text FROM (SELECT 1 AS x)", &cols),
              (rows{{"3", "3.500000", "1"}}));
    EXPECT_EQ(cols[2].name, "x");
    // Messages are one line; a millisecond time in a time function gets a hint.
    logs->add_topic("orders", 1, {});
    auto st = sess->prepare("SELECT date_trunc('hour', timestamp_producer) FROM orders");
    ASSERT_FALSE(st);
    EXPECT_EQ(st.error().message.find('\n'), std::string::npos) << st.error().message;
    EXPECT_NE(st.error().message.find("to_timestamp(ms / 1000.0)"), std::string::npos)
        << st.error().message;
}

TEST_F(serving_fixture, rows_values_time_and_cancel_are_bounded) {
    EXPECT_EQ(run("SELECT * FROM range(5000)").size(), 5000u);
    EXPECT_EQ(run("SELECT * FROM range(5001)"), (rows{{"ERROR row_limit"}}));
    EXPECT_EQ(run("SELECT repeat('x', 1001)"), (rows{{"ERROR program_limit"}}));
    limits l = sess->current_limits();
    l.timeout = std::chrono::milliseconds(200);
    sess->set_limits(l);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(run("SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"),
              (rows{{"ERROR timeout"}}));
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(3));
    l.timeout = std::chrono::milliseconds(5000);
    sess->set_limits(l);
    auto canceler = std::thread([this] {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        sess->cancel();
    });
    EXPECT_EQ(run("SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3"),
              (rows{{"ERROR canceled"}}));
    canceler.join();
    EXPECT_EQ(run("SELECT 1"), (rows{{"1"}}));
}

// duck/session_memory.h: what a statement computes is its session's, refused past the
// bounds and given back; what DuckDB spills (a join's build side) is not.
TEST_F(serving_fixture, memory_a_statement_computes_is_its_sessions) {
    // max_value_bytes 1000: a block past 16 MiB (DuckDB's shared heap chunks) is a value.
    EXPECT_EQ(run("SELECT length(repeat('x', 20000000))"), (rows{{"ERROR program_limit"}}));
    // 30 values of 10 MB, a 16 MiB block each, in one chunk: past the session's 256 MiB.
    EXPECT_EQ(run("SELECT length(repeat('x', 10000000) || i::VARCHAR) FROM range(30) t(i)"),
              (rows{{"ERROR memory_limit"}}));
    EXPECT_EQ(run("SELECT sum(length(repeat('x', 10000000) || i::VARCHAR)) FROM range(10) t(i)"),
              (rows{{"100000010"}}));
    EXPECT_EQ(budget_total_memory(), 0u);  // given back when the statements end
    // Another session's statement meets the total (256 MiB) while one holds its rows: an
    // engine whose values may be that long.
    test::temp_dir dir2;
    engine_options o;
    o.data_dir = dir2.path;
    o.logs = logs.get();
    o.defaults = eng->default_limits();
    o.bounds.total_memory = 256 << 20;
    o.bounds.max_value_bytes = 64 << 20;
    auto e2 = open_serving_engine(o);
    ASSERT_TRUE(e2) << e2.error().message;
    auto one = (*e2)->open_session();
    auto other = (*e2)->open_session();
    ASSERT_TRUE(one && other);
    // Six values of 10 MB, a 16 MiB block each (and DuckDB's buffered copy of the chunk).
    auto held = (*one)->prepare("SELECT repeat('x', 10000000) || i::VARCHAR FROM range(6) t(i)");
    ASSERT_TRUE(held);
    ASSERT_EQ((*held)->step(), statement::step_state::row) << (*held)->error().message;
    EXPECT_GT(budget_total_memory(), uint64_t{6} * 16 << 20);
    auto second = (*other)->prepare("SELECT repeat('y', 10000000) || i::VARCHAR FROM range(6) t(i)");
    ASSERT_TRUE(second);
    EXPECT_EQ((*second)->step(), statement::step_state::failed);
    EXPECT_EQ((*second)->error().kind, failure::memory_exhausted) << (*second)->error().message;
    held->reset();
    second->reset();
    // Given back, but for the few KiB a connection keeps between statements.
    EXPECT_LT(budget_total_memory(), uint64_t{1} << 20);
    one->reset();
    other->reset();
    e2->reset();
    o.bounds.max_value_bytes = 1000;  // the fixture's engine's bounds again
    set_resource_bounds(o.bounds);
    // A join whose build side (some 280 MB) is past the session's bound: DuckDB's pool's,
    // never charged (it spills when the pool is short).
    EXPECT_EQ(run("SELECT count(*), sum(a.i) FROM range(2000000) a(i) JOIN "
                  "(SELECT i, md5(i::VARCHAR) || repeat('z', 100) AS p FROM range(2000000) t(i)) b "
                  "ON a.i = b.i WHERE b.p > ''"),
              (rows{{"2000000", "1999999000000"}}));
}

TEST_F(serving_fixture, paths_pragmas_and_savepoints_are_refused) {
    for (const char* sql :
         {"PRAGMA database_list", "SELECT path FROM duckdb_databases()",
          "SELECT file FROM pragma_database_list", "SELECT current_setting('temp_directory')",
          "WITH x AS (SELECT * FROM duckdb_settings()) SELECT * FROM x",
          "SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_settings)",
          "SELECT (SELECT max(path) FROM duckdb_temporary_files())",
          "CREATE VIEW v AS SELECT path FROM duckdb_databases()",
          "EXPLAIN SELECT * FROM duckdb_extensions()"})
        EXPECT_EQ(run(sql), (rows{{err(failure::read_only)}})) << sql;
    EXPECT_EQ(run("SELECT current_setting('TimeZone') IS NOT NULL"), (rows{{"1"}}));
    for (const char* sql : {"SAVEPOINT a", "release a", " -- c\n ROLLBACK TO SAVEPOINT a",
                            "/* c */ rollback work to a"})
        EXPECT_EQ(run(sql), (rows{{err(failure::not_supported)}})) << sql;
    EXPECT_EQ(sqlstate(failure::not_supported), std::string("0A000"));
}

TEST_F(serving_fixture, sql_threads_bounds_the_engines_threads_and_stays_locked) {
    // By default one per core; --sql-threads (resource_bounds::threads) sets DuckDB's.
    EXPECT_EQ(run("SELECT current_setting('threads')"),
              (rows{{std::to_string(std::max(1u, std::thread::hardware_concurrency()))}}));
    for (const uint32_t n : {1u, 3u}) {
        test::temp_dir other;  // a database of its own
        engine_options o;
        o.data_dir = other.path;
        o.logs = logs.get();
        o.bounds.threads = n;
        auto e = open_serving_engine(o);
        ASSERT_TRUE(e) << e.error().message;
        auto s = (*e)->open_session();
        ASSERT_TRUE(s);
        auto st = (*s)->prepare("SELECT current_setting('threads')");
        ASSERT_TRUE(st);
        ASSERT_EQ((*st)->step(), statement::step_state::row);
        EXPECT_EQ(text_of((*st)->row()[0]), std::to_string(n));
        // Locked, like the other settings.
        auto set = (*s)->prepare("SET threads = 8");
        if (set) {
            EXPECT_EQ((*set)->step(), statement::step_state::failed);
        }
        st = (*s)->prepare("SELECT current_setting('threads')");
        ASSERT_TRUE(st);
        ASSERT_EQ((*st)->step(), statement::step_state::row);
        EXPECT_EQ(text_of((*st)->row()[0]), std::to_string(n));
    }
}

TEST_F(serving_fixture, last_scan_counts_the_previous_statement) {
    logs->add_topic("orders", 1, {});
    produce("orders", 0, {{"k1", "a", 1111, {}}, {"k2", "b", 1112, {}}});
    EXPECT_EQ(run("SELECT count(value) FROM kafka_topics.orders"), (rows{{"2"}}));
    EXPECT_EQ(run("SELECT sluice_last_scan() ->> '$.records_read', "
                  "sluice_last_scan() ->> '$.partitions_scanned'"),
              (rows{{"2", "1"}}));
    // The statement before was that one, which read no topic.
    EXPECT_EQ(run("SELECT sluice_last_scan() ->> '$.records_read'"), (rows{{"0"}}));
}

TEST_F(serving_fixture, the_statement_after_a_semicolon_prepares) {
    std::string_view tail;
    auto st = sess->prepare("SELECT 1; SELECT 2", &tail);
    ASSERT_TRUE(st);
    EXPECT_EQ(run(tail), (rows{{"2"}}));
    EXPECT_EQ(run("; SELECT 3"), (rows{{"3"}}));
}

TEST_F(serving_fixture, results_stream_a_chunk_at_a_time) {
    // A result far larger than the row limit allows is stepped row by row: the first
    // rows come before the statement has produced the rest.
    auto st = sess->prepare("SELECT i FROM range(100000000) t(i)");
    ASSERT_TRUE(st);
    for (int i = 0; i < 3000; ++i) ASSERT_EQ((*st)->step(), statement::step_state::row);
    EXPECT_EQ(std::get<int64_t>((*st)->row()[0]), 2999);
}

TEST(pg_operator_text, rewrites_psqls_operators_outside_literals_keeping_the_length) {
    std::string sql =
        "SELECT 1 WHERE c.relname OPERATOR(pg_catalog.~) '^(x)$' COLLATE pg_catalog.default "
        "AND 'OPERATOR(pg_catalog.~)' <> \"OPERATOR(pg_catalog.=)\" -- OPERATOR(pg_catalog.~)\n"
        "AND a operator ( pg_catalog . !~ ) E'\\'OPERATOR(pg_catalog.~)' "
        "AND x::pg_catalog.regclass::pg_catalog.text = '::pg_catalog.text'";
    const auto size = sql.size();
    pg_operator_text(sql);
    EXPECT_EQ(sql.size(), size);
    EXPECT_EQ(
        sql,
        "SELECT 1 WHERE c.relname ~                      '^(x)$'                            "
        "AND 'OPERATOR(pg_catalog.~)' <> \"OPERATOR(pg_catalog.=)\" -- OPERATOR(pg_catalog.~)\n"
        "AND a !~                           E'\\'OPERATOR(pg_catalog.~)' "
        "AND x::           regclass::           text = '::pg_catalog.text'");
}

TEST_F(serving_fixture, the_catalog_answers_as_postgresql_to_the_tools) {
    run("CREATE SCHEMA shop");
    run("CREATE TABLE shop.items(sku TEXT PRIMARY KEY)");
    // regclass in and out, qualified when not on the search path; PostgreSQL's OIDs of its
    // catalog tables.
    EXPECT_EQ(run("SELECT 'shop.items'::regclass::text, 'pg_class'::regclass, "
                  "'shop.items'::regclass = (SELECT c.oid FROM pg_class c JOIN pg_namespace n "
                  "ON n.oid = c.relnamespace WHERE n.nspname = 'shop' AND relname = 'items')"),
              (rows{{"shop.items", "1259", "1"}}));
    EXPECT_EQ(run("SELECT 'nope'::regclass"), (rows{{err(failure::undefined_table)}}));
    // ~ and !~ search, as PostgreSQL's (DuckDB's match the whole string).
    EXPECT_EQ(run("SELECT 'pg_catalog' ~ '^pg_', 'abc' !~ 'b', 'abc' ~ '^b'"),
              (rows{{"1", "0", "0"}}));
    EXPECT_EQ(run("SELECT pg_catalog.to_regclass('nope') IS NULL, 42::oid"), (rows{{"1", "42"}}));
    // format_type by PostgreSQL's type OIDs and typmods.
    EXPECT_EQ(run("SELECT format_type(25, -1), pg_catalog.format_type(20, NULL), "
                  "format_type(1043, 36), format_type(1700, 655366), format_type(1, -1)"),
              (rows{{"text", "bigint", "character varying(32)", "numeric(10,2)", "???"}}));
    // psql's spellings: OPERATOR(pg_catalog.~), COLLATE pg_catalog.default, pg_catalog.f
    // for functions DuckDB has in main.
    EXPECT_EQ(run("SELECT pg_catalog.upper(c.relname) FROM pg_catalog.pg_class c WHERE c.relname "
                  "OPERATOR(pg_catalog.~) '^(items)$' COLLATE pg_catalog.default"),
              (rows{{"ITEMS"}}));
    // \l's columns of the one database; the schemata of this database and the catalog's.
    EXPECT_EQ(run("SELECT pg_catalog.pg_get_userbyid(d.datdba), "
                  "pg_catalog.pg_encoding_to_char(d.encoding), d.datcollate, d.datlocprovider "
                  "FROM pg_catalog.pg_database d"),
              (rows{{"sluice", "UTF8", "C", "c"}}));
    EXPECT_EQ(run("SELECT schema_name FROM information_schema.schemata WHERE schema_name NOT IN "
                  "('kafka_topics', 'system') ORDER BY 1"),
              (rows{{"information_schema"}, {"main"}, {"pg_catalog"}, {"shop"}}));
}

TEST_F(serving_fixture, like_comments_and_statistics_as_postgresql_gives_them) {
    // LIKE and ILIKE escape with a backslash, as PostgreSQL's (JDBC's getTables sends
    // `nspname LIKE 'kafka\_topics'`); without one the pattern is DuckDB's as it is.
    EXPECT_EQ(run("SELECT 'a_b' LIKE 'a\\_b', 'axb' LIKE 'a\\_b', 'axb' NOT LIKE 'a\\_b', "
                  "'A_B' ILIKE 'a\\_b', 'AxB' NOT ILIKE 'a\\_b', 'axb' LIKE 'a_b', "
                  "'kafka_topics' LIKE 'kafka' || '\\_%'"),
              (rows{{"1", "0", "1", "1", "1", "1", "1"}}));
    // Comments: pg_description's rows are the commented objects', under pg_class's OID.
    run("CREATE TABLE t(a INTEGER, b TEXT)");
    run("COMMENT ON TABLE t IS 'kept'");
    run("COMMENT ON COLUMN t.b IS 'text of it'");
    EXPECT_EQ(run("SELECT d.objsubid, d.description FROM pg_description d "
                  "WHERE d.objoid = 't'::regclass AND d.classoid = 'pg_class'::regclass "
                  "ORDER BY 1"),
              (rows{{"0", "kept"}, {"2", "text of it"}}));
    EXPECT_EQ(run("SELECT obj_description('t'::regclass, 'pg_class'), "
                  "obj_description('t'::regclass), obj_description('t'::regclass, 'pg_proc'), "
                  "col_description('t'::regclass, 1), col_description('t'::regclass, 2)"),
              (rows{{"kept", "kept", "NULL", "NULL", "text of it"}}));
    // No ANALYZE statistics: pg_stats has PostgreSQL's columns and no rows.
    EXPECT_EQ(run("SELECT attname, null_frac, n_distinct, avg_width FROM pg_stats "
                  "WHERE schemaname = 'main' AND tablename = 't'"),
              (rows{}));
}

TEST_F(serving_fixture, sizes_types_arrays_and_any_as_postgresql_gives_them) {
    // PostgreSQL's pg_size_pretty: bytes below 10 kB, then halves rounded away from zero.
    EXPECT_EQ(run("SELECT pg_catalog.pg_size_pretty(10239), pg_size_pretty(10240), "
                  "pg_size_pretty(1536 * 1024), pg_size_pretty(CAST(20479 AS BIGINT) * 1024 * 1024), "
                  "pg_size_pretty(-10240), pg_size_pretty(NULL)"),
              (rows{{"10239 bytes", "10 kB", "1536 kB", "20 GB", "-10 kB", "NULL"}}));
    // A table written but not checkpointed has no blocks yet; a view has no size.
    run("CREATE TABLE t(x INTEGER PRIMARY KEY, y INTEGER)");
    run("INSERT INTO t VALUES (1, 2), (3, 4)");
    run("CREATE VIEW v AS SELECT x FROM t;");
    EXPECT_EQ(run("SELECT pg_table_size('t'::regclass), pg_table_size('v'::regclass), "
                  "pg_relation_size('v'::regclass, 'main'), "
                  "pg_get_viewdef('v'::regclass, true)"),
              (rows{{"0", "NULL", "NULL", "SELECT x FROM t"}}));
    // pg_type under PostgreSQL's OIDs; = ANY of a list; indkey's int2vector text; a list
    // in PostgreSQL's array text.
    EXPECT_EQ(run("SELECT typname, typarray, typinput FROM pg_catalog.pg_type WHERE oid IN (25, 1005) "
                  "ORDER BY oid"),
              (rows{{"text", "1009", "textin"}, {"_int2", "0", "array_in"}}));
    EXPECT_EQ(run("SELECT a.attname, i.indkey::text FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid "
                  "LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = ANY(i.indkey) "
                  "WHERE c.relname = 't'"),
              (rows{{"x", "1"}}));
    EXPECT_EQ(run("SELECT [1, 2], ['a b', NULL, ''], [[1], [2, 3]]"),
              (rows{{"{1,2}", "{\"a b\",NULL,\"\"}", "{{1},{2,3}}"}}));
}

}  // namespace
}  // namespace sluice::sql::duck

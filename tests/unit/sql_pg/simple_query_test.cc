// The simple query protocol through libpq: startup, several statements per string,
// types and values, command tags, errors, transaction status, SET and SHOW.

#include "common/version.h"
#include "pg_test_util.h"

namespace sluice::sql::pg::test {
namespace {

using simple_query = pg_fixture;

TEST_F(simple_query, startup_reports_parameters) {
    auto c = connect();
    EXPECT_STREQ(PQparameterStatus(c.get(), "server_version"), "15.0 (Sluice)");
    EXPECT_EQ(PQserverVersion(c.get()), 150000);
    EXPECT_STREQ(PQparameterStatus(c.get(), "server_encoding"), "UTF8");
    EXPECT_STREQ(PQparameterStatus(c.get(), "client_encoding"), "UTF8");
    EXPECT_STREQ(PQparameterStatus(c.get(), "DateStyle"), "ISO, MDY");
    EXPECT_STREQ(PQparameterStatus(c.get(), "integer_datetimes"), "on");
    EXPECT_STREQ(PQparameterStatus(c.get(), "standard_conforming_strings"), "on");
    EXPECT_STREQ(PQparameterStatus(c.get(), "TimeZone"), "UTC");
    EXPECT_STREQ(PQparameterStatus(c.get(), "is_superuser"), "off");
    EXPECT_NE(PQbackendPID(c.get()), 0);
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    EXPECT_EQ(server->connection_count(), 1u);
}

TEST_F(simple_query, application_name_from_startup_and_set) {
    conn_ptr c(PQconnectdb((conninfo() + " application_name=tester").c_str()));
    ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
    EXPECT_STREQ(PQparameterStatus(c.get(), "application_name"), "tester");
    auto r = exec(c.get(), "SET application_name = 'other'");
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK);
    EXPECT_STREQ(PQcmdStatus(r.get()), "SET");
    EXPECT_STREQ(PQparameterStatus(c.get(), "application_name"), "other");
}

TEST_F(simple_query, several_statements_in_one_string) {
    auto c = connect();
    auto rs = exec_all(c.get(),
                       "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);"
                       "INSERT INTO t VALUES (1, 'one');"
                       "INSERT INTO t VALUES (2, 'two'), (3, 'three');;"
                       " -- a comment\n"
                       "SELECT id, name FROM t ORDER BY id");
    ASSERT_EQ(rs.size(), 4u);
    EXPECT_EQ(PQresultStatus(rs[0].get()), PGRES_COMMAND_OK);
    EXPECT_STREQ(PQcmdStatus(rs[0].get()), "CREATE TABLE");
    EXPECT_STREQ(PQcmdStatus(rs[1].get()), "INSERT 0 1");
    EXPECT_STREQ(PQcmdTuples(rs[1].get()), "1");
    EXPECT_STREQ(PQcmdStatus(rs[2].get()), "INSERT 0 2");
    ASSERT_EQ(PQresultStatus(rs[3].get()), PGRES_TUPLES_OK);
    EXPECT_STREQ(PQcmdStatus(rs[3].get()), "SELECT 3");
    ASSERT_EQ(PQntuples(rs[3].get()), 3);
    EXPECT_STREQ(PQfname(rs[3].get(), 0), "id");
    EXPECT_STREQ(PQgetvalue(rs[3].get(), 2, 0), "3");
    EXPECT_STREQ(PQgetvalue(rs[3].get(), 2, 1), "three");
}

TEST_F(simple_query, expression_types_are_the_engines) {
    auto c = connect();
    auto r = exec(c.get(),
                  "SELECT 42::BIGINT, -1.5::DOUBLE, 'text', '\\x00\\xff\\x10'::BLOB, NULL, "
                  "'Infinity'::DOUBLE");
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    ASSERT_EQ(PQnfields(r.get()), 6);
    EXPECT_EQ(PQftype(r.get(), 0), 20u);   // int8
    EXPECT_EQ(PQftype(r.get(), 1), 701u);  // float8
    EXPECT_EQ(PQftype(r.get(), 2), 25u);   // text
    EXPECT_EQ(PQftype(r.get(), 3), 17u);   // bytea
    EXPECT_EQ(PQftype(r.get(), 4), 23u);   // a bare NULL: DuckDB types it INTEGER (int4)
    EXPECT_EQ(PQfsize(r.get(), 0), 8);
    EXPECT_EQ(PQfsize(r.get(), 2), -1);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "42");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 1), "-1.5");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 2), "text");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 3), "\\x00ff10");
    EXPECT_TRUE(PQgetisnull(r.get(), 0, 4));
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 5), "Infinity");
}

TEST_F(simple_query, declared_types_decide_and_values_follow_them) {
    auto c = connect();
    auto rs = exec_all(c.get(),
                       "CREATE TABLE v (i INTEGER, r DOUBLE, t TEXT, b BLOB, f BOOLEAN, n VARCHAR);"
                       "INSERT INTO v VALUES (NULL, NULL, NULL, NULL, NULL, NULL);"
                       "INSERT INTO v VALUES (7, 2.5, '{}', 'hi'::BLOB, true, '3');"
                       "SELECT i, r, t, b, f, n FROM v");
    ASSERT_EQ(rs.size(), 4u);
    PGresult* r = rs[3].get();
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQresultErrorMessage(r);
    EXPECT_EQ(PQftype(r, 0), 23u);  // INTEGER is int4, as in PostgreSQL's catalog
    EXPECT_EQ(PQftype(r, 1), 701u);
    EXPECT_EQ(PQftype(r, 2), 25u);
    EXPECT_EQ(PQftype(r, 3), 17u);
    EXPECT_EQ(PQftype(r, 4), 16u);
    EXPECT_EQ(PQftype(r, 5), 25u);
    ASSERT_EQ(PQntuples(r), 2);
    EXPECT_TRUE(PQgetisnull(r, 0, 0));
    EXPECT_STREQ(PQgetvalue(r, 1, 0), "7");
    EXPECT_STREQ(PQgetvalue(r, 1, 1), "2.5");
    EXPECT_STREQ(PQgetvalue(r, 1, 2), "{}");
    EXPECT_STREQ(PQgetvalue(r, 1, 3), "\\x6869");
    EXPECT_STREQ(PQgetvalue(r, 1, 4), "t");
    EXPECT_STREQ(PQgetvalue(r, 1, 5), "3");
}

TEST_F(simple_query, command_tags) {
    auto c = connect();
    auto rs = exec_all(c.get(),
                       "CREATE TABLE k (a INTEGER);"
                       "INSERT INTO k VALUES (1), (2), (3), (4);"
                       "UPDATE k SET a = a * 10 WHERE a > 1;"
                       "DELETE FROM k WHERE a = 40;"
                       "CREATE UNIQUE INDEX k_a ON k (a);"
                       "CREATE VIEW kv AS SELECT a FROM k;"
                       "SELECT * FROM kv WHERE a < 0;"
                       "DROP VIEW kv;"
                       "DROP TABLE k");
    std::vector<std::string> tags;
    for (auto& r : rs) tags.emplace_back(PQcmdStatus(r.get()));
    EXPECT_EQ(tags, (std::vector<std::string>{"CREATE TABLE", "INSERT 0 4", "UPDATE 3", "DELETE 1",
                                              "CREATE INDEX", "CREATE VIEW", "SELECT 0",
                                              "DROP VIEW", "DROP TABLE"}));
    EXPECT_STREQ(PQcmdTuples(rs[2].get()), "3");
    EXPECT_EQ(PQnfields(rs[6].get()), 1);  // RowDescription even without rows
}

TEST_F(simple_query, errors_carry_sqlstate_and_the_connection_stays_usable) {
    auto c = connect();
    ASSERT_EQ(PQresultStatus(exec(c.get(), "CREATE TABLE u (id INTEGER PRIMARY KEY)").get()),
              PGRES_COMMAND_OK);
    struct {
        const char* sql;
        const char* state;
    } cases[] = {
        {"SELEC 1", "42601"},
        {"SELECT * FROM nowhere", "42P01"},
        {"SELECT nocolumn FROM u", "42703"},
        {"INSERT INTO u VALUES (1), (1)", "23505"},
        {"SHOW no_such_parameter", "42704"},
        {"SET statement_timeout = 'soon'", "22023"},
        {"SET client_encoding = 'LATIN1'", "22023"},
        {"SET server_version = '1'", "55P02"},
    };
    for (auto& tc : cases) {
        auto r = exec(c.get(), tc.sql);
        EXPECT_EQ(PQresultStatus(r.get()), PGRES_FATAL_ERROR) << tc.sql;
        EXPECT_EQ(sqlstate_of(r.get()), tc.state)
            << tc.sql << ": " << PQresultErrorMessage(r.get());
        EXPECT_STREQ(PQresultErrorField(r.get(), PG_DIAG_SEVERITY_NONLOCALIZED), "ERROR");
        EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
        auto ok = exec(c.get(), "SELECT 1");
        EXPECT_STREQ(PQgetvalue(ok.get(), 0, 0), "1") << "after " << tc.sql;
    }
}

TEST_F(simple_query, an_error_skips_the_rest_of_the_string) {
    auto c = connect();
    auto rs =
        exec_all(c.get(), "CREATE TABLE a (x INTEGER); SELECT * FROM missing; CREATE TABLE b (x INTEGER)");
    ASSERT_EQ(rs.size(), 2u);
    EXPECT_STREQ(PQcmdStatus(rs[0].get()), "CREATE TABLE");
    EXPECT_EQ(sqlstate_of(rs[1].get()), "42P01");
    auto r = exec(c.get(), "SELECT * FROM b");
    EXPECT_EQ(sqlstate_of(r.get()), "42P01") << "b must not exist";
    r = exec(c.get(), "SELECT count(*) FROM a");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "0");
}

TEST_F(simple_query, empty_queries) {
    auto c = connect();
    for (const char* sql : {"", "  ", ";", "-- nothing\n", "/* nothing */ ;"}) {
        auto r = exec(c.get(), sql);
        EXPECT_EQ(PQresultStatus(r.get()), PGRES_EMPTY_QUERY) << "'" << sql << "'";
    }
}

TEST_F(simple_query, transaction_status_follows_postgres) {
    auto c = connect();
    ASSERT_EQ(PQresultStatus(exec(c.get(), "CREATE TABLE tx (a INTEGER)").get()), PGRES_COMMAND_OK);
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "BEGIN").get()), "BEGIN");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_INTRANS);
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "INSERT INTO tx VALUES (1)").get()), "INSERT 0 1");
    auto bad = exec(c.get(), "SELECT * FROM missing");
    EXPECT_EQ(sqlstate_of(bad.get()), "42P01");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_INERROR);
    auto ignored = exec(c.get(), "SELECT 1");
    EXPECT_EQ(sqlstate_of(ignored.get()), "25P02");
    ignored = exec(c.get(), "SET sluice.max_rows = 5");
    EXPECT_EQ(sqlstate_of(ignored.get()), "25P02");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_INERROR);
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "ROLLBACK").get()), "ROLLBACK");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    auto n = exec(c.get(), "SELECT count(*) FROM tx");
    EXPECT_STREQ(PQgetvalue(n.get(), 0, 0), "0") << "the insert was rolled back";
}

TEST_F(simple_query, commit_of_a_failed_transaction_rolls_back) {
    auto c = connect();
    auto rs =
        exec_all(c.get(), "CREATE TABLE f (a INTEGER); BEGIN; INSERT INTO f VALUES (1); SELECT 1/0 FROM nope");
    EXPECT_EQ(sqlstate_of(rs.back().get()), "42P01");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_INERROR);
    auto r = exec(c.get(), "COMMIT");
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK);
    EXPECT_STREQ(PQcmdStatus(r.get()), "ROLLBACK");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT count(*) FROM f").get(), 0, 0), "0");
}

TEST_F(simple_query, transaction_commands_in_postgres_spelling) {
    auto c = connect();
    std::vector<std::string> notices;  // SQLSTATEs of the warnings
    PQsetNoticeReceiver(
        c.get(),
        [](void* arg, const PGresult* r) {
            static_cast<std::vector<std::string>*>(arg)->push_back(sqlstate_of(r));
        },
        &notices);
    ASSERT_EQ(PQresultStatus(exec(c.get(), "CREATE TABLE s (a INTEGER)").get()), PGRES_COMMAND_OK);
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "START TRANSACTION ISOLATION LEVEL SERIALIZABLE").get()),
                 "BEGIN");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_INTRANS);
    // BEGIN inside a transaction: a warning, not an error.
    EXPECT_EQ(PQresultStatus(exec(c.get(), "BEGIN").get()), PGRES_COMMAND_OK);
    exec(c.get(), "INSERT INTO s VALUES (1)");
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "COMMIT WORK").get()), "COMMIT");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "BEGIN READ WRITE").get()), "BEGIN");
    exec(c.get(), "INSERT INTO s VALUES (2)");
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "ABORT").get()), "ROLLBACK");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    // COMMIT outside a transaction: a warning, as in PostgreSQL.
    auto r = exec(c.get(), "COMMIT");
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK);
    EXPECT_EQ(notices, (std::vector<std::string>{"25001", "25P01"}));
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT group_concat(a) FROM s").get(), 0, 0), "1");
}

TEST_F(simple_query, set_and_show) {
    auto c = connect();
    for (const char* sql :
         {"SET DateStyle = 'ISO'", "SET extra_float_digits = 3", "SET client_encoding TO 'UTF8'",
          "SET TIME ZONE 'UTC'",
          "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL READ COMMITTED",
          "SET search_path = public, other", "SET my.custom = 12"}) {
        auto r = exec(c.get(), sql);
        EXPECT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK)
            << sql << PQresultErrorMessage(r.get());
        EXPECT_STREQ(PQcmdStatus(r.get()), "SET") << sql;
    }
    auto r = exec(c.get(), "SHOW statement_timeout");
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK);
    EXPECT_STREQ(PQfname(r.get(), 0), "statement_timeout");
    EXPECT_EQ(PQftype(r.get(), 0), 25u);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "30s");
    EXPECT_STREQ(PQcmdStatus(r.get()), "SHOW");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW datestyle").get(), 0, 0), "ISO, MDY");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "show search_path").get(), 0, 0), "public, other");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW my.custom").get(), 0, 0), "12");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW sluice.max_rows").get(), 0, 0), "1000000");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW TRANSACTION ISOLATION LEVEL").get(), 0, 0),
                 "serializable");
    auto all = exec(c.get(), "SHOW ALL");
    EXPECT_EQ(PQnfields(all.get()), 3);
    EXPECT_GT(PQntuples(all.get()), 10);
    auto v = exec(c.get(), "select version()");
    // PostgreSQL's form first (drivers parse it), then Sluice's version and commit.
    const std::string text = PQgetvalue(v.get(), 0, 0);
    EXPECT_EQ(text.rfind("PostgreSQL 15.0 on ", 0), 0u) << text;
    EXPECT_NE(text.find(", DuckDB v"), std::string::npos) << text;
    EXPECT_NE(text.find(" engine (Sluice " + std::string(sluice::version()) + " "),
              std::string::npos)
        << text;
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "RESET ALL").get()), "RESET");
    EXPECT_EQ(sqlstate_of(exec(c.get(), "SHOW my.custom").get()), "42704");
    exec(c.get(), "SET sluice.max_rows = 2");
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "DISCARD ALL").get()), "DISCARD ALL");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW sluice.max_rows").get(), 0, 0), "1000000");
}

TEST_F(simple_query, limits_via_set_are_clamped_to_the_engine_defaults) {
    auto c = connect();
    exec(c.get(), "SET statement_timeout = '1h'");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW statement_timeout").get(), 0, 0), "30s");
    exec(c.get(), "SET statement_timeout TO 1500");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW statement_timeout").get(), 0, 0), "1500ms");
    exec(c.get(), "SET statement_timeout = 0");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW statement_timeout").get(), 0, 0), "30s");
    exec(c.get(), "SET sluice.max_rows = 10");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW sluice.max_rows").get(), 0, 0), "10");
    exec(c.get(), "SET sluice.max_rows TO DEFAULT");
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW sluice.max_rows").get(), 0, 0), "1000000");
}

}  // namespace
}  // namespace sluice::sql::pg::test

// The extended query protocol: libpq's prepared statements, parameters and results
// in text and binary, Describe, pipelines with errors, and (through the raw client)
// Execute with a row count and PortalSuspended.

#include <endian.h>

#include <cstring>

#include "pg_test_util.h"

namespace sluice::sql::pg::test {
namespace {

using extended_query = pg_fixture;

std::string be64(int64_t v) {
    uint64_t b = htobe64(static_cast<uint64_t>(v));
    return std::string(reinterpret_cast<const char*>(&b), 8);
}
std::string be32s(int32_t v) {
    uint32_t b = htobe32(static_cast<uint32_t>(v));
    return std::string(reinterpret_cast<const char*>(&b), 4);
}
std::string be16s(int16_t v) {
    uint16_t b = htobe16(static_cast<uint16_t>(v));
    return std::string(reinterpret_cast<const char*>(&b), 2);
}
std::string f64(double d) {
    uint64_t u;
    std::memcpy(&u, &d, 8);
    return be64(static_cast<int64_t>(u));
}
int32_t read_be32(const char* p) {
    uint32_t u;
    std::memcpy(&u, p, 4);
    return static_cast<int32_t>(be32toh(u));
}
int64_t read_be64(const char* p) {
    uint64_t u;
    std::memcpy(&u, p, 8);
    return static_cast<int64_t>(be64toh(u));
}

TEST_F(extended_query, prepared_statement_with_text_parameters) {
    auto c = connect();
    ASSERT_EQ(
        PQresultStatus(exec(c.get(), "CREATE TABLE p (id INTEGER, name TEXT, data BLOB)").get()),
        PGRES_COMMAND_OK);
    result_ptr prep(PQprepare(c.get(), "ins", "INSERT INTO p VALUES ($1, $2, $3)", 3, nullptr));
    ASSERT_EQ(PQresultStatus(prep.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(prep.get());
    for (int i = 1; i <= 3; ++i) {
        std::string id = std::to_string(i), name = "n" + id;
        const char* values[] = {id.c_str(), name.c_str(), nullptr};
        result_ptr r(PQexecPrepared(c.get(), "ins", 3, values, nullptr, nullptr, 0));
        ASSERT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(r.get());
        EXPECT_STREQ(PQcmdStatus(r.get()), "INSERT 0 1");
    }
    prep.reset(PQprepare(c.get(), "sel", "SELECT id, name, data FROM p WHERE id >= $1 ORDER BY id",
                         0, nullptr));
    ASSERT_EQ(PQresultStatus(prep.get()), PGRES_COMMAND_OK);
    result_ptr d(PQdescribePrepared(c.get(), "sel"));
    ASSERT_EQ(PQresultStatus(d.get()), PGRES_COMMAND_OK);
    EXPECT_EQ(PQnparams(d.get()), 1);
    EXPECT_EQ(PQparamtype(d.get(), 0), 25u);  // unspecified parameters are text
    ASSERT_EQ(PQnfields(d.get()), 3);
    EXPECT_EQ(PQftype(d.get(), 0), 23u);  // id INTEGER: int4
    EXPECT_EQ(PQftype(d.get(), 1), 25u);
    EXPECT_EQ(PQftype(d.get(), 2), 17u);
    const char* two[] = {"2"};
    result_ptr r(PQexecPrepared(c.get(), "sel", 1, two, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    ASSERT_EQ(PQntuples(r.get()), 2);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "2");
    EXPECT_STREQ(PQgetvalue(r.get(), 1, 1), "n3");
    EXPECT_TRUE(PQgetisnull(r.get(), 1, 2));
    EXPECT_STREQ(PQcmdStatus(r.get()), "SELECT 2");
    // The same statement again: prepared statements are reusable.
    r.reset(PQexecPrepared(c.get(), "sel", 1, two, nullptr, nullptr, 0));
    EXPECT_EQ(PQntuples(r.get()), 2);
}

TEST_F(extended_query, binary_parameters_of_every_type) {
    auto c = connect();
    // int8, int4, int2, float8, float4, text, bytea, bool
    Oid types[] = {20, 23, 21, 701, 700, 25, 17, 16};
    result_ptr prep(PQprepare(c.get(), "all",
                              "SELECT $1, $2, $3, $4, $5, $6, hex($7), $8, typeof($7)", 8, types));
    ASSERT_EQ(PQresultStatus(prep.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(prep.get());
    result_ptr d(PQdescribePrepared(c.get(), "all"));
    ASSERT_EQ(PQnparams(d.get()), 8);
    EXPECT_EQ(PQparamtype(d.get(), 0), 20u);
    EXPECT_EQ(PQparamtype(d.get(), 6), 17u);
    float f = 0.5f;
    uint32_t fbits;
    std::memcpy(&fbits, &f, 4);
    std::string vals[] = {be64(-5000000000LL),
                          be32s(-7),
                          be16s(300),
                          f64(2.25),
                          be32s(static_cast<int32_t>(fbits)),
                          "héllo",
                          std::string("\0\x01\xff", 3),
                          std::string(1, '\1')};
    const char* values[8];
    int lengths[8];
    int formats[8];
    for (int i = 0; i < 8; ++i) {
        values[i] = vals[i].data();
        lengths[i] = static_cast<int>(vals[i].size());
        formats[i] = 1;
    }
    result_ptr r(PQexecPrepared(c.get(), "all", 8, values, lengths, formats, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "-5000000000");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 1), "-7");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 2), "300");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 3), "2.25");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 4), "0.5");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 5), "héllo");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 6), "0001FF");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 7), "t");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 8), "BLOB");

    // A wrong width is 22P03, and the connection goes on.
    lengths[0] = 4;
    r.reset(PQexecPrepared(c.get(), "all", 8, values, lengths, formats, 0));
    EXPECT_EQ(sqlstate_of(r.get()), "22P03");
    r.reset(PQexec(c.get(), "SELECT 1"));
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK);
}

TEST_F(extended_query, binary_results) {
    auto c = connect();
    ASSERT_EQ(PQresultStatus(exec(c.get(),
                                  "CREATE TABLE br (i INTEGER, r REAL, t TEXT, b BLOB, f BOOLEAN);"
                                  "INSERT INTO br VALUES (-2, 0.5, 'tx', '\\x0a\\x0b'::BLOB, true)")
                                 .get()),
              PGRES_COMMAND_OK);
    ASSERT_TRUE(PQsendQueryParams(c.get(), "SELECT i, r, t, b, f, i + 1 FROM br", 0, nullptr,
                                  nullptr, nullptr, nullptr, 1));
    result_ptr r(PQgetResult(c.get()));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    while (PGresult* extra = PQgetResult(c.get())) PQclear(extra);
    ASSERT_EQ(PQntuples(r.get()), 1);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(PQfformat(r.get(), i), 1);
    EXPECT_EQ(PQftype(r.get(), 0), 23u);  // INTEGER: int4, four bytes
    ASSERT_EQ(PQgetlength(r.get(), 0, 0), 4);
    EXPECT_EQ(read_be32(PQgetvalue(r.get(), 0, 0)), -2);
    ASSERT_EQ(PQgetlength(r.get(), 0, 1), 8);
    int64_t bits = read_be64(PQgetvalue(r.get(), 0, 1));
    double d;
    std::memcpy(&d, &bits, 8);
    EXPECT_EQ(d, 0.5);
    EXPECT_EQ(std::string(PQgetvalue(r.get(), 0, 2), PQgetlength(r.get(), 0, 2)), "tx");
    EXPECT_EQ(std::string(PQgetvalue(r.get(), 0, 3), PQgetlength(r.get(), 0, 3)), "\x0a\x0b");
    ASSERT_EQ(PQgetlength(r.get(), 0, 4), 1);
    EXPECT_EQ(PQgetvalue(r.get(), 0, 4)[0], 1);
    EXPECT_EQ(PQftype(r.get(), 5), 23u);  // INTEGER + 1 is an INTEGER
    EXPECT_EQ(read_be32(PQgetvalue(r.get(), 0, 5)), -1);
}

TEST_F(extended_query, unnamed_statements_with_params) {
    auto c = connect();
    const char* vals[] = {"41", "x"};
    result_ptr r(PQexecParams(c.get(), "SELECT $1::BIGINT + 1, $2 || 'y', $1::BIGINT * 0.5", 2,
                              nullptr, vals, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_EQ(PQftype(r.get(), 0), 20u);
    EXPECT_EQ(PQftype(r.get(), 1), 25u);
    EXPECT_EQ(PQftype(r.get(), 2), 1700u);  // bigint * 0.5 is a numeric, as in PostgreSQL
    EXPECT_EQ(PQfmod(r.get(), 2), -1);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "42");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 1), "xy");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 2), "20.5");
}

// numeric results: exact text with the scale, PostgreSQL's binary format (what JDBC reads
// after its prepareThreshold), and the modifier of a cast to numeric(p,s) only.
TEST_F(extended_query, numeric_results_in_text_and_binary) {
    auto c = connect();
    const char* sql = "SELECT CAST(12.5 AS NUMERIC(10,2)), CAST(-0.05 AS DECIMAL(6,4)) * 1";
    for (int format : {0, 1}) {
        result_ptr r(PQexecParams(c.get(), sql, 0, nullptr, nullptr, nullptr, nullptr, format));
        ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
        EXPECT_EQ(PQftype(r.get(), 0), 1700u);
        EXPECT_EQ(PQftype(r.get(), 1), 1700u);
        EXPECT_EQ(PQfmod(r.get(), 0), (10 << 16 | 2) + 4);
        EXPECT_EQ(PQfmod(r.get(), 1), -1);
        const std::string a(PQgetvalue(r.get(), 0, 0), PQgetlength(r.get(), 0, 0));
        const std::string b(PQgetvalue(r.get(), 0, 1), PQgetlength(r.get(), 0, 1));
        if (format == 0) {
            EXPECT_EQ(a, "12.50");
            EXPECT_EQ(b, "-0.0500");
        } else {
            // Digit count, weight, sign, display scale, base-10000 digits: 12.50 is
            // [12, 5000] with weight 0 and scale 2; -0.0500 is [500], weight -1, scale 4.
            EXPECT_EQ(a, std::string("\0\2\0\0\0\0\0\2\0\x0c\x13\x88", 12));
            EXPECT_EQ(b, std::string("\0\1\xff\xff\x40\0\0\4\x01\xf4", 10));
        }
    }
}

// Disabled: the engine binds parameters by position of first appearance (SQLite's
// numbering of "$2, $1" is 1, 2), not by their number; see the report on engine.h.
TEST_F(extended_query, parameters_by_number_not_by_position) {
    auto c = connect();
    const char* vals[] = {"first", "second"};
    result_ptr r(PQexecParams(c.get(), "SELECT $2, $1, $2", 2, nullptr, vals, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "second");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 1), "first");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 2), "second");
}

TEST_F(extended_query, errors_leave_the_connection_usable) {
    auto c = connect();
    result_ptr r(PQprepare(c.get(), "bad", "SELEC 1", 0, nullptr));
    EXPECT_EQ(sqlstate_of(r.get()), "42601");
    r.reset(PQprepare(c.get(), "two", "SELECT 1; SELECT 2", 0, nullptr));
    EXPECT_EQ(sqlstate_of(r.get()), "42601");
    r.reset(PQprepare(c.get(), "ok", "SELECT $1", 0, nullptr));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK);
    r.reset(PQprepare(c.get(), "ok", "SELECT 2", 0, nullptr));
    EXPECT_EQ(sqlstate_of(r.get()), "42P05");
    r.reset(PQexecPrepared(c.get(), "missing", 0, nullptr, nullptr, nullptr, 0));
    EXPECT_EQ(sqlstate_of(r.get()), "26000");
    r.reset(PQexecPrepared(c.get(), "ok", 0, nullptr, nullptr, nullptr, 0));
    EXPECT_EQ(sqlstate_of(r.get()), "08P01") << "one parameter is required";
    const char* one[] = {"1"};
    r.reset(PQexecPrepared(c.get(), "ok", 1, one, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "1");
    // DEALLOCATE frees the name.
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "DEALLOCATE ok").get()), "DEALLOCATE");
    r.reset(PQprepare(c.get(), "ok", "SELECT 2", 0, nullptr));
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK);
}

TEST_F(extended_query, a_pipeline_skips_to_sync_after_an_error) {
    auto c = connect();
    ASSERT_EQ(PQresultStatus(exec(c.get(), "CREATE TABLE pl (a INTEGER)").get()), PGRES_COMMAND_OK);
    ASSERT_TRUE(PQenterPipelineMode(c.get()));
    ASSERT_TRUE(PQsendQueryParams(c.get(), "INSERT INTO pl VALUES (1)", 0, nullptr, nullptr,
                                  nullptr, nullptr, 0));
    ASSERT_TRUE(PQsendQueryParams(c.get(), "SELECT * FROM missing", 0, nullptr, nullptr, nullptr,
                                  nullptr, 0));
    ASSERT_TRUE(PQsendQueryParams(c.get(), "INSERT INTO pl VALUES (2)", 0, nullptr, nullptr,
                                  nullptr, nullptr, 0));
    ASSERT_TRUE(PQpipelineSync(c.get()));
    ASSERT_TRUE(PQsendQueryParams(c.get(), "INSERT INTO pl VALUES (3)", 0, nullptr, nullptr,
                                  nullptr, nullptr, 0));
    ASSERT_TRUE(PQpipelineSync(c.get()));

    std::vector<ExecStatusType> statuses;
    std::vector<std::string> states;
    // Each query's results end with a null; each sync gives PGRES_PIPELINE_SYNC.
    for (int syncs = 0, polls = 0; syncs < 2 && polls < 100; ++polls) {
        PGresult* r = PQgetResult(c.get());
        if (!r) continue;
        statuses.push_back(PQresultStatus(r));
        states.push_back(sqlstate_of(r));
        if (PQresultStatus(r) == PGRES_PIPELINE_SYNC) ++syncs;
        PQclear(r);
    }
    ASSERT_TRUE(PQexitPipelineMode(c.get()));
    EXPECT_EQ(statuses, (std::vector<ExecStatusType>{PGRES_COMMAND_OK, PGRES_FATAL_ERROR,
                                                     PGRES_PIPELINE_ABORTED, PGRES_PIPELINE_SYNC,
                                                     PGRES_COMMAND_OK, PGRES_PIPELINE_SYNC}));
    EXPECT_EQ(states[1], "42P01");
    auto r = exec(c.get(), "SELECT group_concat(a) FROM pl");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "1,3");
}

TEST_F(extended_query, set_through_the_extended_protocol) {
    auto c = connect();
    result_ptr r(
        PQexecParams(c.get(), "SET sluice.max_rows = 3", 0, nullptr, nullptr, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_COMMAND_OK) << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQcmdStatus(r.get()), "SET");
    r.reset(
        PQexecParams(c.get(), "SHOW sluice.max_rows", 0, nullptr, nullptr, nullptr, nullptr, 0));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK);
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "3");
    r.reset(PQexecParams(c.get(), "VALUES (1), (2), (3), (4)", 0, nullptr, nullptr, nullptr,
                         nullptr, 0));
    EXPECT_EQ(sqlstate_of(r.get()), "54000");
}

TEST_F(extended_query, execute_with_max_rows_suspends_and_resumes) {
    raw_client rc(port());
    ASSERT_TRUE(rc.connected);
    ASSERT_EQ(types_of(rc.startup()).back(), 'Z');
    rc.send(raw_client::parse("s", "VALUES (1), (2), (3), (4), (5)") + raw_client::bind("", "s") +
            raw_client::describe('P', "") + raw_client::execute("", 2) +
            raw_client::execute("", 2) + raw_client::execute("", 2) + raw_client::sync());
    auto msgs = rc.read_until_ready();
    // ParseComplete, BindComplete, RowDescription, 2 rows + suspended, 2 rows + suspended,
    // the last row + CommandComplete, ReadyForQuery.
    ASSERT_EQ(types_of(msgs), "12TDDsDDsDCZ");
    std::vector<std::string> values;
    for (auto& m : msgs)
        if (m.type == 'D') values.push_back(raw_client::data_row(m.body)[0]);
    EXPECT_EQ(values, (std::vector<std::string>{"1", "2", "3", "4", "5"}));
    EXPECT_EQ(msgs[10].body, std::string("SELECT 1\0", 9));  // rows of the last Execute
    EXPECT_EQ(msgs.back().body, "I");

    // Describe of the statement: no parameters, one text column (an expression, not
    // stepped); an Execute without a Describe of the portal keeps to it.
    rc.send(raw_client::describe('S', "s") + raw_client::bind("p", "s") +
            raw_client::execute("p", 0) + raw_client::sync());
    msgs = rc.read_until_ready();
    ASSERT_EQ(types_of(msgs), "tT2DDDDDCZ");
}

TEST_F(extended_query, empty_statement_and_errors_until_sync_on_the_wire) {
    raw_client rc(port());
    ASSERT_TRUE(rc.connected);
    rc.startup();
    rc.send(raw_client::parse("", "") + raw_client::bind("", "") + raw_client::describe('P', "") +
            raw_client::execute("", 0) + raw_client::sync());
    EXPECT_EQ(types_of(rc.read_until_ready()), "12nIZ");
    // An error discards the messages up to Sync, which still answers.
    rc.send(raw_client::parse("", "SELECT * FROM missing") + raw_client::bind("", "") +
            raw_client::execute("", 0) + raw_client::sync() + raw_client::query("SELECT 7"));
    auto msgs = rc.read_until_ready();
    ASSERT_EQ(types_of(msgs), "EZ");
    EXPECT_EQ(raw_client::error_field(msgs[0].body, 'C'), "42P01");
    msgs = rc.read_until_ready();
    ASSERT_EQ(types_of(msgs), "TDCZ");
    EXPECT_EQ(raw_client::data_row(msgs[1].body)[0], "7");
    // Close of a statement and a portal that do not exist is fine.
    rc.send(raw_client::msg('C', "Snope" + std::string(1, '\0')) +
            raw_client::msg('C', "Pnope" + std::string(1, '\0')) + raw_client::sync());
    EXPECT_EQ(types_of(rc.read_until_ready()), "33Z");
}

}  // namespace
}  // namespace sluice::sql::pg::test

#include "sql/http/http_server.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include "../sql/duck_test_engine.h"
#include "sql_http/test_client.h"

namespace sluice::sql {
namespace {

using sluice::testing::http_reply;
using sluice::testing::test_conn;
using std::chrono::steady_clock;

// Bodies compare without the one member that varies.
std::string without_elapsed(const std::string& body) {
    static const std::regex elapsed("\"elapsed_ms\":[0-9.]+");
    return std::regex_replace(body, elapsed, "\"elapsed_ms\":X");
}

// An endless statement: a filtered count over 10^11 numbers, producing no row for minutes.
constexpr const char* endless =
    "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3";

class HttpServerTest : public ::testing::Test {
  protected:
    void SetUp() override { start({}); }

    void start(http_options opts) {
        char tmpl[] = "/tmp/sql-http-test-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        _dir = tmpl;
        auto e = test::open_duck_test_engine({.data_dir = _dir}, _logs);
        ASSERT_TRUE(e) << e.error().message;
        _eng = std::move(*e);
        auto s = http_server::start({"127.0.0.1", 0}, *_eng, std::move(opts));
        ASSERT_TRUE(s) << s.err().message;
        _srv = std::move(*s);
        _port = _srv->address().port;
    }

    void TearDown() override {
        if (_srv) _srv->stop();
        _srv.reset();
        _eng.reset();
        if (_logs) _logs->close();
        if (!_dir.empty()) std::filesystem::remove_all(_dir);
    }

    http_reply post(const std::string& sql, const std::string& query = "",
                    const std::string& headers = "") {
        test_conn c(_port);
        EXPECT_TRUE(c.connected());
        EXPECT_TRUE(c.request("POST", "/v1/sql" + query, sql, headers));
        auto r = c.read_reply();
        EXPECT_TRUE(r) << "no reply to " << sql;
        return r.value_or(http_reply{});
    }

    // Posts and expects 200.
    std::string ok(const std::string& sql, const std::string& query = "") {
        auto r = post(sql, query);
        EXPECT_EQ(r.status, 200) << sql << " -> " << r.body;
        return r.body;
    }

    void make_every_type_table() {
        ok("CREATE TABLE t(id INTEGER, i BIGINT, r DOUBLE, s TEXT, b BLOB, bin BLOB, n INTEGER);"
           "INSERT INTO t VALUES (1, -7, 2.5, 'say \"hi\", then"
           "\n"
           "bye é😀', "
           "CAST('{\"k\":1}' AS BLOB), '\\x00\\xff\\x01'::BLOB, NULL);"
           "INSERT INTO t VALUES (2, 9007199254740993, 1e300, '', ''::BLOB, NULL, 3)");
    }

    std::string _dir;
    std::unique_ptr<log::log_manager> _logs;
    std::unique_ptr<engine> _eng;
    std::unique_ptr<http_server> _srv;
    int _port = 0;
};

TEST_F(HttpServerTest, Health) {
    test_conn c(_port);
    ASSERT_TRUE(c.request("GET", "/v1/health"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "{\"status\":\"ok\"}\n");
    EXPECT_EQ(r->header("content-type"), "application/json");
}

TEST_F(HttpServerTest, HeadIsGetWithoutTheBody) {
    test_conn c(_port);
    ASSERT_TRUE(c.request("HEAD", "/v1/health"));
    auto r = c.read_reply(true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->header("content-length"), "16");
    ASSERT_TRUE(c.request("HEAD", "/v1/nothing"));
    r = c.read_reply(true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    // Nothing of a body came before the next answer.
    ASSERT_TRUE(c.request("GET", "/v1/health"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "{\"status\":\"ok\"}\n");
}

TEST_F(HttpServerTest, EveryTypeAsJson) {
    make_every_type_table();
    auto r = post("SELECT i, r, s, b, bin, n, i + CAST(0.5 AS DOUBLE) AS e FROM t ORDER BY id");
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.header("content-type"), "application/json");
    // Every column has its type, the expression e too.
    EXPECT_EQ(without_elapsed(r.body),
              "{\"columns\":[{\"name\":\"i\",\"type\":\"INTEGER\"},{\"name\":\"r\",\"type\":"
              "\"REAL\"},{\"name\":\"s\",\"type\":\"TEXT\"},{\"name\":\"b\",\"type\":\"BLOB\"},"
              "{\"name\":\"bin\",\"type\":\"BLOB\"},{\"name\":\"n\",\"type\":\"INTEGER\"},"
              "{\"name\":\"e\",\"type\":\"REAL\"}],\"rows\":[\n"
              "[-7,2.5,\"say \\\"hi\\\", then\\nbye é😀\",\"{\\\"k\\\":1}\",{\"base64\":\"AP8B\"},"
              "null,-6.5],\n"
              "[9007199254740993,1e+300,\"\",\"\",null,3,9007199254740992.0]\n"
              "],\"row_count\":2,\"elapsed_ms\":X}\n");
}

TEST_F(HttpServerTest, EveryTypeAsCsvAndNdjson) {
    make_every_type_table();
    const std::string q = "SELECT i, r, s, b, bin AS n FROM t ORDER BY id";
    auto csv = post(q, "?format=csv");
    EXPECT_EQ(csv.status, 200);
    EXPECT_EQ(csv.header("content-type"), "text/csv; charset=utf-8; header=present");
    const std::string expected_csv =
        "i,r,s,b,n\r\n"
        "-7,2.5,\"say \"\"hi\"\", then\nbye é😀\",\"{\"\"k\"\":1}\",AP8B\r\n"
        "9007199254740993,1e+300,\"\",\"\",\r\n";
    EXPECT_EQ(csv.body, expected_csv);
    // The same through the Accept header.
    EXPECT_EQ(post(q, "", "Accept: text/csv\r\n").body, expected_csv);

    auto nd = post(q, "", "Accept: application/x-ndjson\r\n");
    EXPECT_EQ(nd.status, 200);
    EXPECT_EQ(nd.header("content-type"), "application/x-ndjson");
    EXPECT_EQ(nd.body,
              "{\"i\":-7,\"r\":2.5,\"s\":\"say \\\"hi\\\", then\\nbye é😀\",\"b\":\"{\\\"k\\\":1}\","
              "\"n\":{\"base64\":\"AP8B\"}}\n"
              "{\"i\":9007199254740993,\"r\":1e+300,\"s\":\"\",\"b\":\"\",\"n\":null}\n");
}

TEST_F(HttpServerTest, StatementsWithoutRowsAndTheLastResult) {
    EXPECT_EQ(without_elapsed(ok("CREATE TABLE k(x INTEGER)")),
              "{\"columns\":[],\"rows\":[],\"command\":\"CREATE\",\"changes\":0,"
              "\"elapsed_ms\":X}\n");
    EXPECT_EQ(without_elapsed(ok("INSERT INTO k VALUES (1), (2); -- two rows\n")),
              "{\"columns\":[],\"rows\":[],\"command\":\"INSERT\",\"changes\":2,"
              "\"elapsed_ms\":X}\n");
    // Several statements: every one runs, the last one's result is the answer.
    auto body =
        ok("SELECT 'dropped'; INSERT INTO k VALUES (3); SELECT sum(x) AS s FROM k;", "?format=csv");
    EXPECT_EQ(body, "s\r\n6\r\n");
    EXPECT_EQ(ok("UPDATE k SET x = x * 10 WHERE x > 1", "?format=ndjson"),
              "{\"command\":\"UPDATE\",\"changes\":2}\n");
}

TEST_F(HttpServerTest, AnOpenTransactionIsRolledBack) {
    ok("CREATE TABLE k(x INTEGER)");
    ok("BEGIN; INSERT INTO k VALUES (1)");
    EXPECT_EQ(ok("SELECT count(*) AS n FROM k", "?format=csv"), "n\r\n0\r\n");
    ok("BEGIN; INSERT INTO k VALUES (1); COMMIT");
    EXPECT_EQ(ok("SELECT count(*) AS n FROM k", "?format=csv"), "n\r\n1\r\n");
}

TEST_F(HttpServerTest, Parameters) {
    EXPECT_EQ(ok("SELECT $1 AS a, $2 AS b, $3 AS c, typeof($4) AS d",
                 "?format=csv&param=42&param=1.5&param=a%2Cb&param=007"),
              "a,b,c,d\r\n42,1.5,\"a,b\",VARCHAR\r\n");
    auto r = post("SELECT $1, $2", "?param=1");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("\"sqlstate\":\"22023\""), std::string::npos) << r.body;
}

TEST_F(HttpServerTest, ErrorsBeforeAnyRowAre400) {
    auto r = post("SELEC 1");
    EXPECT_EQ(r.status, 400);
    EXPECT_EQ(r.header("content-type"), "application/json");
    EXPECT_NE(r.body.find("{\"error\":{\"kind\":\"syntax\",\"sqlstate\":\"42601\",\"message\":"),
              std::string::npos)
        << r.body;
    r = post("SELECT * FROM no_such_table");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("\"sqlstate\":\"42P01\""), std::string::npos) << r.body;
    r = post("  -- nothing\n;");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("\"sqlstate\":\"42601\""), std::string::npos) << r.body;
    // A later statement failing stops the request.
    r = post("SELECT 1; SELECT * FROM nope; SELECT 2");
    EXPECT_EQ(r.status, 400);
}

TEST_F(HttpServerTest, BadOptionsAre400) {
    for (const char* q : {"?timeout_ms=abc", "?timeout_ms=0", "?max_rows=-1", "?format=xml",
                          "?nonsense=1", "?param=%zz"}) {
        auto r = post("SELECT 1", q);
        EXPECT_EQ(r.status, 400) << q;
        EXPECT_NE(r.body.find("\"sqlstate\":\"22023\""), std::string::npos) << q << r.body;
    }
    // Above the engine's limits: clamped, not refused.
    EXPECT_EQ(ok("SELECT 1 AS x",
                 "?format=csv&timeout_ms=99999999999999999999&max_rows="
                 "99999999999"),
              "x\r\n1\r\n");
}

TEST_F(HttpServerTest, TimeLimitIsA400InBoundedTime) {
    auto t0 = steady_clock::now();
    auto r = post(endless, "?timeout_ms=200");
    auto took = steady_clock::now() - t0;
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("\"kind\":\"timeout\",\"sqlstate\":\"57014\""), std::string::npos)
        << r.body;
    EXPECT_LT(took, std::chrono::seconds(5));
}

TEST_F(HttpServerTest, RowLimit) {
    const std::string q =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100) "
        "SELECT x FROM c";
    auto r = post(q, "?max_rows=5");
    EXPECT_EQ(r.status, 400);
    EXPECT_NE(r.body.find("\"kind\":\"row_limit\",\"sqlstate\":\"54000\""), std::string::npos)
        << r.body;
    EXPECT_NE(ok(q, "?max_rows=100").find("\"row_count\":100"), std::string::npos);
}

TEST_F(HttpServerTest, ErrorAfterStreamingStartsEndsTheBody) {
    // 3000 rows of ~100 bytes: past the 64 KiB held back, so the 200 is committed when
    // the row limit strikes.
    const std::string q =
        "SELECT x, repeat('y', 90) AS pad FROM range(1, 5001) c(x)";
    auto r = post(q, "?max_rows=3000");
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.chunked);
    auto tail = r.body.substr(r.body.size() - 400);
    EXPECT_NE(tail.find("],\"row_count\":3000,\"error\":{\"kind\":\"row_limit\",\"sqlstate\":"
                        "\"54000\""),
              std::string::npos)
        << tail;
    auto csv = post(q, "?max_rows=3000&format=csv");
    EXPECT_EQ(csv.status, 200);
    auto last = csv.body.substr(csv.body.rfind("\r\n", csv.body.size() - 3) + 2);
    EXPECT_EQ(last.rfind("#error,row_limit,54000,", 0), 0u) << last;
}

TEST_F(HttpServerTest, LargeResultStreams) {
    auto t0 = steady_clock::now();
    auto r = post(
        "SELECT x FROM generate_series(1, 200000) AS c(x)",
        "?format=csv");
    EXPECT_EQ(r.status, 200);
    EXPECT_TRUE(r.chunked);
    EXPECT_EQ(r.body.rfind("x\r\n1\r\n2\r\n", 0), 0u);
    EXPECT_EQ(r.body.substr(r.body.size() - 10), "\r\n200000\r\n");
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(20));
}

TEST_F(HttpServerTest, KeepAliveAndPipelining) {
    test_conn c(_port);
    ASSERT_TRUE(c.request("POST", "/v1/sql?format=csv", "SELECT 1 AS a"));
    auto r1 = c.read_reply();
    ASSERT_TRUE(r1);
    EXPECT_EQ(r1->body, "a\r\n1\r\n");
    EXPECT_EQ(r1->header("connection"), "");
    ASSERT_TRUE(c.request("POST", "/v1/sql?format=csv", "SELECT 2 AS b"));
    auto r2 = c.read_reply();
    ASSERT_TRUE(r2);
    EXPECT_EQ(r2->body, "b\r\n2\r\n");
    // Two requests in one write.
    ASSERT_TRUE(c.send(
        "GET /v1/health HTTP/1.1\r\nHost: h\r\n\r\n"
        "POST /v1/sql?format=csv HTTP/1.1\r\nHost: h\r\nContent-Length: 13\r\n\r\nSELECT 3 AS c"));
    auto r3 = c.read_reply();
    auto r4 = c.read_reply();
    ASSERT_TRUE(r3 && r4);
    EXPECT_EQ(r3->status, 200);
    EXPECT_EQ(r4->body, "c\r\n3\r\n");
    // Connection: close is honoured.
    ASSERT_TRUE(c.request("GET", "/v1/health", "", "Connection: close\r\n"));
    auto r5 = c.read_reply();
    ASSERT_TRUE(r5);
    EXPECT_EQ(r5->header("connection"), "close");
    EXPECT_TRUE(c.closed_within(2000));
}

TEST_F(HttpServerTest, ChunkedRequestAndExpectContinue) {
    test_conn c(_port);
    ASSERT_TRUE(
        c.send("POST /v1/sql?format=csv HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
               "7\r\nSELECT \r\n6\r\n5 AS x\r\n0\r\n\r\n"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "x\r\n5\r\n");
    ASSERT_TRUE(
        c.send("POST /v1/sql?format=csv HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n"
               "Content-Length: 13\r\n\r\n"));
    // The client waits for "100 Continue" before the body.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(c.send("SELECT 6 AS y"));
    r = c.read_reply();  // skips the 100
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "y\r\n6\r\n");
}

TEST_F(HttpServerTest, Http10GetsABodyEndedByClose) {
    test_conn c(_port);
    ASSERT_TRUE(
        c.send("POST /v1/sql?format=csv HTTP/1.0\r\nContent-Length: 13\r\n\r\nSELECT 7 AS z"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "z\r\n7\r\n");
    EXPECT_TRUE(c.closed_within(2000));
}

TEST_F(HttpServerTest, Http10KeepAliveIsAnsweredKeepAlive) {
    // An HTTP/1.0 client (ApacheBench -k) keeps the connection only when the answer says
    // so; without the header it waits for the end of a body it already has.
    test_conn c(_port);
    for (int i = 0; i < 2; ++i) {
        ASSERT_TRUE(c.send("GET /v1/health HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"));
        auto r = c.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 200);
        EXPECT_EQ(r->header("connection"), "keep-alive");
    }
}

TEST_F(HttpServerTest, MalformedRequestsAnd404And405) {
    struct bad {
        std::string bytes;
        int status;
    };
    std::vector<bad> cases = {
        {"garbage garbage garbage\r\n\r\n", 400},
        {"GET /v1/health HTTP/1.1\r\nHost: h\r\nX: " + std::string(100 * 1024, 'a') + "\r\n\r\n",
         431},
        {"POST /v1/sql HTTP/1.1\r\nHost: h\r\nContent-Length: abc\r\n\r\n", 400},
        {"POST /v1/sql HTTP/1.1\r\nHost: h\r\nContent-Length: 5000000\r\n\r\n", 413},
        {"POST /v1/sql HTTP/1.1\r\nHost: h\r\n\r\n", 411},
    };
    for (const auto& c : cases) {
        test_conn conn(_port);
        ASSERT_TRUE(conn.send(c.bytes));
        auto r = conn.read_reply();
        ASSERT_TRUE(r) << c.bytes.substr(0, 40);
        EXPECT_EQ(r->status, c.status) << c.bytes.substr(0, 40);
        EXPECT_EQ(r->header("connection"), "close");
        EXPECT_NE(r->body.find("{\"error\":{\"kind\":"), std::string::npos);
        EXPECT_TRUE(conn.closed_within(3000));
    }
    test_conn c(_port);
    ASSERT_TRUE(c.request("GET", "/v1/nothing"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404);
    EXPECT_NE(r->body.find("\"kind\":\"not_found\""), std::string::npos);
    // The connection survives a 404 and a 405.
    ASSERT_TRUE(c.request("GET", "/v1/sql"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 405);
    EXPECT_EQ(r->header("allow"), "POST");
    // And the server still serves.
    EXPECT_EQ(post("SELECT 1 AS x", "?format=csv").body, "x\r\n1\r\n");
}

TEST_F(HttpServerTest, AddedRoutes) {
    _srv->add_route("DELETE", "/v1/expansions/*",
                    [](const http::http_request& req, http::http_response& resp) {
                        resp.send(200, "text/plain", "deleted " + req.path_suffix);
                    });
    _srv->add_route("GET", "/v1/silent", [](const http::http_request&, http::http_response&) {});
    test_conn c(_port);
    ASSERT_TRUE(c.request("DELETE", "/v1/expansions/orders"));
    auto r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "deleted orders");
    ASSERT_TRUE(c.request("GET", "/v1/silent"));
    r = c.read_reply();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 500);
}

TEST_F(HttpServerTest, ClientThatDisconnectsCancelsItsQuery) {
    // One connection at a time: the next one is served only once the first one's
    // thread, busy with an endless statement, has noticed the client leave.
    TearDown();
    http_options opts;
    opts.max_connections = 1;
    start(std::move(opts));
    {
        test_conn c(_port);
        ASSERT_TRUE(c.request("POST", "/v1/sql", endless));
        std::this_thread::sleep_for(std::chrono::milliseconds(200));  // running now
        // A connection takes a slot once its request head is in: this one is refused
        // (the only slot runs a statement and is not idle, so it cannot give way).
        test_conn busy(_port);
        ASSERT_TRUE(busy.request("GET", "/v1/health"));
        auto r = busy.read_reply();
        ASSERT_TRUE(r);
        EXPECT_EQ(r->status, 503);
    }  // the client hangs up
    auto t0 = steady_clock::now();
    int status = 0;
    while (steady_clock::now() - t0 < std::chrono::seconds(10)) {
        test_conn c(_port);
        if (c.request("GET", "/v1/health")) {
            if (auto r = c.read_reply()) status = r->status;
        }
        if (status == 200) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(status, 200);
    // Well before the engine's own 30 s limit.
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
    // Queries run again (once the health check's connection has gone: one at a time).
    http_reply r;
    for (int i = 0; i < 100; ++i) {
        r = post("SELECT 1 AS x", "?format=csv");
        if (r.status != 503) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(r.body, "x\r\n1\r\n");
}

TEST_F(HttpServerTest, StopCancelsRunningQueries) {
    std::thread client([&] {
        test_conn c(_port, 20000);
        c.request("POST", "/v1/sql", endless);
        c.read_reply();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    auto t0 = steady_clock::now();
    _srv->stop();
    EXPECT_LT(steady_clock::now() - t0, std::chrono::seconds(5));
    client.join();
}

}  // namespace
}  // namespace sluice::sql

// Limits, cancellation and robustness: row and time limits via SET, CancelRequest, a
// client that leaves mid-query, stop() with a query running, malformed input, and the
// connection limit.

#include <atomic>
#include <future>
#include <random>

#include "pg_test_util.h"

namespace sluice::sql::pg::test {
namespace {

using namespace std::chrono_literals;
using limits_and_robustness = pg_fixture;

TEST_F(limits_and_robustness, row_limit_via_set) {
    auto c = connect();
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "SET sluice.max_rows = 5").get()), "SET");
    const char* rows =
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {}) "
        "SELECT x FROM c";
    auto q = [&](int n) {
        std::string s = rows;
        return s.replace(s.find("{}"), 2, std::to_string(n));
    };
    auto r = exec(c.get(), q(5));
    ASSERT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
    EXPECT_EQ(PQntuples(r.get()), 5);
    r = exec(c.get(), q(10));
    EXPECT_EQ(PQresultStatus(r.get()), PGRES_FATAL_ERROR);
    EXPECT_EQ(sqlstate_of(r.get()), "54000");
    EXPECT_EQ(PQtransactionStatus(c.get()), PQTRANS_IDLE);
    exec(c.get(), "RESET sluice.max_rows");
    r = exec(c.get(), q(10));
    EXPECT_EQ(PQntuples(r.get()), 10);
}

TEST_F(limits_and_robustness, statement_timeout_via_set) {
    auto c = connect();
    EXPECT_STREQ(PQcmdStatus(exec(c.get(), "SET statement_timeout = '200ms'").get()), "SET");
    auto start = std::chrono::steady_clock::now();
    auto r = exec(c.get(), slow_query);
    auto took = std::chrono::steady_clock::now() - start;
    EXPECT_EQ(sqlstate_of(r.get()), "57014") << PQresultErrorMessage(r.get());
    EXPECT_GE(took, 150ms);
    EXPECT_LT(took, 5s);
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT 1").get(), 0, 0), "1");
}

TEST_F(limits_and_robustness, statement_timeout_from_startup_options) {
    conn_ptr c(PQconnectdb((conninfo() + " options='-c statement_timeout=150'").c_str()));
    ASSERT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SHOW statement_timeout").get(), 0, 0), "150ms");
    auto r = exec(c.get(), slow_query);
    EXPECT_EQ(sqlstate_of(r.get()), "57014");
}

TEST_F(limits_and_robustness, cancel_from_another_thread) {
    auto c = connect();
    ASSERT_TRUE(PQsendQuery(c.get(), slow_query));
    std::atomic<bool> done{false};
    // A cancel that lands before the statement's first step is forgotten by the
    // engine, so the canceller repeats until the query ends (bounded).
    std::thread canceller([&] {
        PGcancel* cancel = PQgetCancel(c.get());
        char err[256];
        for (int i = 0; i < 50 && !done.load(); ++i) {
            std::this_thread::sleep_for(50ms);
            if (!done.load()) PQcancel(cancel, err, sizeof err);
        }
        PQfreeCancel(cancel);
    });
    result_ptr r(PQgetResult(c.get()));
    done.store(true);
    while (PGresult* extra = PQgetResult(c.get())) PQclear(extra);
    canceller.join();
    EXPECT_EQ(sqlstate_of(r.get()), "57014") << PQresultErrorMessage(r.get());
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT 2").get(), 0, 0), "2");
}

TEST_F(limits_and_robustness, cancel_with_a_wrong_secret_is_ignored) {
    auto c = connect();
    raw_client rc(port());
    std::string pkt;
    raw_client::put32(pkt, 16);
    raw_client::put32(pkt, 80877102);
    raw_client::put32(pkt, static_cast<uint32_t>(PQbackendPID(c.get())));
    raw_client::put32(pkt, 12345);  // not the secret
    rc.send(pkt);
    EXPECT_TRUE(rc.closed_by_server());
    auto r = exec(c.get(),
                  "SELECT count(*) FROM generate_series(1, 100000) AS c(x)");
    EXPECT_STREQ(PQgetvalue(r.get(), 0, 0), "100000");
}

TEST_F(limits_and_robustness, a_client_that_leaves_cancels_its_query) {
    {
        auto c = connect();
        ASSERT_TRUE(PQsendQuery(c.get(), slow_query));
        std::this_thread::sleep_for(100ms);  // the query is running
        EXPECT_EQ(server->connection_count(), 1u);
    }  // PQfinish: the socket closes under the running query
    // The query alone would run for minutes (the engine's limit is 30 s).
    EXPECT_TRUE(eventually([&] { return server->connection_count() == 0; }, 5s))
        << "the session did not stop";
    auto c2 = connect();
    EXPECT_STREQ(PQgetvalue(exec(c2.get(), "SELECT 3").get(), 0, 0), "3");
}

TEST_F(limits_and_robustness, stop_returns_promptly_with_a_query_running) {
    auto c = connect();
    ASSERT_TRUE(PQsendQuery(c.get(), slow_query));
    std::this_thread::sleep_for(100ms);
    auto start = std::chrono::steady_clock::now();
    server->stop();
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
    EXPECT_EQ(server->connection_count(), 0u);
}

TEST_F(limits_and_robustness, malformed_startup_packets_close_only_their_connection) {
    auto good = connect();
    std::vector<std::string> bad;
    std::string tiny;
    raw_client::put32(tiny, 3);  // shorter than the length word itself
    bad.push_back(tiny);
    std::string huge;
    raw_client::put32(huge, 1u << 30);
    bad.push_back(huge);
    std::string garbage;
    raw_client::put32(garbage, 12);
    raw_client::put32(garbage, 196608);
    garbage += "abcd";  // parameters without their terminating NULs
    bad.push_back(garbage);
    std::string http = "GET / HTTP/1.1\r\n\r\n";
    bad.push_back(http);
    for (const auto& b : bad) {
        raw_client rc(port());
        ASSERT_TRUE(rc.connected);
        rc.send(b);
        EXPECT_TRUE(rc.closed_by_server());
    }
    EXPECT_STREQ(PQgetvalue(exec(good.get(), "SELECT 4").get(), 0, 0), "4");
    auto other = connect();
    EXPECT_EQ(PQstatus(other.get()), CONNECTION_OK);
}

TEST_F(limits_and_robustness, garbage_after_startup_is_a_protocol_violation) {
    auto good = connect();
    struct {
        std::string name;
        std::string bytes;
    } cases[] = {
        {"unknown type", raw_client::msg('!', "xyz")},
        {"length below 4", std::string("Q\0\0\0\x02", 5)},
        {"over 1 GiB", std::string("Q\x40\0\0\x01", 5)},
        {"oversized Sync", std::string("S\0\x01\0\0", 5)},
        {"truncated Bind", raw_client::msg('B', std::string("\0\0\0", 3))},
        {"Query without NUL", raw_client::msg('Q', "SELECT 1")},
    };
    for (auto& tc : cases) {
        raw_client rc(port());
        ASSERT_TRUE(rc.connected);
        rc.startup();
        rc.send(tc.bytes);
        auto m = rc.read();
        ASSERT_TRUE(m) << tc.name;
        EXPECT_EQ(m->type, 'E') << tc.name;
        EXPECT_EQ(raw_client::error_field(m->body, 'C'), "08P01") << tc.name;
        EXPECT_EQ(raw_client::error_field(m->body, 'S'), "FATAL") << tc.name;
        EXPECT_TRUE(rc.closed_by_server()) << tc.name;
    }
    EXPECT_STREQ(PQgetvalue(exec(good.get(), "SELECT 5").get(), 0, 0), "5");
}

TEST_F(limits_and_robustness, random_messages_never_take_the_server_down) {
    // Well-framed messages of every type with random bodies: each connection either
    // answers or closes with 08P01; the server serves on.
    std::mt19937 rng(20240601);
    const std::string types = "PBDECSHQF";
    for (int conn = 0; conn < 20; ++conn) {
        raw_client rc(port());
        ASSERT_TRUE(rc.connected);
        ASSERT_EQ(types_of(rc.startup()).back(), 'Z');
        std::string batch;
        for (int i = 0; i < 10; ++i) {
            std::string body(rng() % 48, '\0');
            for (char& ch : body) ch = static_cast<char>(rng() % 4 == 0 ? 0 : rng() % 256);
            batch += raw_client::msg(types[rng() % types.size()], body);
        }
        rc.send(batch + raw_client::sync());
        // Everything that comes back is well-formed, up to ReadyForQuery or a close.
        for (;;) {
            auto m = rc.read();
            if (!m || m->type == 'Z') break;
            if (m->type == 'E' && raw_client::error_field(m->body, 'S') == "FATAL") {
                EXPECT_EQ(raw_client::error_field(m->body, 'C'), "08P01");
                EXPECT_TRUE(rc.closed_by_server());
                break;
            }
        }
    }
    auto c = connect();
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT 8").get(), 0, 0), "8");
}

TEST_F(limits_and_robustness, ssl_and_gss_requests_are_declined_and_startup_goes_on) {
    raw_client rc(port());
    for (uint32_t code : {80877103u, 80877104u}) {
        std::string req;
        raw_client::put32(req, 8);
        raw_client::put32(req, code);
        rc.send(req);
        EXPECT_EQ(rc.read_byte(), 'N');
    }
    auto m = rc.startup();
    ASSERT_FALSE(m.empty());
    EXPECT_EQ(m.front().type, 'R');
    EXPECT_EQ(m.back().type, 'Z');
}

TEST_F(limits_and_robustness, connections_over_the_limit_are_refused) {
    pg_options opts;
    opts.max_connections = 1;
    start_server(opts);
    auto first = connect();
    conn_ptr second(PQconnectdb(conninfo().c_str()));
    EXPECT_EQ(PQstatus(second.get()), CONNECTION_BAD);
    EXPECT_NE(std::string(PQerrorMessage(second.get())).find("too many clients"), std::string::npos)
        << PQerrorMessage(second.get());
    EXPECT_STREQ(PQgetvalue(exec(first.get(), "SELECT 6").get(), 0, 0), "6");
    first.reset();
    EXPECT_TRUE(eventually([&] { return server->connection_count() == 0; }));
    auto third = connect();
    EXPECT_EQ(PQstatus(third.get()), CONNECTION_OK);
}

TEST_F(limits_and_robustness, a_startup_that_never_completes_gives_the_slot_back) {
    pg_options opts;
    opts.max_connections = 1;
    opts.startup_timeout = 200ms;
    start_server(opts);
    raw_client silent(port());
    ASSERT_TRUE(silent.connected);
    silent.send(std::string("\0\0\0", 3));  // part of a length word, then nothing
    auto start = std::chrono::steady_clock::now();
    EXPECT_TRUE(silent.closed_by_server());
    EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
    EXPECT_TRUE(eventually([&] { return server->connection_count() == 0; }));
    auto c = connect();  // the only slot is free again
    EXPECT_STREQ(PQgetvalue(exec(c.get(), "SELECT 9").get(), 0, 0), "9");
}

TEST_F(limits_and_robustness, terminate_closes_cleanly) {
    raw_client rc(port());
    rc.startup();
    EXPECT_EQ(server->connection_count(), 1u);
    rc.send(raw_client::msg('X', ""));
    EXPECT_TRUE(rc.closed_by_server());
    EXPECT_TRUE(eventually([&] { return server->connection_count() == 0; }));
}

}  // namespace
}  // namespace sluice::sql::pg::test

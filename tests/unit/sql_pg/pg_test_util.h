#pragma once

// Shared helpers of the PostgreSQL front end tests: a server over a fresh engine in a
// temporary directory, libpq handles that clean up after themselves, and a raw client
// that speaks the protocol byte by byte (for what libpq cannot send: max-rows Execute,
// malformed messages).

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "../sql/duck_test_engine.h"
#include "sql/pg/pg_server.h"

namespace sluice::sql::pg::test {

namespace fs = std::filesystem;

struct temp_dir {
    temp_dir() {
        std::string tmpl = (fs::temp_directory_path() / "sluice-pg-XXXXXX").string();
        path = mkdtemp(tmpl.data());
    }
    ~temp_dir() {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    fs::path path;
};

struct conn_deleter {
    void operator()(PGconn* c) const { PQfinish(c); }
};
struct result_deleter {
    void operator()(PGresult* r) const { PQclear(r); }
};
using conn_ptr = std::unique_ptr<PGconn, conn_deleter>;
using result_ptr = std::unique_ptr<PGresult, result_deleter>;

inline std::string sqlstate_of(const PGresult* r) {
    const char* s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return s ? s : "";
}

inline result_ptr exec(PGconn* c, const std::string& sql) {
    return result_ptr(PQexec(c, sql.c_str()));
}

// Every result of a query string (one per statement), in order.
inline std::vector<result_ptr> exec_all(PGconn* c, const std::string& sql) {
    std::vector<result_ptr> out;
    if (!PQsendQuery(c, sql.c_str())) return out;
    while (PGresult* r = PQgetResult(c)) out.emplace_back(r);
    return out;
}

// Waits (at most `limit`) for `pred`; true when it held.
template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return pred();
}

// A query that runs for minutes unless stopped: a filtered count over 10^11 numbers
// (DuckDB's range streams, where a recursive CTE would be computed whole first).
inline constexpr const char* slow_query =
    "SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3";

class pg_fixture : public ::testing::Test {
  protected:
    void SetUp() override { start_server(); }
    void TearDown() override {
        server.reset();
        eng.reset();
        if (logs) logs->close();
    }

    void start_server(pg_options opts = {}, limits defaults = {}) {
        server.reset();
        eng.reset();
        engine_options eo;
        eo.data_dir = dir.path;
        eo.defaults = defaults;
        auto e = sql::test::open_duck_test_engine(eo, logs);
        ASSERT_TRUE(e.ok()) << e.error().message;
        eng = std::move(*e);
        auto s = pg_server::start({"127.0.0.1", 0}, *eng, std::move(opts));
        ASSERT_TRUE(s.ok()) << s.err().message;
        server = std::move(*s);
    }

    int port() const { return server->address().port; }

    std::string conninfo() const {
        return "host=127.0.0.1 port=" + std::to_string(port()) +
               " dbname=sluice user=x sslmode=disable connect_timeout=5";
    }

    conn_ptr connect() {
        conn_ptr c(PQconnectdb(conninfo().c_str()));
        EXPECT_EQ(PQstatus(c.get()), CONNECTION_OK) << PQerrorMessage(c.get());
        return c;
    }

    temp_dir dir;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<engine> eng;
    std::unique_ptr<pg_server> server;
};

// ---- A raw protocol client ----

struct backend_msg {
    char type = 0;
    std::string body;
};

class raw_client {
  public:
    explicit raw_client(int port) {
        _fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        connected = ::connect(_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
    }
    ~raw_client() {
        if (_fd >= 0) ::close(_fd);
    }
    raw_client(const raw_client&) = delete;
    raw_client& operator=(const raw_client&) = delete;

    bool send(const std::string& bytes) {
        return ::send(_fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) ==
               static_cast<ssize_t>(bytes.size());
    }

    // One backend message; nullopt on close, error or 5 s of silence.
    std::optional<backend_msg> read() {
        char hdr[5];
        if (!read_exact(hdr, 5)) return std::nullopt;
        uint32_t len = be32(hdr + 1);
        if (len < 4 || len > (1u << 20)) return std::nullopt;
        backend_msg m;
        m.type = hdr[0];
        m.body.resize(len - 4);
        if (!read_exact(m.body.data(), m.body.size())) return std::nullopt;
        return m;
    }

    // One byte (the answer to SSLRequest); nullopt on close or 5 s of silence.
    std::optional<char> read_byte() {
        char b;
        if (!read_exact(&b, 1)) return std::nullopt;
        return b;
    }

    // Messages up to and including the next ReadyForQuery (or close).
    std::vector<backend_msg> read_until_ready() {
        std::vector<backend_msg> out;
        while (auto m = read()) {
            out.push_back(*m);
            if (m->type == 'Z') break;
        }
        return out;
    }

    // Whether the server closed the connection (within 5 s), after any messages.
    bool closed_by_server() {
        char b[256];
        for (;;) {
            pollfd p{_fd, POLLIN, 0};
            if (::poll(&p, 1, 5000) <= 0) return false;
            ssize_t r = ::recv(_fd, b, sizeof b, 0);
            if (r <= 0) return true;
        }
    }

    // StartupMessage, then everything up to ReadyForQuery.
    std::vector<backend_msg> startup() {
        std::string body;
        put32(body, 196608);
        static constexpr char params[] = "user\0x\0database\0sluice\0";  // + the implicit NUL
        body.append(params, sizeof params);
        std::string pkt;
        put32(pkt, static_cast<uint32_t>(body.size() + 4));
        send(pkt + body);
        return read_until_ready();
    }

    // Frontend message builders.
    static std::string msg(char type, const std::string& body) {
        std::string m(1, type);
        put32(m, static_cast<uint32_t>(body.size() + 4));
        return m + body;
    }
    static std::string cstr(const std::string& s) { return s + std::string(1, '\0'); }
    static std::string parse(const std::string& name, const std::string& sql) {
        return msg('P', cstr(name) + cstr(sql) + std::string(2, '\0'));
    }
    // Text parameters; no result formats (text).
    static std::string bind(const std::string& portal, const std::string& stmt,
                            const std::vector<std::string>& params = {}) {
        std::string b = cstr(portal) + cstr(stmt);
        put16(b, 0);
        put16(b, static_cast<uint16_t>(params.size()));
        for (const auto& p : params) {
            put32(b, static_cast<uint32_t>(p.size()));
            b += p;
        }
        put16(b, 0);
        return msg('B', b);
    }
    static std::string describe(char what, const std::string& name) {
        return msg('D', std::string(1, what) + cstr(name));
    }
    static std::string execute(const std::string& portal, uint32_t max_rows) {
        std::string b = cstr(portal);
        put32(b, max_rows);
        return msg('E', b);
    }
    static std::string sync() { return msg('S', ""); }
    static std::string query(const std::string& sql) { return msg('Q', cstr(sql)); }

    static void put32(std::string& s, uint32_t v) {
        for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(v >> shift));
    }
    static void put16(std::string& s, uint16_t v) {
        s.push_back(static_cast<char>(v >> 8));
        s.push_back(static_cast<char>(v));
    }
    static uint32_t be32(const char* p) {
        return (uint32_t{static_cast<uint8_t>(p[0])} << 24) |
               (uint32_t{static_cast<uint8_t>(p[1])} << 16) |
               (uint32_t{static_cast<uint8_t>(p[2])} << 8) | uint32_t{static_cast<uint8_t>(p[3])};
    }

    // The fields of an ErrorResponse body: SQLSTATE ('C') and message ('M').
    static std::string error_field(const std::string& body, char code) {
        size_t i = 0;
        while (i < body.size() && body[i] != '\0') {
            char f = body[i++];
            size_t nul = body.find('\0', i);
            if (nul == std::string::npos) break;
            if (f == code) return body.substr(i, nul - i);
            i = nul + 1;
        }
        return "";
    }
    // DataRow cells (text), "<NULL>" for NULL.
    static std::vector<std::string> data_row(const std::string& body) {
        std::vector<std::string> cells;
        size_t n = (static_cast<uint8_t>(body[0]) << 8) | static_cast<uint8_t>(body[1]);
        size_t i = 2;
        for (size_t c = 0; c < n; ++c) {
            auto len = static_cast<int32_t>(be32(body.data() + i));
            i += 4;
            if (len < 0) {
                cells.push_back("<NULL>");
            } else {
                cells.push_back(body.substr(i, static_cast<size_t>(len)));
                i += static_cast<size_t>(len);
            }
        }
        return cells;
    }

    bool connected = false;

  private:
    bool read_exact(char* p, size_t n) {
        while (n > 0) {
            pollfd pfd{_fd, POLLIN, 0};
            if (::poll(&pfd, 1, 5000) <= 0) return false;
            ssize_t r = ::recv(_fd, p, n, 0);
            if (r <= 0) return false;
            p += r;
            n -= static_cast<size_t>(r);
        }
        return true;
    }
    int _fd = -1;
};

// The type bytes of a message sequence, as a string ("12TDDsZ").
inline std::string types_of(const std::vector<backend_msg>& msgs) {
    std::string s;
    for (const auto& m : msgs) s.push_back(m.type);
    return s;
}

}  // namespace sluice::sql::pg::test

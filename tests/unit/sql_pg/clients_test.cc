// Real clients against the front end: the psql binary and psycopg2 (through
// /usr/bin/python3), each run once with its output checked.

#include <stdio.h>
#include <sys/wait.h>

#include <fstream>

#include "pg_test_util.h"

namespace sluice::sql::pg::test {
namespace {

using real_clients = pg_fixture;

// Runs a shell command; its stdout and stderr, and its exit status.
std::pair<std::string, int> run(const std::string& cmd) {
    std::string out;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return {"popen failed", -1};
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    int status = pclose(p);
    return {out, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

bool have(const char* path) {
    return access(path, X_OK) == 0;
}

TEST_F(real_clients, psql) {
    if (!have("/usr/bin/psql")) GTEST_SKIP() << "psql is not installed";
    // sslmode=prefer (psql's default) sends SSLRequest first and goes on after 'N'.
    std::string base = "PGCONNECT_TIMEOUT=5 timeout 20 /usr/bin/psql -X -A -t -h 127.0.0.1 -p " +
                       std::to_string(port()) + " -U x -d sluice";
    auto [out, rc] = run(base + " -c 'select 1+1'");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "2\n");
    std::tie(out, rc) = run(base +
                            " -v ON_ERROR_STOP=1 -c \"create table ps(a integer, b text)\" "
                            "-c \"insert into ps values (1, 'x'), (2, NULL)\" "
                            "-c \"select a, coalesce(b, 'null') from ps order by a\"");
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out, "CREATE TABLE\nINSERT 0 2\n1|x\n2|null\n");
    std::tie(out, rc) = run(base + " -v ON_ERROR_STOP=1 -c 'select * from nowhere'");
    EXPECT_NE(rc, 0);
    EXPECT_NE(out.find("does not exist"), std::string::npos) << out;
}

TEST_F(real_clients, psycopg2) {
    if (!have("/usr/bin/python3")) GTEST_SKIP() << "/usr/bin/python3 is not installed";
    auto [probe, probe_rc] = run("/usr/bin/python3 -c 'import psycopg2'");
    if (probe_rc != 0) GTEST_SKIP() << "psycopg2 is not installed: " << probe;
    std::string script = (dir.path / "client.py").string();
    std::ofstream(script) << R"py(import sys, psycopg2
conn = psycopg2.connect(host='127.0.0.1', port=int(sys.argv[1]), dbname='sluice', user='x',
                        sslmode='disable', connect_timeout=5)
cur = conn.cursor()
cur.execute("CREATE TABLE py (id INTEGER, name TEXT, data BLOB)")
cur.execute("INSERT INTO py VALUES (%s, %s, '\\x00\\xff'::BLOB), (%s, %s, NULL)", (7, "seven", 8, "it's"))
print(cur.rowcount, conn.get_transaction_status())
conn.commit()
cur.execute("SELECT id, name, data FROM py ORDER BY id")
print([d.type_code for d in cur.description])
for row in cur.fetchall():
    print(row[0], row[1], None if row[2] is None else bytes(row[2]).hex(), type(row[2]).__name__)
cur.execute("SELECT 1.5, NULL, 'x' || %s", ("y",))
print(cur.fetchone())
try:
    cur.execute("SELECT * FROM missing")
except psycopg2.Error as e:
    print("error", e.pgcode, conn.get_transaction_status())
conn.rollback()
cur.execute("SET statement_timeout = 100")
try:
    cur.execute("SELECT count(*) FROM range(100000000000) t(i) WHERE i % 7 = 3")
except psycopg2.extensions.QueryCanceledError as e:
    print("canceled", e.pgcode)
conn.rollback()
conn.autocommit = True
cur.execute("SELECT count(*) FROM py")
print(cur.fetchone()[0], conn.get_transaction_status())
conn.close()
)py";
    auto [out, rc] = run("timeout 20 /usr/bin/python3 " + script + " " + std::to_string(port()));
    EXPECT_EQ(rc, 0) << out;
    EXPECT_EQ(out,
              "2 2\n"  // two rows inserted, inside psycopg2's implicit BEGIN (INTRANS = 2)
              "[23, 25, 17]\n"  // id INTEGER: int4, as PostgreSQL's catalog says
              "7 seven 00ff memoryview\n"
              "8 it's None NoneType\n"
              "(Decimal('1.5'), None, 'xy')\n"  // 1.5 is a numeric, as in PostgreSQL
              "error 42P01 3\n"  // INERROR = 3
              "canceled 57014\n"
              "2 0\n");
}

}  // namespace
}  // namespace sluice::sql::pg::test

// Columnar targets served: the expansions write into the DuckDB database of the SQL
// engine (`sluice serve --sql-engine duckdb`), whose sessions read them typed, with
// KafkaRead on the topic checked however the statement reaches the table.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <atomic>
#include <thread>

#include "served_harness.h"
#include "../sql/sql_security_util.h"
#include "expansion/duck/duck_target.h"
#include "sql/duck/duck_engine.h"
#include "sql/duck/serving.h"

namespace sluice::expansion {
namespace {

using sluice::testing::test_record;
using rows = std::vector<std::vector<std::string>>;

constexpr const char* served_schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "price", "type": "float64"}, {"name": "ok", "type": "bool"},
    {"name": "after", "type": "struct", "fields": [{"name": "name", "type": "string"}]}],
    "key": {"type": "string"}})";

std::string served_text_of(const sql::value& v) {
    if (std::holds_alternative<std::monostate>(v)) return "NULL";
    if (const auto* i = std::get_if<int64_t>(&v)) return "i:" + std::to_string(*i);
    if (const auto* d = std::get_if<double>(&v)) return fmt::format("d:{}", *d);
    if (const auto* s = std::get_if<std::string>(&v)) return *s;
    const auto& b = std::get<bytes>(v);
    return "b:" + std::string(b.begin(), b.end());
}

struct served_fixture : ::testing::Test, test::served_harness {
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    void open() {
        eo.data_dir = dir.path;
        eo.defaults.timeout = std::chrono::milliseconds(5000);
        eo.defaults.max_rows = 1000;
        eo.bounds.total_memory = 256 << 20;
        eo.bounds.max_value_bytes = 1 << 20;
        eo.gate = &gate;
        ASSERT_NO_FATAL_FAILURE(open_served(dir.path / "expansions.duckdb"));
        sess->set_principal({"alice", true});
    }
    void close() { close_served(); }

    rows run(std::string_view sql, std::vector<sql::column>* cols = nullptr) {
        auto st = sess->prepare(sql);
        if (!st) return {{"ERROR " + std::string(sql::failure_name(st.error().kind))}};
        return step_all(**st, cols);
    }
    static rows step_all(sql::statement& st, std::vector<sql::column>* cols = nullptr) {
        rows out;
        if (cols) *cols = st.columns();
        for (;;) {
            auto s = st.step();
            if (s == sql::statement::step_state::done) return out;
            if (s == sql::statement::step_state::failed)
                return {{"ERROR " + std::string(sql::failure_name(st.error().kind))}};
            auto& r = out.emplace_back();
            for (const auto& v : st.row()) r.push_back(served_text_of(v));
        }
    }

    void create(const std::string& target) {
        create_request r;
        r.topic = "cdc";
        r.target = target;
        r.schema = served_schema_json;
        r.flatten = true;
        auto s = svc->create(r);
        ASSERT_TRUE(s) << s.err().message;
    }

    static test_record event(int id, const std::string& name) {
        return {"k" + std::to_string(id),
                fmt::format(R"({{"id": {}, "price": {}.5, "ok": {}, "after": {{"name": "{}"}}}})",
                            id, id, id % 2 ? "true" : "false", name)};
    }

    sql::test::fake_gate gate;
};

TEST_F(served_fixture, sessions_read_the_rows_typed_once_the_produce_is_answered) {
    gate.allow("alice", security::action::read, "sluice:topic:cdc");
    create_topic("cdc", 2);
    create("cdc.orders");
    produce("cdc", 0, {event(1, "a"), event(2, "b")});
    produce("cdc", 1, {event(3, "c"), {"k4", "not json"}});
    std::vector<sql::column> cols;
    EXPECT_EQ(run("SELECT _partition, _offset, id, price, ok, after__name, _parse_error, _key "
                  "FROM cdc.orders ORDER BY 1, 2",
                  &cols),
              (rows{{"i:0", "i:0", "i:1", "d:1.5", "i:1", "a", "i:0", "k1"},
                    {"i:0", "i:1", "i:2", "d:2.5", "i:0", "b", "i:0", "k2"},
                    {"i:1", "i:0", "i:3", "d:3.5", "i:1", "c", "i:0", "k3"},
                    {"i:1", "i:1", "NULL", "NULL", "NULL", "NULL", "i:1", "k4"}}));
    ASSERT_EQ(cols.size(), 8u);
    EXPECT_EQ(cols[2].decl_type, "INTEGER");
    EXPECT_EQ(cols[3].decl_type, "REAL");
    EXPECT_EQ(cols[4].decl_type, "BOOLEAN");
    EXPECT_EQ(cols[5].decl_type, "TEXT");
    // A join of the target with its topic, in one statement.
    EXPECT_EQ(run("SELECT count(*) FROM cdc.orders x JOIN kafka_topics.cdc k "
                  "ON k.partition = x._partition AND k.\"offset\" = x._offset "
                  "WHERE x._key = CAST(k.key AS TEXT)"),
              (rows{{"i:4"}}));
    // The broker writes targets; users' statements may not.
    EXPECT_EQ(run("INSERT INTO cdc.orders (_partition) VALUES (9)"), (rows{{"ERROR read_only"}}));
    EXPECT_EQ(run("DROP TABLE cdc.orders"), (rows{{"ERROR read_only"}}));
    // Nor its delta (expansion/duck/delta.h), which readers of the target read with it.
    for (const auto* sql : {"INSERT INTO \"_sluice_delta:cdc.orders\" (_partition) VALUES (9)",
                            "DELETE FROM main.\"_sluice_delta:cdc.orders\"",
                            "DROP TABLE \"_sluice_delta:cdc.orders\""})
        EXPECT_EQ(run(sql), (rows{{"ERROR read_only"}})) << sql;
    EXPECT_EQ(run("SELECT count(*) FROM \"_sluice_delta:cdc.orders\""), (rows{{"i:0"}}));
    // While the store checkpoints, commits go to the delta: read through the target at once.
    std::atomic<bool> stop{false};
    std::thread checkpoints([&] {
        while (!stop) (void)store->checkpoint();
    });
    // A statement prepared while the delta is empty finds the rows sent there later.
    auto counted = sess->prepare("SELECT count(*) FROM cdc.orders WHERE id >= 5");
    ASSERT_TRUE(counted) << counted.error().message;
    int id = 5;
    for (; id < 100 || (store->checkpoints().moved_rows == 0 && id < 20'000); ++id) {
        produce("cdc", id % 2, {event(id, "x")});
        ASSERT_EQ(run(fmt::format("SELECT count(*) FROM cdc.orders WHERE id = {}", id)),
                  (rows{{"i:1"}}));
        (*counted)->reset();
        ASSERT_EQ(step_all(**counted), (rows{{"i:" + std::to_string(id - 4)}}));
    }
    stop = true;
    checkpoints.join();
    EXPECT_GT(store->checkpoints().moved_rows, 0) << "no commit ran while a checkpoint did";
    EXPECT_EQ(run("SELECT count(*) = count(DISTINCT id), count(*) FROM cdc.orders WHERE id >= 5"),
              (rows{{"i:1", "i:" + std::to_string(id - 5)}}));
}

TEST_F(served_fixture, reading_a_target_needs_read_on_its_topic_however_it_is_reached) {
    create_topic("cdc", 1);
    create("cdc.orders");
    produce("cdc", 0, {event(1, "a")});
    for (const auto* sql :
         {"SELECT * FROM cdc.orders", "SELECT count(*) FROM cdc.orders",
          "SELECT (SELECT max(id) FROM cdc.orders)",
          "WITH x AS (SELECT id FROM cdc.orders) SELECT * FROM x",
          "SELECT 1 WHERE EXISTS (SELECT 1 FROM cdc.orders WHERE id = 1)",
          "EXPLAIN SELECT * FROM cdc.orders", "SELECT * FROM query_table('cdc.orders')",
          "SELECT * FROM \"_sluice_delta:cdc.orders\""})
        EXPECT_EQ(run(sql), (rows{{"ERROR insufficient_privilege"}})) << sql;
    // Storage statistics would show the values' ranges; checkpoints are the broker's.
    EXPECT_EQ(run("SELECT * FROM pragma_storage_info('cdc.orders')"),
              (rows{{"ERROR insufficient_privilege"}}));
    EXPECT_EQ(run("SELECT * FROM checkpoint()"), (rows{{"ERROR insufficient_privilege"}}));
    gate.allow("alice", security::action::read, "sluice:topic:cdc");
    EXPECT_EQ(run("SELECT id FROM cdc.orders"), (rows{{"i:1"}}));
    // A statement prepared before the policy changed is checked again before it runs.
    auto st = sess->prepare("SELECT id FROM cdc.orders");
    ASSERT_TRUE(st);
    EXPECT_EQ(step_all(**st), (rows{{"i:1"}}));
    (*st)->reset();
    gate.revoke_all();
    EXPECT_EQ(step_all(**st), (rows{{"ERROR insufficient_privilege"}}));
}

TEST_F(served_fixture, a_restart_reads_what_the_store_recovered) {
    gate.allow("alice", security::action::read, "sluice:topic:cdc");
    create_topic("cdc", 1);
    create("orders");
    produce("cdc", 0, {event(1, "a"), event(2, "b")});
    svc->stop();
    produce("cdc", 0, {event(3, "c")}, false);
    close();
    open();
    EXPECT_EQ(run("SELECT _offset, after__name FROM orders ORDER BY 1"),
              (rows{{"i:0", "a"}, {"i:1", "b"}, {"i:2", "c"}}));
}

}  // namespace
}  // namespace sluice::expansion

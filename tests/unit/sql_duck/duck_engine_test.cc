// src/sql/duck: kafka_topic over real partition logs written by the log library, its
// filter pushdown, the read_committed cut, authorization and the locked-down engine; and
// the same through the partition-log interface (shared mode).

#include "sql/duck/duck_engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <thread>

#include "catalog/catalog.h"
#include "log/log_manager.h"
#include "sql/partition_source.h"
#include "sql/sql_security_util.h"
#include "sql/sql_test_util.h"
#include "support/batch_builder.h"
#include "support/compressed_batch.h"

namespace sluice::sql::duck {
namespace {

using rows = std::vector<std::vector<std::string>>;
using security::action;
using sluice::testing::build_batch;
using sluice::testing::test_record;

struct duck_fixture : ::testing::Test {
    void SetUp() override {
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        options o;
        o.data_dir = dir.path;
        o.logs = logs.get();
        o.memory_limit_bytes = 256 << 20;
        auto e = engine::open(o);
        ASSERT_TRUE(e) << e.error().message;
        eng = std::move(*e);
        sess = eng->open_session(gate_for_session(), {"alice", true});
    }
    void TearDown() override {
        sess.reset();
        eng.reset();
        logs->close();
    }
    virtual const security::gate* gate_for_session() { return nullptr; }

    void create_topic(const std::string& name, int32_t partitions, log::log_config cfg = {}) {
        logs->add_topic(name, partitions, cfg);
    }
    // Appends one batch and waits until it is durable.
    offset_t produce_bytes(const std::string& topic, int32_t p, bytes payload,
                           timestamp_ms now = 1000) {
        auto* pl = logs->get(topic, p);
        EXPECT_NE(pl, nullptr);
        auto v = protocol::validate_batches(payload, {});
        EXPECT_TRUE(v);
        auto r = pl->append(std::span<uint8_t>(payload), *v, now);
        EXPECT_TRUE(r) << r.err().message;
        wait_durable(pl, r->last_offset);
        return r->base_offset;
    }
    offset_t produce(const std::string& topic, int32_t p, const std::vector<test_record>& recs,
                     timestamp_ms now = 1000) {
        return produce_bytes(topic, p, build_batch(recs), now);
    }
    void wait_durable(log::partition_log* pl, offset_t last) {
        auto done = std::make_shared<std::promise<result<void>>>();
        auto fut = done->get_future();
        logs->when_durable(pl, last, [done](result<void> x) { done->set_value(std::move(x)); });
        ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }
    // Two records with value v in a transaction of producer pid, to partition 0.
    offset_t produce_txn(const std::string& topic, int64_t pid, const std::string& v) {
        sluice::testing::batch_options o;
        o.producer_id = pid;
        o.producer_epoch = 0;
        o.base_sequence = 0;
        o.transactional = true;
        return produce_bytes(topic, 0, build_batch({{"k", v, 2, {}}, {"k", v, 3, {}}}, o));
    }
    // Ends producer pid's transaction with a COMMIT or ABORT marker, durable on return.
    void write_marker(log::partition_log* pl, int64_t pid, bool commit) {
        auto r = pl->write_marker(pid, 0, commit, 0, 2000);
        ASSERT_TRUE(r) << r.err().message;
        wait_durable(pl, r->last_offset);
    }

    rows query(std::string_view sql) {
        auto r = sess->query(sql);
        EXPECT_TRUE(r) << sql << ": " << (r ? "" : r.error().message);
        rows out;
        if (!r) return out;
        for (const auto& row : r->rows) {
            auto& cells = out.emplace_back();
            for (const auto& c : row) cells.push_back(c ? *c : "NULL");
        }
        return out;
    }
    query_error failure_of(std::string_view sql) {
        auto r = sess->query(sql);
        EXPECT_FALSE(r) << sql << " succeeded";
        return r ? query_error{} : r.error();
    }
    int64_t scanned_partitions() const { return sess->last_scan().partitions_scanned; }

    test::temp_dir dir;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<engine> eng;
    std::unique_ptr<session> sess;
};

TEST_F(duck_fixture, every_column_of_every_record) {
    create_topic("orders", 2);
    produce("orders", 0,
            {{"k1", R"({"op":"c","id":1})", 1111, {{"h1", "v1"}, {"h2", "v2"}}},
             {std::nullopt, "no key", 1112, {}}});
    produce("orders", 1, {{"k2", std::nullopt, 2222, {}}}, 5000);
    EXPECT_EQ(query("SELECT partition, \"offset\", timestamp_producer, timestamp_broker, "
                    "key_text, value_text, headers FROM kafka_topic('orders') "
                    "ORDER BY partition, \"offset\""),
              (rows{{"0", "0", "1111", "1000", "k1", R"({"op":"c","id":1})",
                     R"([{"key":"h1","value":"v1"},{"key":"h2","value":"v2"}])"},
                    {"0", "1", "1112", "1000", "NULL", "no key", "[]"},
                    {"1", "0", "2222", "5000", "k2", "NULL", "[]"}}));
    // DuckDB's JSON functions over the text column; key and value are BLOBs.
    EXPECT_EQ(query("SELECT value_text ->> '$.op', (value_text ->> '$.id')::BIGINT + 1, "
                    "typeof(key), typeof(value), key = 'k1'::BLOB FROM kafka_topic('orders') "
                    "WHERE key_text = 'k1'"),
              (rows{{"c", "2", "BLOB", "BLOB", "true"}}));
    auto r = sess->query("SELECT * FROM kafka_topic('orders') LIMIT 0");
    ASSERT_TRUE(r) << r.error().message;
    // key_text and value_text are hidden: read when named, not in SELECT *.
    EXPECT_EQ(r->names, (std::vector<std::string>{"partition", "offset", "timestamp_producer",
                                                  "timestamp_broker", "key", "value", "headers"}));
    EXPECT_EQ(r->types, (std::vector<std::string>{"INTEGER", "BIGINT", "BIGINT", "BIGINT", "BLOB",
                                                  "BLOB", "VARCHAR"}));
}

TEST_F(duck_fixture, invalid_utf8_stays_a_blob_and_never_becomes_text) {
    create_topic("bin", 1);
    const std::string bad = std::string("ok\xff\xfe", 4);
    const std::string overlong = std::string("\xc0\xaf", 2);
    produce("bin", 0,
            {{bad, bad, 1, {{"h", bad}}}, {"k", overlong, 2, {}}, {"ключ", "значение", 3, {}}});
    EXPECT_EQ(
        query("SELECT \"offset\", octet_length(key), octet_length(value), key_text, "
              "value_text, headers FROM kafka_topic('bin') ORDER BY 1"),
        (rows{{"0", "4", "4", "NULL", "NULL", R"([{"key":"h","value":{"base64":"b2v//g=="}}])"},
              {"1", "1", "2", "k", "NULL", "[]"},
              {"2", "8", "16", "ключ", "значение", "[]"}}));
    EXPECT_EQ(query("SELECT hex(value) FROM kafka_topic('bin') WHERE \"offset\" = 0"),
              (rows{{"6F6BFFFE"}}));
}

TEST_F(duck_fixture, compressed_batches_read_like_plain_ones) {
    create_topic("z", 1);
    int64_t ts = 5000;
    for (auto c : sluice::testing::all_codecs) {
        const std::string n(protocol::compression_name(c));
        produce_bytes("z", 0,
                      sluice::testing::compress_batch(
                          build_batch({{n + "-k", R"({"codec":")" + n + R"("})", ts, {}},
                                       {std::nullopt, std::nullopt, ts + 1, {}}}),
                          c));
        ts += 10;
    }
    EXPECT_EQ(query("SELECT \"offset\", value_text ->> '$.codec' FROM kafka_topic('z') "
                    "WHERE value IS NOT NULL ORDER BY 1"),
              (rows{{"0", "gzip"}, {"2", "snappy"}, {"4", "lz4"}, {"6", "zstd"}}));
    EXPECT_EQ(query("SELECT \"offset\" FROM kafka_topic('z') WHERE timestamp_producer >= 5021 "
                    "ORDER BY 1"),
              (rows{{"5"}, {"6"}, {"7"}}));
}

TEST_F(duck_fixture, partitions_and_offsets_are_pushed_into_the_scan) {
    create_topic("t", 3);
    for (int p = 0; p < 3; ++p)
        for (int b = 0; b < 4; ++b)
            produce("t", p,
                    {{"k", "v" + std::to_string(b * 2), 1000 + b, {}},
                     {"k", "v" + std::to_string(b * 2 + 1), 1000 + b, {}}});
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t')"), (rows{{"24"}}));
    EXPECT_EQ(scanned_partitions(), 3);
    EXPECT_EQ(sess->last_scan().records_read, 24);
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE partition = 1"), (rows{{"8"}}));
    EXPECT_EQ(scanned_partitions(), 1);
    EXPECT_EQ(query("SELECT string_agg(\"offset\"::VARCHAR, ',' ORDER BY \"offset\") "
                    "FROM kafka_topic('t') WHERE partition = 2 AND \"offset\" > 2 AND "
                    "\"offset\" <= 5"),
              (rows{{"3,4,5"}}));
    EXPECT_EQ(scanned_partitions(), 1);
    EXPECT_EQ(sess->last_scan().batches_read, 2);  // the batches [2,3] and [4,5]
    // The constant on the left, BETWEEN, IN.
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE 6 <= \"offset\" AND "
                    "partition IN (0, 2)"),
              (rows{{"4"}}));
    EXPECT_EQ(scanned_partitions(), 3);            // 0..2: IN narrows to the hull of its values
    EXPECT_EQ(sess->last_scan().records_read, 6);  // records 6 and 7 of partitions 0..2
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE \"offset\" BETWEEN 1 AND 2"),
              (rows{{"6"}}));
    EXPECT_EQ(sess->last_scan().batches_read, 6);
    // Values that are not whole numbers, NULL, text: DuckDB's filter decides.
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE \"offset\" = 2.5 OR "
                    "partition = 7"),
              (rows{{"0"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE \"offset\" < 2.5"), (rows{{"9"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE \"offset\" > NULL"),
              (rows{{"0"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE partition = 9"), (rows{{"0"}}));
    EXPECT_EQ(scanned_partitions(), 0);
    // Not pushed down (an OR): every partition read, the answer still exact.
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('t') WHERE partition = 0 OR \"offset\" = 7"),
              (rows{{"10"}}));
    EXPECT_EQ(scanned_partitions(), 3);
}

TEST_F(duck_fixture, time_ranges_read_only_the_segments_that_hold_them) {
    log::log_config cfg;
    cfg.segment_bytes = 300;  // about one batch per segment
    create_topic("events", 1, cfg);
    for (int i = 0; i < 40; ++i)
        produce("events", 0, {{"k", std::string(100, 'x'), 10'000 + i * 1000, {}}},
                3'610'000 + i * 1000);
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('events')"), (rows{{"40"}}));
    EXPECT_GE(sess->last_scan().segments_read, 20);
    EXPECT_EQ(query("SELECT min(\"offset\"), max(\"offset\") FROM kafka_topic('events') "
                    "WHERE timestamp_producer >= 45000"),
              (rows{{"35", "39"}}));
    EXPECT_LE(sess->last_scan().segments_read, 6);
    EXPECT_EQ(
        query("SELECT string_agg(\"offset\"::VARCHAR, ',' ORDER BY \"offset\") "
              "FROM kafka_topic('events') WHERE timestamp_broker BETWEEN 3620000 AND 3622500"),
        (rows{{"10,11,12"}}));
    EXPECT_LE(sess->last_scan().segments_read, 4);
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('events') WHERE timestamp_broker > 3649000"),
              (rows{{"0"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('events') WHERE timestamp_broker < 3611000"),
              (rows{{"1"}}));
}

TEST_F(duck_fixture, read_committed_and_one_cut_per_statement) {
    create_topic("tx", 1);
    auto* pl = logs->get("tx", 0);
    produce("tx", 0, {{"k", "plain", 1, {}}});
    auto txn = [&](int64_t pid, const std::string& v) { return produce_txn("tx", pid, v); };
    auto marker = [&](int64_t pid, bool commit) { write_marker(pl, pid, commit); };
    txn(7, "committed");                        // 1..2
    txn(8, "aborted");                          // 3..4
    marker(7, true);                            // 5
    marker(8, false);                           // 6
    txn(9, "open");                             // 7..8: the last stable offset stays at 7
    produce("tx", 0, {{"k", "after", 4, {}}});  // 9: above the last stable offset
    EXPECT_EQ(query("SELECT \"offset\", value_text FROM kafka_topic('tx') ORDER BY 1"),
              (rows{{"0", "plain"}, {"1", "committed"}, {"2", "committed"}}));
    marker(9, true);  // 10: everything up to it is stable now
    EXPECT_EQ(query("SELECT count(*), count(*) FILTER (value_text = 'aborted') "
                    "FROM kafka_topic('tx')"),
              (rows{{"6", "0"}}));
    // Two references in one statement see one cut.
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('tx') a JOIN kafka_topic('tx') b "
                    "USING (\"offset\")"),
              (rows{{"6"}}));
}

TEST_F(duck_fixture, count_star_counts_batches_from_their_headers) {
    create_topic("c", 2);
    auto* pl = logs->get("c", 0);
    // Partition 0: a plain batch, every codec's, a batch larger than DuckDB's vector (2048
    // rows), committed and aborted transactions with their markers, an open one.
    produce("c", 0, {{"k", "a", 1, {}}, {"k", "b", 2, {}}, {"k", "c", 3, {}}});  // 0..2
    for (auto codec : sluice::testing::all_codecs)
        produce_bytes("c", 0,
                      sluice::testing::compress_batch(
                          build_batch({{"k", "z", 4, {}}, {std::nullopt, std::nullopt, 5, {}}}),
                          codec));  // 3..10
    std::vector<test_record> big;
    big.reserve(5000);
    for (int i = 0; i < 5000; ++i) big.push_back({"k", std::to_string(i), 6, {}});
    produce("c", 0, big);                      // 11..5010
    produce_txn("c", 7, "committed");          // 5011..5012
    produce_txn("c", 8, "aborted");            // 5013..5014
    write_marker(pl, 7, true);                 // 5015
    write_marker(pl, 8, false);                // 5016
    produce_txn("c", 9, "open");               // 5017..5018: the last stable offset stays
    produce("c", 0, {{"k", "after", 7, {}}});  // 5019: above it
    produce("c", 1, {{"k", "p1", 8, {}}});
    // 3 + 8 + 5000 + 2 records of partition 0, 1 of partition 1: what decoding every
    // record (count of a column) finds too.
    const char* star = "SELECT count(*) FROM kafka_topic('c')";
    EXPECT_EQ(query(star), (rows{{"5014"}}));
    EXPECT_EQ(sess->last_scan().records_read, 5014);
    EXPECT_EQ(query("SELECT count(\"offset\") FROM kafka_topic('c')"), (rows{{"5014"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('c') WHERE partition = 0"), (rows{{"5013"}}));
    // Offset bounds that cut batches (the big one, at 20): those records are decoded.
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('c') WHERE partition = 0 AND "
                    "\"offset\" BETWEEN 5 AND 20"),
              (rows{{"16"}}));
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('c') WHERE \"offset\" >= 5011"),
              (rows{{"2"}}));
    write_marker(pl, 9, true);
    EXPECT_EQ(query(star), (rows{{"5017"}}));
    // Rows without columns join and group as rows.
    EXPECT_EQ(query("SELECT count(*), sum(1) FROM (SELECT 1 FROM kafka_topic('c') LIMIT 3000)"),
              (rows{{"3000", "3000"}}));
    // A log start inside a batch (DeleteRecords) cuts it: its records are decoded.
    ASSERT_TRUE(pl->delete_records(12));
    EXPECT_EQ(query(star), (rows{{"5005"}}));
    EXPECT_EQ(query("SELECT count(\"offset\") FROM kafka_topic('c')"), (rows{{"5005"}}));
}

TEST_F(duck_fixture, sessions_run_at_once_each_with_its_own_counters) {
    create_topic("t", 2);
    produce("t", 0, {{"k", "a", 1, {}}, {"k", "b", 2, {}}});
    produce("t", 1, {{"k", "c", 3, {}}});
    auto other = eng->open_session(nullptr, {"bob", true});
    std::atomic<int> wrong{0};
    auto run = [&](session& s, const std::string& sql, const std::string& want,
                   int64_t partitions) {
        for (int i = 0; i < 20; ++i) {
            auto r = s.query(sql);
            if (!r || r->rows.size() != 1 || r->rows[0][0] != want ||
                s.last_scan().partitions_scanned != partitions)
                ++wrong;
        }
    };
    std::thread a([&] { run(*sess, "SELECT count(*) FROM kafka_topic('t')", "3", 2); });
    std::thread b(
        [&] { run(*other, "SELECT count(*) FROM kafka_topic('t') WHERE partition = 1", "1", 1); });
    a.join();
    b.join();
    EXPECT_EQ(wrong.load(), 0);
}

struct authz_fixture : duck_fixture {
    const security::gate* gate_for_session() override { return &gate; }
    test::fake_gate gate;
};

TEST_F(authz_fixture, reading_a_topic_needs_kafka_read_at_bind) {
    create_topic("orders", 1);
    create_topic("secret", 1);
    produce("orders", 0, {{"k", "o1", 1, {}}});
    produce("secret", 0, {{"k", "s1", 1, {}}});
    gate.allow("alice", action::read, "sluice:topic:orders");
    EXPECT_EQ(query("SELECT value_text FROM kafka_topic('orders')"), (rows{{"o1"}}));
    for (const char* sql :
         {"SELECT count(*) FROM kafka_topic('secret')",
          "SELECT * FROM kafka_topic('orders') o JOIN kafka_topic('secret') s USING (key)",
          "SELECT (SELECT max(value_text) FROM kafka_topic('secret'))",
          "EXPLAIN SELECT * FROM kafka_topic('secret')",
          "SELECT count(*) FROM kafka_topic('nosuch')"}) {
        auto e = failure_of(sql);
        EXPECT_EQ(e.kind, failure::not_authorized) << sql << ": " << e.message;
        EXPECT_NE(e.message.find("User:alice"), std::string::npos) << e.message;
    }
    // A view does not carry its creator's rights: the reader's are checked when it binds.
    gate.allow("alice", action::read, "sluice:topic:secret");
    EXPECT_EQ(query("CREATE TEMP VIEW s AS SELECT value_text FROM kafka_topic('secret')"), rows{});
    EXPECT_EQ(query("SELECT * FROM s"), (rows{{"s1"}}));
    gate.revoke_all();
    EXPECT_EQ(failure_of("SELECT * FROM s").kind, failure::not_authorized);
    // Another session of the engine has its own principal.
    gate.allow("alice", action::read, "sluice:topic:secret");
    auto bob = eng->open_session(&gate, {"bob", true});
    auto r = bob->query("SELECT * FROM kafka_topic('secret')");
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message.find("User:bob"), std::string::npos) << r.error().message;
    EXPECT_EQ(query("SELECT count(*) FROM kafka_topic('secret')"), (rows{{"1"}}));
    // A prepared statement takes a new cut and is checked again each time it runs.
    EXPECT_EQ(query("PREPARE q AS SELECT count(*) FROM kafka_topic('secret')"), rows{});
    EXPECT_EQ(query("EXECUTE q"), (rows{{"1"}}));
    produce("secret", 0, {{"k", "s2", 2, {}}});
    EXPECT_EQ(query("EXECUTE q"), (rows{{"2"}}));
    gate.revoke_all();
    EXPECT_EQ(failure_of("EXECUTE q").kind, failure::not_authorized);
    // An unknown topic the principal may read is an unknown table.
    gate.allow("alice", action::read, "sluice:topic:nosuch");
    EXPECT_EQ(failure_of("SELECT * FROM kafka_topic('nosuch')").kind, failure::undefined_table);
}

TEST_F(duck_fixture, no_file_network_or_extension_access_and_the_settings_are_locked) {
    for (const char* sql : {
             "SELECT * FROM read_csv('/etc/passwd')",
             "SELECT * FROM read_text('/etc/hostname')",
             "COPY (SELECT 1) TO '/tmp/sluice-duck-copy.csv'",
             "ATTACH '/tmp/sluice-duck-attach.db' AS x",
             "INSTALL httpfs",
             "LOAD httpfs",
             "SET enable_external_access = true",
             "SET memory_limit = '100GB'",
             "SET temp_directory = '/tmp'",
             "SET lock_configuration = false",
             "SET autoload_known_extensions = true",
         }) {
        auto r = sess->query(sql);
        EXPECT_FALSE(r) << sql << " was allowed";
    }
    EXPECT_FALSE(std::filesystem::exists("/tmp/sluice-duck-copy.csv"));
    EXPECT_EQ(query("SELECT current_setting('enable_external_access'), "
                    "current_setting('lock_configuration'), "
                    "current_setting('autoload_known_extensions')"),
              (rows{{"false", "true", "false"}}));
    // The temp directory is the data directory's, a path SQL users are not shown
    // (duck/catalog_views.h).
    EXPECT_EQ(failure_of("SELECT current_setting('temp_directory')").kind, failure::not_authorized);
    EXPECT_EQ(query("SELECT count(*) FROM duckdb_settings() "
                    "WHERE name = 'temp_directory' AND value IS NULL"),
              (rows{{"1"}}));
    EXPECT_EQ(query("SELECT count(*) FROM duckdb_databases() WHERE path IS NOT NULL"),
              (rows{{"0"}}));
    EXPECT_EQ(query("SELECT current_setting('memory_limit')"), (rows{{"256.0 MiB"}}));
    EXPECT_EQ(failure_of("SELECT 1 FROM kafka_topic(NULL)").kind, failure::invalid_parameter);
}

// Shared mode's path (docs/shared-mode.md, "SQL"): the topics from a topic store and the
// partitions through the partition-log interface (options::partitions, log::store_cursor),
// here over the same local logs, which implement that interface too: the same rows, the
// same pushdown (but no append times), the same read_committed cut as the local path.
struct logs_as_source final : partition_source {
    explicit logs_as_source(log::log_manager& l) : logs(l) {}
    log::partition_store* partition(const std::string& topic, int32_t p) override {
        return logs.get(topic, p);
    }
    log::log_manager& logs;
};

struct shared_fixture : duck_fixture {
    void SetUp() override {
        duck_fixture::SetUp();
        auto c = catalog::catalog::open(dir.path / "catalog.db");
        ASSERT_TRUE(c) << c.err().message;
        cat = std::move(*c);
        source = std::make_unique<logs_as_source>(*logs);
        options o;
        o.data_dir = dir.path / "through";
        std::filesystem::create_directories(o.data_dir);
        o.logs = logs.get();
        o.catalog = cat.get();
        o.topics = cat.get();
        o.security = cat.get();
        o.partitions = source.get();
        auto e = engine::open(o);
        ASSERT_TRUE(e) << e.error().message;
        through_eng = std::move(*e);
        through = through_eng->open_session(nullptr, {"alice", true});
    }
    void TearDown() override {
        through.reset();
        through_eng.reset();
        duck_fixture::TearDown();
    }
    void create_shared_topic(const std::string& name, int32_t partitions) {
        catalog::topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = partitions;
        ASSERT_TRUE(cat->create_topic(t));
        create_topic(name, partitions);
    }
    rows shared_query(std::string_view sql) {
        auto r = through->query(sql);
        EXPECT_TRUE(r) << sql << ": " << (r ? "" : r.error().message);
        rows out;
        for (const auto& row : r ? r->rows : decltype(r->rows){}) {
            auto& cells = out.emplace_back();
            for (const auto& c : row) cells.push_back(c ? *c : "NULL");
        }
        return out;
    }
    const scan_stats& shared_scan() const { return through->last_scan(); }

    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<logs_as_source> source;
    std::unique_ptr<engine> through_eng;
    std::unique_ptr<session> through;
};

TEST_F(shared_fixture, the_same_rows_through_the_partition_log_interface) {
    create_shared_topic("Orders", 3);
    for (int i = 0; i < 30; ++i)
        produce("Orders", i % 3,
                {{"k" + std::to_string(i), "{\"n\":" + std::to_string(i % 4) + "}", 1000 + i, {}}});
    produce_bytes("Orders", 1,
                  sluice::testing::compress_batch(
                      build_batch({{"zk", "zipped", 2000, {{"h", "x"}}}, {"zk2", "z2", 2001, {}}}),
                      protocol::compression::gzip));
    for (const char* sql :
         {"SELECT partition, \"offset\", timestamp_producer, key, value, headers, key_text, "
          "timestamp_producer_tz FROM kafka_topics.\"Orders\" ORDER BY 1, 2",
          "SELECT count(*), count(DISTINCT key) FROM kafka_topic('Orders')",
          "SELECT value ->> '$.n' AS n, count(*) FROM kafka_topic('Orders') GROUP BY 1 ORDER BY 1"})
        EXPECT_EQ(shared_query(sql), query(sql)) << sql;
    EXPECT_EQ(shared_query("SELECT count(*) FROM orders"), (rows{{"32"}}));
    // Shared mode keeps no broker append times: NULL, and a filter on them matches nothing.
    EXPECT_EQ(
        shared_query("SELECT count(timestamp_broker), count(timestamp_broker_tz) FROM orders"),
        (rows{{"0", "0"}}));
    EXPECT_EQ(shared_query("SELECT count(*) FROM orders WHERE timestamp_broker > 0"),
              (rows{{"0"}}));
    // The system tables read the partitions through the interface too.
    EXPECT_EQ(shared_query("SELECT partition, log_start_offset, high_watermark, bytes "
                           "FROM system.partitions WHERE topic = 'Orders' ORDER BY 1"),
              (rows{{"0", "0", "10", "NULL"}, {"1", "0", "12", "NULL"}, {"2", "0", "10", "NULL"}}));
    auto e = through->query("SELECT * FROM kafka_topic('nosuch')");
    ASSERT_FALSE(e);
    EXPECT_EQ(e.error().kind, failure::undefined_table);
}

TEST_F(shared_fixture, partitions_offsets_and_producer_times_are_pushed_into_the_scan) {
    create_shared_topic("t", 3);
    for (int p = 0; p < 3; ++p)
        for (int b = 0; b < 4; ++b)
            produce("t", p,
                    {{"k", "v" + std::to_string(b * 2), 1000 + b * 2, {}},
                     {"k", "v" + std::to_string(b * 2 + 1), 1001 + b * 2, {}}});
    EXPECT_EQ(shared_query("SELECT count(*) FROM t"), (rows{{"24"}}));
    EXPECT_EQ(shared_scan().partitions_scanned, 3);
    EXPECT_EQ(shared_scan().records_read, 24);
    EXPECT_EQ(shared_query("SELECT string_agg(\"offset\"::VARCHAR, ',' ORDER BY \"offset\") "
                           "FROM t WHERE partition = 2 AND \"offset\" BETWEEN 3 AND 5"),
              (rows{{"3,4,5"}}));
    EXPECT_EQ(shared_scan().partitions_scanned, 1);
    EXPECT_EQ(shared_scan().batches_read, 2);  // the batches [2,3] and [4,5]
    // A lower bound on timestamp_producer starts each partition at the first record at or
    // after it (ListOffsets by timestamp).
    EXPECT_EQ(shared_query("SELECT count(*) FROM t WHERE timestamp_producer >= 1006"),
              (rows{{"6"}}));
    EXPECT_EQ(shared_scan().records_read, 6);
    EXPECT_EQ(shared_query("SELECT count(*) FROM t WHERE partition = 9"), (rows{{"0"}}));
    EXPECT_EQ(shared_scan().partitions_scanned, 0);
}

TEST_F(shared_fixture, read_committed_cut_as_on_the_local_path) {
    create_shared_topic("tx", 1);
    auto* pl = logs->get("tx", 0);
    produce("tx", 0, {{"k", "plain", 1, {}}});
    auto txn = [&](int64_t pid, const std::string& v) { return produce_txn("tx", pid, v); };
    auto marker = [&](int64_t pid, bool commit) { write_marker(pl, pid, commit); };
    txn(7, "committed");                        // 1..2
    txn(8, "aborted");                          // 3..4
    marker(7, true);                            // 5
    marker(8, false);                           // 6
    txn(9, "open");                             // 7..8: the last stable offset stays at 7
    produce("tx", 0, {{"k", "after", 4, {}}});  // 9: above the last stable offset
    const char* all = "SELECT \"offset\", value_text FROM kafka_topic('tx') ORDER BY 1";
    EXPECT_EQ(shared_query(all), (rows{{"0", "plain"}, {"1", "committed"}, {"2", "committed"}}));
    marker(9, true);  // 10: everything up to it is stable now
    EXPECT_EQ(shared_query(all), query(all));
    EXPECT_EQ(shared_query("SELECT count(*), count(*) FILTER (value_text = 'aborted') FROM tx"),
              (rows{{"6", "0"}}));
    EXPECT_EQ(shared_query("SELECT count(*) FROM tx"), (rows{{"6"}}));  // no column read
}

}  // namespace
}  // namespace sluice::sql::duck

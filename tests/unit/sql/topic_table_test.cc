// kafka_topics."<topic>" and the system tables over a real log manager and catalog.

#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "catalog/catalog.h"
#include "log/log_manager.h"
#include "sql/partition_source.h"
#include "sql/sql_security_util.h"
#include "sql/statement_context.h"
#include "sql/topic_table.h"
#include "sql_test_util.h"
#include "support/batch_builder.h"
#include "support/compressed_batch.h"

namespace sluice::sql::test {
namespace {

using rows = std::vector<std::vector<std::string>>;
using sluice::testing::build_batch;
using sluice::testing::test_record;

struct topic_fixture : ::testing::Test {
    void SetUp() override {
        auto c = catalog::catalog::open(dir.path / "catalog.db");
        ASSERT_TRUE(c) << c.err().message;
        cat = std::move(*c);
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        engine_options o;
        o.data_dir = dir.path;
        o.logs = logs.get();
        o.catalog = cat.get();
        open_engine_and_session(o, eng, sess);
    }
    void TearDown() override {
        sess.reset();
        eng.reset();
        logs->close();
    }

    void create_topic(const std::string& name, int32_t partitions, log::log_config cfg = {}) {
        catalog::topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = partitions;
        ASSERT_TRUE(cat->create_topic(t));
        logs->add_topic(name, partitions, cfg);
    }

    // Appends one batch and waits until it is durable (visible to SQL).
    offset_t produce(const std::string& topic, int32_t p, const std::vector<test_record>& recs,
                     timestamp_ms now = 1000) {
        return produce_bytes(topic, p, build_batch(recs), now);
    }
    offset_t produce_bytes(const std::string& topic, int32_t p, bytes payload,
                           timestamp_ms now = 1000) {
        auto* pl = logs->get(topic, p);
        EXPECT_NE(pl, nullptr);
        auto v = protocol::validate_batches(payload, {});
        EXPECT_TRUE(v);
        auto r = pl->append(std::span<uint8_t>(payload), *v, now);
        EXPECT_TRUE(r) << r.err().message;
        auto done = std::make_shared<std::promise<result<void>>>();
        auto fut = done->get_future();
        logs->when_durable(pl, r->last_offset,
                           [done](result<void> x) { done->set_value(std::move(x)); });
        EXPECT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        return r->base_offset;
    }

    temp_dir dir;
    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<log::log_manager> logs;
    std::unique_ptr<engine> eng;
    std::unique_ptr<session> sess;
};

TEST_F(topic_fixture, every_column_of_every_record) {
    create_topic("orders", 2);
    produce("orders", 0,
            {{"k1", R"({"op":"c","id":1})", 1111, {{"h1", "v1"}, {"h2", "v2"}}},
             {std::nullopt, "no key", 1112, {}}});
    produce("orders", 1, {{"k2", std::nullopt, 2222, {}}});
    EXPECT_EQ(query(*sess,
                    "SELECT partition, offset, timestamp_producer, key, value, headers "
                    "FROM kafka_topics.orders ORDER BY partition, offset"),
              (rows{{"0", "0", "1111", "k1", R"({"op":"c","id":1})",
                     R"([{"key":"h1","value":"v1"},{"key":"h2","value":"v2"}])"},
                    {"0", "1", "1112", "NULL", "no key", "[]"},
                    {"1", "0", "2222", "k2", "NULL", "[]"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT value ->> '$.op', value ->> '$.id' FROM kafka_topics.orders "
                    "WHERE key = CAST('k1' AS BLOB)"),
              (rows{{"c", "1"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT typeof(key), typeof(value), typeof(timestamp_broker) "
                    "FROM kafka_topics.orders WHERE partition = 0 AND offset = 0"),
              (rows{{"blob", "blob", "integer"}}));
}

TEST_F(topic_fixture, compressed_batches_read_like_plain_ones) {
    create_topic("z", 1);
    int64_t ts = 5000;
    for (auto c : sluice::testing::all_codecs) {
        const std::string n(protocol::compression_name(c));
        produce_bytes("z", 0,
                      sluice::testing::compress_batch(
                          build_batch({{n + "-k", R"({"codec":")" + n + R"("})", ts, {{"h", n}}},
                                       {std::nullopt, std::nullopt, ts + 1, {}}}),
                          c));
        ts += 10;
    }
    EXPECT_EQ(query(*sess,
                    "SELECT offset, timestamp_producer, key, value ->> '$.codec', headers "
                    "FROM kafka_topics.z WHERE value IS NOT NULL ORDER BY offset"),
              (rows{{"0", "5000", "gzip-k", "gzip", R"([{"key":"h","value":"gzip"}])"},
                    {"2", "5010", "snappy-k", "snappy", R"([{"key":"h","value":"snappy"}])"},
                    {"4", "5020", "lz4-k", "lz4", R"([{"key":"h","value":"lz4"}])"},
                    {"6", "5030", "zstd-k", "zstd", R"([{"key":"h","value":"zstd"}])"}}));
    // A time predicate looks records up inside the compressed batches.
    EXPECT_EQ(query(*sess, "SELECT offset FROM kafka_topics.z WHERE timestamp_producer >= 5021"),
              (rows{{"5"}, {"6"}, {"7"}}));
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.z WHERE offset BETWEEN 3 AND 6"),
              (rows{{"4"}}));
}

TEST_F(topic_fixture, offsets_and_partitions_narrow_the_scan) {
    create_topic("t", 3);
    for (int p = 0; p < 3; ++p)
        for (int b = 0; b < 4; ++b)
            produce("t", p,
                    {{"k", "v" + std::to_string(b * 2), 1000 + b, {}},
                     {"k", "v" + std::to_string(b * 2 + 1), 1000 + b, {}}});
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.t"), (rows{{"24"}}));
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.t WHERE partition = 1"),
              (rows{{"8"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT group_concat(offset) FROM kafka_topics.t WHERE partition = 2 AND "
                    "offset > 2 AND offset <= 5"),
              (rows{{"3,4,5"}}));
    auto scan = query(*sess,
                      "SELECT sluice_last_scan() ->> '$.partitions_scanned', "
                      "sluice_last_scan() ->> '$.batches_read'");
    EXPECT_EQ(scan, (rows{{"1", "2"}}));  // the batches [2,3] and [4,5]
    EXPECT_EQ(
        query(*sess,
              "SELECT count(*) FROM kafka_topics.t WHERE partition IN (0, 2) AND offset >= 6"),
        (rows{{"4"}}));
    EXPECT_EQ(
        query(*sess, "SELECT count(*) FROM kafka_topics.t WHERE offset = 2.5 OR partition = 7"),
        (rows{{"0"}}));
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.t WHERE offset < '3'"),
              (rows{{"9"}}));
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.t WHERE offset > NULL"),
              (rows{{"0"}}));
}

TEST_F(topic_fixture, time_ranges_read_only_the_segments_that_hold_them) {
    log::log_config cfg;
    cfg.segment_bytes = 300;  // about one batch per segment
    create_topic("events", 1, cfg);
    // Producer times and broker append times both one second apart, the broker's an hour
    // later.
    for (int i = 0; i < 40; ++i)
        produce("events", 0, {{"k", std::string(100, 'x'), 10'000 + i * 1000, {}}},
                3'610'000 + i * 1000);
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.events"), (rows{{"40"}}));
    auto full = query(*sess, "SELECT sluice_last_scan() ->> '$.segments_read'");
    ASSERT_EQ(full.size(), 1u);
    EXPECT_GE(std::stoi(full[0][0]), 20);
    EXPECT_EQ(query(*sess,
                    "SELECT min(offset), max(offset) FROM kafka_topics.events "
                    "WHERE timestamp_producer >= 45000"),
              (rows{{"35", "39"}}));
    auto narrow = query(*sess, "SELECT sluice_last_scan() ->> '$.segments_read'");
    ASSERT_EQ(narrow.size(), 1u);
    EXPECT_LE(std::stoi(narrow[0][0]), 6);

    EXPECT_EQ(query(*sess,
                    "SELECT group_concat(offset) FROM kafka_topics.events "
                    "WHERE timestamp_broker BETWEEN 3620000 AND 3622500"),
              (rows{{"10,11,12"}}));
    auto broker_range = query(*sess, "SELECT sluice_last_scan() ->> '$.segments_read'");
    ASSERT_EQ(broker_range.size(), 1u);
    EXPECT_LE(std::stoi(broker_range[0][0]), 4);
    EXPECT_EQ(query(*sess, "SELECT timestamp_broker FROM kafka_topics.events WHERE offset = 39"),
              (rows{{"3649000"}}));
    EXPECT_EQ(
        query(*sess, "SELECT count(*) FROM kafka_topics.events WHERE timestamp_broker > 3649000"),
        (rows{{"0"}}));
    EXPECT_EQ(
        query(*sess, "SELECT count(*) FROM kafka_topics.events WHERE timestamp_broker < 3611000"),
        (rows{{"1"}}));
}

TEST_F(topic_fixture, a_statement_sees_appended_records_and_one_cut) {
    create_topic("t", 1);
    produce("t", 0, {{"a", "1", 1, {}}});
    logs->set_flush_paused(true);
    auto* pl = logs->get("t", 0);
    bytes payload = build_batch({{"b", "2", 2, {}}});
    auto v = protocol::validate_batches(payload, {});
    ASSERT_TRUE(pl->append(std::span<uint8_t>(payload), *v, 5));
    // Appended but not yet durable: visible already (the high watermark moves on append,
    // as in Kafka), so an acks=1 producer reads its own write.
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.t"), (rows{{"2"}}));
    logs->set_flush_paused(false);
    // A self-join sees the same records on both sides.
    EXPECT_EQ(
        query(*sess,
              "SELECT count(*) FROM kafka_topics.t a JOIN kafka_topics.t b ON a.offset = b.offset"),
        (rows{{"2"}}));
}

TEST_F(topic_fixture, topics_come_and_go_and_cannot_be_written) {
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM kafka_topics.later").kind, failure::undefined_table);
    create_topic("later", 1);
    produce("later", 0, {{"k", "v", 5, {}}});
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.later"), (rows{{"v"}}));
    auto e = failure_of(*sess, "INSERT INTO kafka_topics.later(partition, offset) VALUES (0, 9)");
    EXPECT_EQ(e.kind, failure::read_only) << e.message;
    EXPECT_EQ(failure_of(*sess, "DELETE FROM kafka_topics.later").kind, failure::read_only);
    EXPECT_EQ(failure_of(*sess, "DROP TABLE kafka_topics.later").kind, failure::read_only);
    ASSERT_TRUE(cat->delete_topic("later"));
    ASSERT_TRUE(logs->remove_topic("later"));
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM kafka_topics.later").kind, failure::undefined_table);
    // Names that need quoting.
    create_topic("with.dots-and_dash", 1);
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.\"with.dots-and_dash\""),
              (rows{{"0"}}));
}

// Kafka tells apart names that differ only in case, SQLite does not; and SQLite
// reserves sqlite_*. Every topic still gets its own table, by its exact name.
TEST_F(topic_fixture, topics_differing_in_case_and_reserved_names_each_get_a_table) {
    const std::string long_name(249, 'L');
    create_topic("caset", 1);
    produce("caset", 0, {{"k", "lower", 5, {}}});
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.caset"), (rows{{"lower"}}));
    create_topic("CaseT", 1);
    produce("CaseT", 0, {{"k", "upper", 5, {}}});
    create_topic("sqlite_events", 1);
    produce("sqlite_events", 0, {{"k", "reserved", 5, {}}});
    create_topic(long_name, 1);
    produce(long_name, 0, {{"k", "long", 5, {}}});
    EXPECT_EQ(query(*sess, "SELECT 1"), (rows{{"1"}}));
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.\"CaseT\""), (rows{{"upper"}}));
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.\"caset\""), (rows{{"lower"}}));
    EXPECT_EQ(query(*sess, "SELECT a.value, b.value FROM kafka_topics.CaseT a, "
                           "kafka_topics.caset b"),
              (rows{{"upper", "lower"}}));
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.sqlite_events"), (rows{{"reserved"}}));
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.\"" + long_name + "\""),
              (rows{{"long"}}));
    // Several statements in one string: each one's tail is found in the original text.
    EXPECT_EQ(query(*sess, "SELECT 1 FROM kafka_topics.\"CaseT\"; SELECT value FROM "
                           "kafka_topics.\"caset\""),
              (rows{{"lower"}}));
    // A spelling that is neither topic's is no table.
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM kafka_topics.\"CASET\"").kind,
              failure::undefined_table);
    // Deleting one gives the other its plain name back.
    ASSERT_TRUE(cat->delete_topic("caset"));
    ASSERT_TRUE(logs->remove_topic("caset"));
    EXPECT_EQ(query(*sess, "SELECT name FROM kafka_topics.sqlite_master ORDER BY name"),
              (rows{{"CaseT"}, {long_name}, {"~sqlite_events"}}));
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.caset"), (rows{{"upper"}}));
}

// A topic whose table cannot be made (here: its name is taken in kafka_topics) is left
// out, and the other topics' tables are made as before.
TEST_F(topic_fixture, a_table_that_cannot_be_made_leaves_the_others_serving) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "ATTACH ':memory:' AS kafka_topics; "
                               "CREATE TABLE kafka_topics.taken(x)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    create_topic("taken", 1);
    create_topic("fine", 1);
    produce("fine", 0, {{"k", "served", 5, {}}});
    statement_context ctx;
    topic_tables tables(*cat, logs.get(), nullptr, ctx);
    auto r = tables.install(db);
    EXPECT_TRUE(r) << r.error().message;
    EXPECT_FALSE(tables.table_for("taken"));
    EXPECT_EQ(tables.table_for("fine"), "fine");
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT CAST(value AS TEXT) FROM kafka_topics.fine", -1, &st,
                                 nullptr),
              SQLITE_OK);
    ctx.begin_statement();
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)), "served");
    sqlite3_finalize(st);
    sqlite3_close(db);
}

TEST_F(topic_fixture, latest_value_per_key_with_a_window_function) {
    create_topic("cdc", 1);
    produce("cdc", 0, {{"a", R"({"v":1})", 1, {}}, {"b", R"({"v":1})", 2, {}}});
    produce("cdc", 0, {{"a", R"({"v":2})", 3, {}}});
    EXPECT_EQ(
        query(
            *sess,
            "SELECT CAST(key AS TEXT), value ->> '$.v' FROM (SELECT key, value, row_number() OVER "
            "(PARTITION BY key ORDER BY offset DESC) AS rn FROM kafka_topics.cdc) WHERE rn = 1 "
            "ORDER BY key"),
        (rows{{"a", "2"}, {"b", "1"}}));
}

TEST_F(topic_fixture, system_tables) {
    catalog::topic_info t;
    create_topic("s", 2);
    produce("s", 1, {{"k", "v", 1, {}}, {"k", "v", 2, {}}});
    EXPECT_EQ(query(*sess, "SELECT topic, partitions, cleanup_policy FROM system.topics"),
              (rows{{"s", "2", "delete"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT partition, log_start_offset, high_watermark, log_end_offset, segments "
                    "FROM system.partitions WHERE topic = 's' ORDER BY partition"),
              (rows{{"0", "0", "0", "0", "0"}, {"1", "0", "2", "2", "1"}}));
    EXPECT_EQ(
        query(
            *sess,
            "SELECT value, source FROM system.configs WHERE topic = 's' AND name = 'retention.ms'"),
        (rows{{"604800000", "default"}}));
    EXPECT_EQ(failure_of(*sess, "DELETE FROM system.topics").kind, failure::read_only);
}

// ---- Authorization: KafkaRead to read a topic, KafkaDescribe to see it listed ----

using security::action;

struct authz_fixture : topic_fixture {
    void SetUp() override {
        topic_fixture::SetUp();
        sess.reset();
        eng.reset();
        engine_options o;
        o.data_dir = dir.path;
        o.logs = logs.get();
        o.catalog = cat.get();
        o.gate = &gate;
        open_engine_and_session(o, eng, sess);
        if (HasFatalFailure()) return;
        sess->set_principal({"alice", true});
        create_topic("orders", 1);
        create_topic("secret", 1);
        produce("orders", 0, {{"k", "o1", 1, {}}, {"k", "o2", 2, {}}});
        produce("secret", 0, {{"k", "s1", 1, {}}});
    }

    // The statements fail with not_authorized, naming the topic and the action.
    void expect_denied(std::string_view sql, const std::string& topic) {
        auto e = failure_of(*sess, sql);
        EXPECT_EQ(e.kind, failure::not_authorized) << sql << ": " << e.message;
        EXPECT_STREQ(sqlstate(e.kind), "42501");
        EXPECT_NE(e.message.find("\"" + topic + "\""), std::string::npos) << e.message;
        EXPECT_NE(e.message.find("KafkaRead"), std::string::npos) << e.message;
        EXPECT_NE(e.message.find("User:alice"), std::string::npos) << e.message;
    }

    fake_gate gate;
};

TEST_F(authz_fixture, reading_a_topic_needs_kafka_read) {
    expect_denied("SELECT value FROM kafka_topics.orders", "orders");
    expect_denied("SELECT count(*) FROM kafka_topics.orders", "orders");  // no column read
    gate.allow("alice", action::read, "sluice:topic:orders");
    EXPECT_EQ(query(*sess, "SELECT value FROM kafka_topics.orders"), (rows{{"o1"}, {"o2"}}));
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM kafka_topics.orders"), (rows{{"2"}}));
    // Another principal on the same engine has its own rights.
    sess->set_principal({"bob", true});
    auto e = failure_of(*sess, "SELECT * FROM kafka_topics.orders");
    EXPECT_EQ(e.kind, failure::not_authorized);
    EXPECT_NE(e.message.find("User:bob"), std::string::npos) << e.message;
}

TEST_F(authz_fixture, no_path_around_the_check) {
    gate.allow("alice", action::read, "sluice:topic:orders");
    expect_denied("CREATE TEMP VIEW v AS SELECT value FROM kafka_topics.secret; SELECT * FROM v",
                  "secret");
    expect_denied("SELECT (SELECT max(value) FROM kafka_topics.secret)", "secret");
    expect_denied("SELECT 1 WHERE EXISTS (SELECT 1 FROM kafka_topics.secret)", "secret");
    expect_denied("WITH c AS (SELECT * FROM kafka_topics.secret) SELECT count(*) FROM c", "secret");
    expect_denied(
        "SELECT o.value, s.value FROM kafka_topics.orders o JOIN kafka_topics.secret s "
        "ON o.offset = s.offset",
        "secret");
    expect_denied(
        "SELECT value FROM kafka_topics.orders UNION ALL SELECT value FROM "
        "kafka_topics.secret",
        "secret");
    expect_denied("CREATE TABLE copy AS SELECT * FROM kafka_topics.secret", "secret");
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM copy").kind, failure::undefined_table);
}

TEST_F(authz_fixture, allowed_through_views_joins_and_subqueries) {
    gate.allow("alice", action::read, "sluice:topic:orders");
    gate.allow("alice", action::read, "sluice:topic:secret");
    EXPECT_EQ(query(*sess,
                    "CREATE TEMP VIEW v AS SELECT value FROM kafka_topics.secret; SELECT * FROM v"),
              (rows{{"s1"}}));
    EXPECT_EQ(query(*sess,
                    "SELECT o.value, s.value FROM kafka_topics.orders o JOIN kafka_topics.secret s "
                    "ON o.offset = s.offset"),
              (rows{{"o1", "s1"}}));
    EXPECT_EQ(query(*sess, "SELECT (SELECT count(*) FROM kafka_topics.secret)"), (rows{{"1"}}));
}

TEST_F(authz_fixture, a_prepared_statement_is_checked_again_when_it_runs) {
    gate.allow("alice", action::read, "sluice:topic:orders");
    auto st = sess->prepare("SELECT value FROM kafka_topics.orders");
    ASSERT_TRUE(st && *st);
    gate.revoke_all();
    EXPECT_EQ((*st)->step(), statement::step_state::failed);
    EXPECT_EQ((*st)->error().kind, failure::not_authorized) << (*st)->error().message;
}

TEST_F(authz_fixture, kafka_topics_holds_what_the_principal_may_see) {
    const char* listing = "SELECT name FROM kafka_topics.sqlite_master ORDER BY name";
    EXPECT_EQ(query(*sess, listing), rows{});
    gate.allow("alice", action::describe, "sluice:topic:secret");
    EXPECT_EQ(query(*sess, listing), (rows{{"secret"}}));
    gate.allow("alice", action::read, "sluice:topic:orders");
    EXPECT_EQ(query(*sess, listing), (rows{{"orders"}, {"secret"}}));
    // Another principal on the same session sees its own set.
    sess->set_principal({"bob", true});
    EXPECT_EQ(query(*sess, listing), rows{});
    // A topic it may not see answers as one it may not read, existing or not.
    auto existing = failure_of(*sess, "SELECT * FROM kafka_topics.secret");
    auto missing = failure_of(*sess, "SELECT * FROM kafka_topics.nosuch");
    EXPECT_EQ(existing.kind, failure::not_authorized) << existing.message;
    EXPECT_EQ(missing.kind, failure::not_authorized) << missing.message;
    EXPECT_NE(missing.message.find("\"nosuch\""), std::string::npos) << missing.message;
    // Where it may see topics, a missing one is just missing.
    gate.allow("bob", action::describe, "sluice:topic:nosuch");
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM kafka_topics.nosuch").kind,
              failure::undefined_table);
}

TEST_F(authz_fixture, system_tables_list_what_the_principal_may_describe) {
    EXPECT_EQ(query(*sess, "SELECT topic FROM system.topics"), rows{});
    gate.allow("alice", action::describe, "sluice:topic:orders");
    EXPECT_EQ(query(*sess, "SELECT topic FROM system.topics"), (rows{{"orders"}}));
    EXPECT_EQ(query(*sess, "SELECT DISTINCT topic FROM system.partitions"), (rows{{"orders"}}));
    // Configs need DescribeConfigs, as Kafka's DescribeConfigs does.
    EXPECT_EQ(query(*sess, "SELECT DISTINCT topic FROM system.configs"), rows{});
    gate.allow("alice", action::describe_configs, "sluice:topic:secret");
    EXPECT_EQ(query(*sess, "SELECT DISTINCT topic FROM system.configs"), (rows{{"secret"}}));
}

// Shared mode's path: the partitions through the partition-log interface
// (engine_options::partitions, log::store_cursor) and the topics from a topic store, here
// over the same local logs, which implement that interface too.
struct logs_as_source final : partition_source {
    explicit logs_as_source(log::log_manager& l) : logs(l) {}
    log::partition_store* partition(const std::string& topic, int32_t p) override {
        return logs.get(topic, p);
    }
    log::log_manager& logs;
};

struct interface_fixture : topic_fixture {
    void SetUp() override {
        topic_fixture::SetUp();
        source = std::make_unique<logs_as_source>(*logs);
        engine_options o;
        o.data_dir = dir.path / "through";
        std::filesystem::create_directories(o.data_dir);
        o.topics = cat.get();
        o.security = cat.get();
        o.partitions = source.get();
        open_engine_and_session(o, through_eng, through);
    }
    void TearDown() override {
        through.reset();
        through_eng.reset();
        topic_fixture::TearDown();
    }
    std::unique_ptr<logs_as_source> source;
    std::unique_ptr<engine> through_eng;
    std::unique_ptr<session> through;
};

TEST_F(interface_fixture, the_same_rows_through_the_partition_log_interface) {
    create_topic("orders", 3);
    for (int i = 0; i < 30; ++i)
        produce("orders", i % 3,
                {{"k" + std::to_string(i), "v" + std::to_string(i), 1000 + i, {}}});
    produce_bytes("orders", 1,
                  sluice::testing::compress_batch(
                      build_batch({{"zk", "zipped", 2000, {{"h", "x"}}}, {"zk2", "z2", 2001, {}}}),
                      protocol::compression::gzip));
    const char* all =
        "SELECT partition, offset, timestamp_producer, key, value, headers "
        "FROM kafka_topics.orders";
    EXPECT_EQ(query(*through, all), query(*sess, all));
    EXPECT_EQ(query(*through, "SELECT count(*) FROM kafka_topics.orders"), (rows{{"32"}}));
    // partition and offset bounds narrow the scan itself.
    EXPECT_EQ(query(*through,
                    "SELECT offset, key FROM kafka_topics.orders "
                    "WHERE partition = 1 AND offset >= 3 AND offset < 6"),
              (rows{{"3", "k10"}, {"4", "k13"}, {"5", "k16"}}));
    const auto scan = query(*through,
                            "SELECT sluice_last_scan() ->> '$.partitions_scanned', "
                            "sluice_last_scan() ->> '$.records_read'");
    EXPECT_EQ(scan, (rows{{"1", "3"}}));
    EXPECT_EQ(query(*through,
                    "SELECT offset FROM kafka_topics.orders WHERE partition = 1 "
                    "AND offset > 10"),
              (rows{{"11"}}));
    // A lower bound on timestamp_producer starts the read at the first record at or after it.
    EXPECT_EQ(query(*through,
                    "SELECT partition, offset FROM kafka_topics.orders "
                    "WHERE timestamp_producer >= 1027 AND timestamp_producer < 1100"),
              (rows{{"0", "9"}, {"1", "9"}, {"2", "9"}}));
    EXPECT_EQ(query(*through, "SELECT sluice_last_scan() ->> '$.records_read'"), (rows{{"5"}}));
    // No broker append times through the interface.
    EXPECT_EQ(query(*through, "SELECT count(timestamp_broker) FROM kafka_topics.orders"),
              (rows{{"0"}}));
    EXPECT_EQ(
        query(*through, "SELECT count(*) FROM kafka_topics.orders WHERE timestamp_broker >= 0"),
        (rows{{"0"}}));
    EXPECT_EQ(query(*through,
                    "SELECT partition, log_start_offset, high_watermark, log_end_offset, "
                    "bytes, segments FROM system.partitions WHERE topic = 'orders'"),
              (rows{{"0", "0", "10", "10", "NULL", "NULL"},
                    {"1", "0", "12", "12", "NULL", "NULL"},
                    {"2", "0", "10", "10", "NULL", "NULL"}}));
    EXPECT_EQ(query(*through, "SELECT topic, partitions FROM system.topics"),
              (rows{{"orders", "3"}}));
}

}  // namespace
}  // namespace sluice::sql::test

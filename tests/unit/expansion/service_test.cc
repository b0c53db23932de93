// The expansion service over a real log manager, catalog and SQL engine: rows appear
// with their events, backfill, restart and catch-up, compatibility of existing tables,
// and the guard that keeps users' statements off the targets.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>

#include "../sql/sql_security_util.h"
#include "../sql/sql_test_util.h"
#include "catalog/catalog.h"
#include "expansion/service.h"
#include "expansion/target.h"
#include "log/log_manager.h"
#include "sql/schemas.h"
#include "support/batch_builder.h"

namespace sluice::expansion {
namespace {

using rows = std::vector<std::vector<std::string>>;
using sluice::testing::build_batch;
using sluice::testing::test_record;
using sql::test::failure_of;
using sql::test::query;

constexpr const char* schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "after", "type": "struct", "fields": [{"name": "name", "type": "string"}]}]})";

struct service_fixture : ::testing::Test {
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    void open() {
        auto c = catalog::catalog::open(dir.path / "catalog.db");
        ASSERT_TRUE(c) << c.err().message;
        cat = std::move(*c);
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        for (const auto& t : cat->list_topics()) logs->add_topic(t.name, t.partitions, {});
        auto s = sql::schema_registry::open(dir.path / "sql");
        ASSERT_TRUE(s) << s.error().message;
        schemas = std::move(*s);
        auto svc_or = service::open({cat.get(), cat.get(), logs.get(), schemas});
        ASSERT_TRUE(svc_or) << svc_or.err().message;
        svc = std::move(*svc_or);
        logs->set_high_watermark_listener(
            [this](const std::vector<topic_partition>& tps) { svc->on_high_watermark(tps); });
        svc->start();
        auto e = sql::open_engine(engine_options());
        ASSERT_TRUE(e) << e.error().message;
        eng = std::move(*e);
        auto sess_or = eng->open_session();
        ASSERT_TRUE(sess_or) << sess_or.error().message;
        sess = std::move(*sess_or);
    }
    // The SQL engine's sources: these logs, catalog and schemas, guarded by the service.
    sql::engine_options engine_options() const {
        sql::engine_options o;
        o.data_dir = dir.path;
        o.logs = logs.get();
        o.catalog = cat.get();
        o.schemas = schemas;
        o.guard = svc.get();
        return o;
    }
    void close() {
        sess.reset();
        eng.reset();
        logs->set_high_watermark_listener(nullptr);
        if (svc) svc->stop();
        // The flusher may be inside a call of the listener it copied before it was
        // cleared: only once the logs are closed (the flusher joined) may svc go.
        logs->close();
        svc.reset();
        logs.reset();
        cat.reset();
    }

    void create_topic(const std::string& name, int32_t partitions) {
        catalog::topic_info t;
        t.name = name;
        t.id = catalog::random_uuid();
        t.partitions = partitions;
        ASSERT_TRUE(cat->create_topic(t));
        logs->add_topic(name, partitions, {});
    }

    // Appends one batch, waits until it is durable and, with `expanded`, until the
    // topic's expansions have it, as a producer's answer does.
    void produce(const std::string& topic, int32_t p, std::vector<test_record> recs,
                 bool expanded = true) {
        auto* pl = logs->get(topic, p);
        ASSERT_NE(pl, nullptr);
        bytes payload = build_batch(recs);
        auto v = protocol::validate_batches(payload, {});
        ASSERT_TRUE(v);
        auto r = pl->append(std::span<uint8_t>(payload), *v, 1000);
        ASSERT_TRUE(r) << r.err().message;
        auto durable = std::make_shared<std::promise<void>>();
        auto fut = durable->get_future();
        logs->when_durable(pl, r->last_offset, [durable](result<void>) { durable->set_value(); });
        ASSERT_EQ(fut.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        if (!expanded) return;
        auto done = std::make_shared<std::promise<void>>();
        auto exp = done->get_future();
        svc->when_expanded({topic, p}, r->last_offset, [done] { done->set_value(); });
        ASSERT_EQ(exp.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }

    result<status> create(const std::string& target, bool backfill = false, bool flatten = true) {
        create_request r;
        r.topic = "cdc";
        r.target = target;
        r.schema = schema_json;
        r.flatten = flatten;
        r.copy_source = true;
        r.backfill = backfill;
        return svc->create(r);
    }

    // Waits (bounded) until the expansion's backfill is done.
    void wait_backfill(const std::string& target) {
        for (int i = 0; i < 500; ++i) {
            auto s = svc->find(target);
            ASSERT_TRUE(s);
            if (s->state == "running") return;
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        FAIL() << target << " still backfilling";
    }

    static test_record event(int id, const std::string& name) {
        return {std::to_string(id),
                fmt::format(R"({{"id": {}, "after": {{"name": "{}"}}, "extra": 1}})", id, name)};
    }

    sql::test::temp_dir dir;
    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<log::log_manager> logs;
    std::shared_ptr<sql::schema_registry> schemas;
    std::unique_ptr<service> svc;
    std::unique_ptr<sql::engine> eng;
    std::unique_ptr<sql::session> sess;
};

TEST_F(service_fixture, rows_are_there_when_the_events_are_answered) {
    create_topic("cdc", 2);
    auto s = create("cdc.orders");
    ASSERT_TRUE(s) << s.err().message;
    EXPECT_EQ(s->state, "running");
    produce("cdc", 0, {event(1, "a"), event(2, "b")});
    produce("cdc", 1, {event(3, "c"), {"4", "not json"}, {"5", std::nullopt}});
    EXPECT_EQ(query(*sess,
                    "SELECT _partition, _offset, id, after__name, _missing_fields, "
                    "_excess_fields, _parse_error, _source IS NULL FROM cdc.orders "
                    "ORDER BY 1, 2"),
              (rows{{"0", "0", "1", "a", "0", "1", "0", "0"},
                    {"0", "1", "2", "b", "0", "1", "0", "0"},
                    {"1", "0", "3", "c", "0", "1", "0", "0"},
                    {"1", "1", "NULL", "NULL", "0", "0", "1", "0"},
                    {"1", "2", "NULL", "NULL", "0", "0", "0", "1"}}));
    EXPECT_EQ(query(*sess, "SELECT _source FROM cdc.orders WHERE _offset = 1 AND _partition = 1"),
              (rows{{"not json"}}));
    // The broker append time of each row is the topic's.
    EXPECT_EQ(query(*sess,
                    "SELECT count(*) FROM cdc.orders o JOIN kafka_topics.cdc t ON "
                    "t.partition = o._partition AND t.offset = o._offset AND "
                    "t.timestamp_broker = o._timestamp_broker"),
              (rows{{"5"}}));
    auto listed = svc->list();
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].rows_written, 5);
    EXPECT_EQ(listed[0].lag, 0);
}

TEST_F(service_fixture, only_later_events_unless_backfill) {
    create_topic("cdc", 1);
    produce("cdc", 0, {event(1, "old"), event(2, "old")}, false);
    ASSERT_TRUE(create("live"));
    auto bf = create("s.history", true);
    ASSERT_TRUE(bf) << bf.err().message;
    EXPECT_EQ(bf->backfill_total, 2);
    produce("cdc", 0, {event(3, "new")});
    wait_backfill("s.history");
    EXPECT_EQ(query(*sess, "SELECT _offset, id FROM main.live"), (rows{{"2", "3"}}));
    EXPECT_EQ(query(*sess, "SELECT _offset, id FROM s.history ORDER BY 1"),
              (rows{{"0", "1"}, {"1", "2"}, {"2", "3"}}));
    auto s = svc->find("s.history");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->backfill_done, 2);
    // The name without a schema is main's.
    EXPECT_TRUE(svc->find("LIVE"));
}

TEST_F(service_fixture, a_restart_catches_up_without_doubles) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("cdc.orders"));
    produce("cdc", 0, {event(1, "a")});
    // Events appended while no expander runs: the next start expands them first.
    svc->stop();
    produce("cdc", 0, {event(2, "b"), event(3, "c")}, false);
    close();
    open();
    EXPECT_EQ(query(*sess, "SELECT _offset, id FROM cdc.orders ORDER BY 1"),
              (rows{{"0", "1"}, {"1", "2"}, {"2", "3"}}));
    produce("cdc", 0, {event(4, "d")});
    EXPECT_EQ(query(*sess, "SELECT count(*), count(DISTINCT _offset) FROM cdc.orders"),
              (rows{{"4", "4"}}));
}

TEST_F(service_fixture, existing_tables_must_be_compatible) {
    create_topic("cdc", 1);
    query(*sess,
          "CREATE SCHEMA s; CREATE TABLE s.bad (_partition INTEGER, _offset INTEGER, "
          "_timestamp_broker INTEGER, id TEXT, after__name TEXT, _missing_fields INTEGER, "
          "_excess_fields INTEGER, _type_errors INTEGER, _parse_error INTEGER, _source "
          "TEXT)");
    auto r = create("s.bad");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().code, errc::invalid_argument);
    EXPECT_EQ(r.err().message,
              "table s.bad: column id is declared TEXT, which cannot hold the "
              "INTEGER values it would get (int64)");
    query(*sess, "CREATE TABLE s.short (_partition INTEGER, id INTEGER)");
    r = create("s.short");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().message, "table s.short exists but has no column _offset (INTEGER)");
    query(*sess,
          "CREATE TABLE s.extra (pk INTEGER PRIMARY KEY, note TEXT NOT NULL DEFAULT '', "
          "must TEXT NOT NULL, _partition, _offset, _timestamp_broker, id NUMERIC, "
          "after__name, _missing_fields, _excess_fields, _type_errors, _parse_error, "
          "_source)");
    r = create("s.extra");
    ASSERT_FALSE(r);
    EXPECT_EQ(r.err().message,
              "table s.extra: column must is NOT NULL without a default, and "
              "the expansion does not fill it");
    query(*sess,
          "CREATE TABLE s.good (pk INTEGER PRIMARY KEY, note TEXT DEFAULT 'x', "
          "_partition, _offset, _timestamp_broker, id NUMERIC, after__name, "
          "_missing_fields, _excess_fields, _type_errors, _parse_error, _source)");
    r = create("s.good");
    ASSERT_TRUE(r) << r.err().message;
    produce("cdc", 0, {event(9, "z")});
    EXPECT_EQ(query(*sess, "SELECT pk, note, id, after__name FROM s.good"),
              (rows{{"1", "x", "9", "z"}}));
}

TEST_F(service_fixture, refusals_name_what_is_wrong) {
    create_topic("cdc", 1);
    create_request r;
    r.topic = "nope";
    r.target = "s.t";
    r.schema = schema_json;
    auto s = svc->create(r);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.err().code, errc::not_found);
    r.topic = "cdc";
    r.schema = R"({"fields": [{"name": "x", "type": "uuid"}]})";
    s = svc->create(r);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.err().code, errc::invalid_argument);
    EXPECT_EQ(s.err().message.rfind("x: unknown type 'uuid'", 0), 0u);
    for (const char* target :
         {"s.", ".t", "s.t.u", "kafka_topics.t", "s.sqlite_x", "s._sluice_x"}) {
        r.target = target;
        r.schema = schema_json;
        s = svc->create(r);
        ASSERT_FALSE(s) << target;
        EXPECT_EQ(s.err().code, errc::invalid_argument) << target;
    }
    r.target = "s.t";
    r.source = "headers";
    EXPECT_FALSE(svc->create(r));
    r.source = "value";
    ASSERT_TRUE(svc->create(r));
    s = svc->create(r);
    ASSERT_FALSE(s);
    EXPECT_EQ(s.err().code, errc::already_exists);
    // The catalog refuses to delete the topic while the expansion exists.
    auto del = cat->delete_topic("cdc");
    ASSERT_FALSE(del);
    EXPECT_EQ(del.code(), errc::in_use);
    EXPECT_NE(del.err().message.find("s.t"), std::string::npos);
    ASSERT_TRUE(svc->drop("s.t", false));
    EXPECT_TRUE(cat->delete_topic("cdc"));
}

TEST_F(service_fixture, users_read_targets_but_do_not_change_them) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("cdc.orders"));
    produce("cdc", 0, {event(1, "a")});
    for (const char* sql :
         {"INSERT INTO cdc.orders (_partition, _offset, _timestamp_broker, _missing_fields, "
          "_excess_fields, _type_errors, _parse_error) VALUES (0, 9, 0, 0, 0, 0, 0)",
          "UPDATE cdc.orders SET id = 2", "DELETE FROM cdc.orders", "DROP TABLE cdc.orders",
          "ALTER TABLE cdc.orders ADD COLUMN x", "ALTER TABLE cdc.orders RENAME TO other",
          "CREATE TRIGGER cdc.t AFTER INSERT ON orders BEGIN SELECT 1; END",
          "DELETE FROM cdc._sluice_expansion_progress", "DROP SCHEMA cdc CASCADE"}) {
        auto e = failure_of(*sess, sql);
        EXPECT_EQ(e.kind, sql::failure::read_only) << sql << ": " << e.message;
    }
    EXPECT_EQ(failure_of(*sess, "DELETE FROM cdc.orders").message,
              "cdc.orders is the target of an expansion of topic 'cdc', which only the broker "
              "writes; drop the expansion first (sluice expansion drop cdc.orders)");
    // Users may index a target and keep other tables in its schema.
    query(*sess,
          "CREATE INDEX cdc.orders_by_id ON orders (id); CREATE TABLE cdc.notes (x); "
          "INSERT INTO cdc.notes VALUES (1)");
    produce("cdc", 0, {event(2, "b")});
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM cdc.orders WHERE id = 2"), (rows{{"1"}}));
    // Inside a transaction, which would hold the file's lock while it stays open, the
    // schema is read-only; other schemas are not.
    query(*sess, "CREATE SCHEMA other; CREATE TABLE other.t (x)");
    query(*sess, "BEGIN");
    auto e = failure_of(*sess, "INSERT INTO cdc.notes VALUES (2)");
    EXPECT_EQ(e.kind, sql::failure::read_only);
    EXPECT_EQ(e.message,
              "schema cdc holds expansion targets, so its tables are written one "
              "statement at a time: run this outside BEGIN ... COMMIT");
    query(*sess, "INSERT INTO other.t VALUES (1); SELECT count(*) FROM cdc.orders; COMMIT");
    // A BEGIN that locks every file at once is refused.
    e = failure_of(*sess, "begin /* now */ immediate");
    EXPECT_EQ(e.kind, sql::failure::read_only);
    EXPECT_EQ(e.message,
              "BEGIN IMMEDIATE would lock schema cdc, which holds expansion targets, "
              "for the whole transaction; use BEGIN");
    EXPECT_EQ(failure_of(*sess, "BEGIN EXCLUSIVE TRANSACTION").kind, sql::failure::read_only);
    EXPECT_EQ(query(*sess, "SELECT x FROM cdc.notes"), (rows{{"1"}}));
    // Dropped, the expansion leaves its table to users.
    ASSERT_TRUE(svc->drop("cdc.orders", false));
    query(*sess, "DELETE FROM cdc.orders WHERE id = 1");
    EXPECT_EQ(query(*sess, "SELECT id FROM cdc.orders"), (rows{{"2"}}));
    ASSERT_TRUE(create("cdc.orders2"));
    ASSERT_TRUE(svc->drop("cdc.orders2", true));
    EXPECT_EQ(failure_of(*sess, "SELECT * FROM cdc.orders2").kind, sql::failure::undefined_table);
    EXPECT_FALSE(svc->drop("cdc.orders2", true));
}

// A target holds its topic's records: reading it needs KafkaRead on the topic, and a
// prepared statement is checked again when it runs after the policies changed.
TEST_F(service_fixture, reading_a_target_needs_read_on_its_topic) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("cdc.orders"));
    produce("cdc", 0, {event(1, "a")});
    sql::test::fake_gate gate(false);
    auto o = engine_options();
    o.gate = &gate;
    auto e = sql::open_engine(o);
    ASSERT_TRUE(e) << e.error().message;
    auto s = (*e)->open_session();
    ASSERT_TRUE(s) << s.error().message;
    auto& alice = **s;
    alice.set_principal({"alice", true});
    for (const char* sql : {"SELECT id FROM cdc.orders", "SELECT count(*) FROM cdc.orders",
                            "CREATE TEMP VIEW v AS SELECT id FROM cdc.orders; SELECT * FROM v",
                            "SELECT 1 WHERE EXISTS (SELECT 1 FROM cdc.orders)"}) {
        auto denied = failure_of(alice, sql);
        EXPECT_EQ(denied.kind, sql::failure::not_authorized) << sql << ": " << denied.message;
        EXPECT_NE(denied.message.find("\"cdc\": User:alice may not KafkaRead"), std::string::npos)
            << denied.message;
    }
    // The schema's other tables are the users' own.
    EXPECT_EQ(query(alice,
                    "CREATE TABLE cdc.notes (x); INSERT INTO cdc.notes VALUES (1); "
                    "SELECT x FROM cdc.notes"),
              (rows{{"1"}}));
    gate.allow("alice", security::action::read, "sluice:topic:cdc");
    EXPECT_EQ(query(alice, "SELECT id FROM cdc.orders"), (rows{{"1"}}));
    auto st = alice.prepare("SELECT id FROM cdc.orders");
    ASSERT_TRUE(st && *st);
    gate.revoke_all();
    EXPECT_EQ((*st)->step(), sql::statement::step_state::failed);
    EXPECT_EQ((*st)->error().kind, sql::failure::not_authorized) << (*st)->error().message;
}

TEST_F(service_fixture, partitions_added_later_are_expanded_from_their_start) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("cdc.orders"));
    ASSERT_TRUE(cat->set_partitions("cdc", 2));
    logs->add_topic("cdc", 2, {});
    produce("cdc", 1, {event(1, "a")});
    EXPECT_EQ(query(*sess, "SELECT _partition, _offset FROM cdc.orders"), (rows{{"1", "0"}}));
}

TEST_F(service_fixture, producers_wait_for_no_expansion_on_other_topics) {
    create_topic("cdc", 1);
    create_topic("plain", 1);
    ASSERT_TRUE(create("cdc.orders"));
    EXPECT_TRUE(svc->expands("cdc"));
    EXPECT_FALSE(svc->expands("plain"));
    bool ran = false;
    svc->when_expanded({"plain", 0}, 100, [&] { ran = true; });
    EXPECT_TRUE(ran);
}

}  // namespace
}  // namespace sluice::expansion

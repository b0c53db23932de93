// The expansion service over a real log manager, catalog and SQL engine (DuckDB, whose
// database holds the targets): rows appear with their events, backfill, refusals, the
// guard that keeps users' statements off the targets, partitions added later.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>

#include "../sql/sql_test_util.h"
#include "served_harness.h"
#include "catalog/catalog.h"
#include "expansion/duck/duck_target.h"
#include "expansion/service.h"
#include "log/log_manager.h"
#include "sql/duck/duck_engine.h"
#include "sql/duck/serving.h"
#include "support/batch_builder.h"

namespace sluice::expansion {
namespace {

using rows = std::vector<std::vector<std::string>>;
using sluice::testing::test_record;
using sql::test::failure_of;
using sql::test::query;

constexpr const char* guarded_schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "after", "type": "struct", "fields": [{"name": "name", "type": "string"}]}]})";

struct service_fixture : ::testing::Test, test::served_harness {
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    // The service writes into the SQL engine's database, whose sessions read the targets.
    void open() {
        eo.data_dir = dir.path;
        eo.defaults.timeout = std::chrono::milliseconds(5000);
        eo.bounds.total_memory = 256 << 20;
        ASSERT_NO_FATAL_FAILURE(open_served(sql::duck::serving_database_file(dir.path)));
    }
    void close() { close_served(); }

    result<status> create(const std::string& target, bool backfill = false, bool flatten = true) {
        create_request r;
        r.topic = "cdc";
        r.target = target;
        r.schema = guarded_schema_json;
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

TEST_F(service_fixture, refusals_name_what_is_wrong) {
    create_topic("cdc", 1);
    create_request r;
    r.topic = "nope";
    r.target = "s.t";
    r.schema = guarded_schema_json;
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
        r.schema = guarded_schema_json;
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
          "_excess_fields, _type_errors, _parse_error) VALUES (0, 9, 0, 0, 0, 0, false)",
          "UPDATE cdc.orders SET id = 2", "DELETE FROM cdc.orders", "DROP TABLE cdc.orders",
          "ALTER TABLE cdc.orders ADD COLUMN x INTEGER", "ALTER TABLE cdc.orders RENAME TO other",
          "DELETE FROM cdc._sluice_expansion_progress", "DROP SCHEMA cdc CASCADE"}) {
        auto e = failure_of(*sess, sql);
        EXPECT_EQ(e.kind, sql::failure::read_only) << sql << ": " << e.message;
    }
    EXPECT_EQ(failure_of(*sess, "DELETE FROM cdc.orders").message,
              "cdc.orders is the target of an expansion of topic 'cdc', which only the broker "
              "writes; drop the expansion first (sluice expansion drop cdc.orders)");
    // Users may keep other tables in a target's schema.
    query(*sess, "CREATE TABLE cdc.notes (x INTEGER); INSERT INTO cdc.notes VALUES (1)");
    produce("cdc", 0, {event(2, "b")});
    EXPECT_EQ(query(*sess, "SELECT count(*) FROM cdc.orders WHERE id = 2"), (rows{{"1"}}));
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

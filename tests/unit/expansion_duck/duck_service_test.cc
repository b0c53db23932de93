// The expansion service writing its targets into DuckDB (service_options::targets): rows
// are there when producers are answered, a restart catches up without doubles, backfill.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <future>

#include "../sql/sql_test_util.h"
#include "catalog/catalog.h"
#include "expansion/duck/duck_target.h"
#include "expansion/service.h"
#include "log/log_manager.h"
#include "sql/schemas.h"
#include "support/batch_builder.h"

namespace sluice::expansion {
namespace {

using sluice::testing::build_batch;
using sluice::testing::test_record;

constexpr const char* service_schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "after", "type": "struct", "fields": [{"name": "name", "type": "string"}]}],
    "key": {"type": "string"}})";

struct duck_service_fixture : ::testing::Test {
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
        auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
        ASSERT_TRUE(b) << b.err().message;
        duck = *b;
        service_options o{cat.get(), logs.get(), std::move(*s)};
        o.targets = duck;
        auto svc_or = service::open(std::move(o));
        ASSERT_TRUE(svc_or) << svc_or.err().message;
        svc = std::move(*svc_or);
        logs->set_high_watermark_listener(
            [this](const std::vector<topic_partition>& tps) { svc->on_high_watermark(tps); });
        svc->start();
    }
    void close() {
        logs->set_high_watermark_listener(nullptr);
        if (svc) svc->stop();
        logs->close();
        svc.reset();
        duck.reset();
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

    void produce(int32_t p, std::vector<test_record> recs, bool expanded = true) {
        auto* pl = logs->get("cdc", p);
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
        svc->when_expanded({"cdc", p}, r->last_offset, [done] { done->set_value(); });
        ASSERT_EQ(exp.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    }

    result<status> create(const std::string& target, bool backfill = false) {
        create_request r;
        r.topic = "cdc";
        r.target = target;
        r.schema = service_schema_json;
        r.flatten = true;
        r.backfill = backfill;
        return svc->create(r);
    }

    std::string all(const std::string& sql) {
        auto r = duck->query(sql);
        EXPECT_TRUE(r) << r.err().message;
        std::string out;
        if (!r) return out;
        for (const auto& row : *r) {
            for (size_t i = 0; i < row.size(); ++i) out += (i ? "," : "") + row[i].value_or("NULL");
            out += ";";
        }
        return out;
    }

    static test_record keyed_event(int id, const std::string& name) {
        return {"k" + std::to_string(id),
                fmt::format(R"({{"id": {}, "after": {{"name": "{}"}}}})", id, name)};
    }

    sql::test::temp_dir dir;
    std::unique_ptr<catalog::catalog> cat;
    std::unique_ptr<log::log_manager> logs;
    std::shared_ptr<duck_targets> duck;
    std::unique_ptr<service> svc;
};

TEST_F(duck_service_fixture, rows_are_in_duckdb_when_the_events_are_answered) {
    create_topic("cdc", 2);
    auto s = create("cdc.orders");
    ASSERT_TRUE(s) << s.err().message;
    produce(0, {keyed_event(1, "a"), keyed_event(2, "b")});
    produce(1, {keyed_event(3, "c"), {"k4", "not json"}, {"k5", std::nullopt}});
    EXPECT_EQ(all("SELECT _partition, _offset, id, after__name, _parse_error, _key "
                  "FROM cdc.orders ORDER BY 1, 2"),
              "0,0,1,a,0,k1;0,1,2,b,0,k2;1,0,3,c,0,k3;1,1,NULL,NULL,1,k4;1,2,NULL,NULL,0,k5;");
    auto found = svc->find("cdc.orders");
    ASSERT_TRUE(found);
    EXPECT_EQ(found->rows, 5);
    EXPECT_EQ(found->rows_written, 5);
    EXPECT_EQ(found->lag, 0);
    // No SQLite table was made for it.
    EXPECT_FALSE(std::filesystem::exists(dir.path / "sql" / "schemas" / "cdc.db"));
}

TEST_F(duck_service_fixture, a_restart_catches_up_without_doubles) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("orders"));
    produce(0, {keyed_event(1, "a")});
    svc->stop();
    produce(0, {keyed_event(2, "b"), keyed_event(3, "c")}, false);
    close();
    open();
    EXPECT_EQ(all("SELECT _offset, id FROM main.orders ORDER BY 1"), "0,1;1,2;2,3;");
    produce(0, {keyed_event(4, "d")});
    EXPECT_EQ(all("SELECT count(*), count(DISTINCT _offset) FROM orders"), "4,4;");
}

TEST_F(duck_service_fixture, backfill_and_drop) {
    create_topic("cdc", 1);
    produce(0, {keyed_event(1, "old"), keyed_event(2, "old")}, false);
    auto s = create("s.history", true);
    ASSERT_TRUE(s) << s.err().message;
    produce(0, {keyed_event(3, "new")});
    for (int i = 0; i < 500 && svc->find("s.history")->state != "running"; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    EXPECT_EQ(all("SELECT _offset, id FROM s.history ORDER BY 1"), "0,1;1,2;2,3;");
    ASSERT_TRUE(svc->drop("s.history", true));
    EXPECT_EQ(all("SELECT count(*) FROM information_schema.tables WHERE table_name = 'history'"),
              "0;");
}

}  // namespace
}  // namespace sluice::expansion

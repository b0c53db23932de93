// The expansion service writing its targets into DuckDB (service_options::targets): rows
// are there when producers are answered, a restart catches up without doubles, backfill.

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "../expansion/service_harness.h"
#include "expansion/duck/duck_target.h"

namespace sluice::expansion {
namespace {

using sluice::testing::test_record;

constexpr const char* service_schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "after", "type": "struct", "fields": [{"name": "name", "type": "string"}]}],
    "key": {"type": "string"}})";

struct duck_service_fixture : ::testing::Test, test::service_harness {
    void SetUp() override { open(); }
    void TearDown() override { close(); }

    void open() {
        make_targets = [this] {
            auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
            EXPECT_TRUE(b) << b.err().message;
            duck = b ? *b : nullptr;
            return duck;
        };
        open_service();
    }
    void close() {
        close_service();
        duck.reset();  // DuckDB lets one database of a process hold the file
    }
    void produce(int32_t p, const std::vector<test_record>& recs, bool expanded = true) {
        service_harness::produce("cdc", p, recs, expanded);
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

    std::shared_ptr<duck_targets> duck;
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

// A target ahead of its log (the log lost a tail the expansion had expanded: an operator's
// restore, a repaired disk): the rows past the log's end are deleted and the progress set
// back in one transaction when the expansion opens, and expansion goes on from there.
TEST_F(duck_service_fixture, rows_past_the_logs_end_are_deleted_when_the_expansion_opens) {
    create_topic("cdc", 1);
    ASSERT_TRUE(create("orders"));
    produce(0, {keyed_event(1, "a"), keyed_event(2, "b")});
    close();
    {
        // Rows and progress of three events the log no longer has (offsets 2 to 4).
        auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
        ASSERT_TRUE(b) << b.err().message;
        for (const char* sql :
             {"INSERT INTO main.orders SELECT * REPLACE (_offset + 2 AS _offset) FROM main.orders",
              "INSERT INTO main.orders SELECT * REPLACE (4 AS _offset) FROM main.orders "
              "WHERE _offset = 0",
              "INSERT INTO _sluice_expansion_progress SELECT target, \"partition\", 5, "
              "backfill_start, backfill_next, backfill_end, seq + 1000 FROM "
              "_sluice_expansion_progress"})
            ASSERT_TRUE((*b)->query(sql)) << sql;
    }
    open();
    ASSERT_EQ(svc->find("orders")->state, "running") << svc->find("orders")->error;
    EXPECT_EQ(all("SELECT _offset, id FROM main.orders ORDER BY 1"), "0,1;1,2;");
    produce(0, {keyed_event(3, "c")});
    EXPECT_EQ(all("SELECT _offset, id FROM main.orders ORDER BY 1"), "0,1;1,2;2,3;");
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

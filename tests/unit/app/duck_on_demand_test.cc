// src/app/duck_on_demand.h: DuckDB's database opened at the first need, once, from any
// thread; a failure answered to the one that needed it and tried again at the next.

#include "app/duck_on_demand.h"

#include <gtest/gtest.h>

#include <fstream>
#include <thread>
#include <vector>

#include "log/log_manager.h"
#include "sql/duck/duck_engine.h"
#include "sql/duck/serving.h"
#include "sql/sql_test_util.h"

namespace sluice::app {
namespace {

struct duck_on_demand_fixture : ::testing::Test {
    void SetUp() override {
        logs = std::make_unique<log::log_manager>(log::log_manager::options{dir.path});
        ASSERT_TRUE(logs->open());
        eo.data_dir = dir.path;
        eo.logs = logs.get();
        eo.bounds.total_memory = 256 << 20;
    }
    void TearDown() override { logs->close(); }
    std::filesystem::path file() const { return sql::duck::serving_database_file(dir.path); }

    sql::test::temp_dir dir;
    std::unique_ptr<log::log_manager> logs;
    sql::engine_options eo;
};

TEST_F(duck_on_demand_fixture, opens_at_the_first_need_once_from_any_thread) {
    auto duck = std::make_shared<duck_on_demand>(eo, std::filesystem::path());
    auto targets = duck->targets();
    EXPECT_STREQ(targets->kind(), "duckdb");
    EXPECT_FALSE(duck->is_open());
    EXPECT_FALSE(std::filesystem::exists(file()));

    std::vector<std::shared_ptr<sql::duck::engine>> got(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < got.size(); ++i)
        threads.emplace_back([&, i] {
            auto db = duck->database("a test");
            ASSERT_TRUE(db) << db.error().message;
            got[i] = *db;
        });
    for (auto& t : threads) t.join();
    EXPECT_TRUE(duck->is_open());
    EXPECT_TRUE(std::filesystem::exists(file()));
    for (const auto& db : got) EXPECT_EQ(db, got[0]);
    // The targets' backend reads from the same database: no such table yet.
    auto rows = targets->count_rows("shop", "events");
    EXPECT_FALSE(rows);
}

TEST_F(duck_on_demand_fixture, the_targets_backend_opens_it) {
    auto duck = std::make_shared<duck_on_demand>(eo, std::filesystem::path());
    auto targets = duck->targets();
    (void)targets->count_rows("shop", "events");
    EXPECT_TRUE(duck->is_open());
    EXPECT_TRUE(std::filesystem::exists(file()));
}

TEST_F(duck_on_demand_fixture, a_failure_is_answered_and_the_next_need_tries_again) {
    // The database's directory cannot be made: a file is in its place.
    std::ofstream(dir.path / "sql-duck") << "not a directory";
    auto duck = std::make_shared<duck_on_demand>(eo, std::filesystem::path());
    auto db = duck->database("a test");
    ASSERT_FALSE(db);
    EXPECT_EQ(db.error().kind, sql::failure::internal);
    EXPECT_NE(db.error().message.find("sql-duck"), std::string::npos) << db.error().message;
    auto rows = duck->targets()->count_rows("shop", "events");
    ASSERT_FALSE(rows);
    EXPECT_EQ(rows.err().code, errc::io_error);
    EXPECT_FALSE(duck->is_open());

    std::filesystem::remove(dir.path / "sql-duck");
    auto again = duck->database("a test");
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_TRUE(duck->is_open());
}

}  // namespace
}  // namespace sluice::app

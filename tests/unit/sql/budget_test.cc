// The SQL budget (sql/budget.h): SQLite's allocator charging blocks to the account of the
// thread's scope, the session and total bounds, blocks outliving their account, and the
// engine's errors for memory and temporary files. Its own binary: the allocator must be
// installed before SQLite's first use in the process.

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "sql/budget.h"
#include "sql_test_util.h"

namespace sluice::sql {
namespace {

const bool installed = install_budget_allocator();

constexpr uint64_t MiB = uint64_t{1} << 20;

class budget : public ::testing::Test {
  protected:
    void SetUp() override {
        ASSERT_TRUE(installed);
        resource_bounds b;
        b.session_memory = 2 * MiB;
        b.total_memory = 3 * MiB;
        b.session_temp = 256 * 1024;
        b.total_temp = 1024 * 1024;
        set_resource_bounds(b);
        base_memory = budget_total_memory();
    }
    uint64_t base_memory = 0;
};

TEST_F(budget, blocks_are_charged_to_the_scope_account_and_given_back) {
    budget_account* a = budget_account::acquire();
    void* outside = sqlite3_malloc(100000);
    ASSERT_NE(outside, nullptr);
    EXPECT_EQ(budget_total_memory(), base_memory);  // no account: charged to nobody
    void* p = nullptr;
    {
        budget_scope s(a);
        p = sqlite3_malloc(100000);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(a->memory_used(), 100000u);
        p = sqlite3_realloc(p, 300000);  // the growth only
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(a->memory_used(), 300000u);
        EXPECT_EQ(sqlite3_msize(p), 300000u);
    }
    EXPECT_EQ(budget_total_memory(), base_memory + 300000);
    sqlite3_free(p);  // freed outside the scope: still comes off its account
    EXPECT_EQ(a->memory_used(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory);
    sqlite3_free(outside);
    EXPECT_EQ(budget_total_memory(), base_memory);
    budget_account::release(a);
}

TEST_F(budget, session_and_total_bounds_refuse_with_their_reason) {
    budget_account* a = budget_account::acquire();
    budget_account* b = budget_account::acquire();
    void* pa = nullptr;
    {
        budget_scope s(a);
        EXPECT_EQ(sqlite3_malloc(static_cast<int>(2 * MiB + 1)), nullptr);
        EXPECT_EQ(a->refusal(), budget_refusal::session_memory);
        pa = sqlite3_malloc(static_cast<int>(1536 * 1024));
        ASSERT_NE(pa, nullptr);
    }
    {
        budget_scope s(b);
        EXPECT_EQ(sqlite3_malloc(static_cast<int>(1600 * 1024)), nullptr);  // 3.06 MiB > 3
        EXPECT_EQ(b->refusal(), budget_refusal::total_memory);
        void* small = sqlite3_malloc(1024 * 1024);  // fits beside a's
        EXPECT_NE(small, nullptr);
        sqlite3_free(small);
    }
    // The same size outside any scope is not refused.
    void* big = sqlite3_malloc(static_cast<int>(4 * MiB));
    EXPECT_NE(big, nullptr);
    sqlite3_free(big);
    sqlite3_free(pa);
    EXPECT_EQ(budget_total_memory(), base_memory);
    budget_account::release(a);
    budget_account::release(b);
}

TEST_F(budget, a_block_outliving_its_account_leaves_the_next_owner_alone) {
    budget_account* a = budget_account::acquire();
    void* p = nullptr;
    {
        budget_scope s(a);
        p = sqlite3_malloc(500000);
    }
    budget_account::release(a);
    budget_account* again = budget_account::acquire();  // the pool hands it out again
    ASSERT_EQ(again, a);
    EXPECT_EQ(again->memory_used(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory + 500000);  // still allocated
    sqlite3_free(p);
    EXPECT_EQ(again->memory_used(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory);
    budget_account::release(again);
}

TEST_F(budget, temporary_bytes_have_their_own_bounds) {
    resource_bounds bounds = current_resource_bounds();
    bounds.total_temp = 300 * 1024;
    set_resource_bounds(bounds);
    budget_account* a = budget_account::acquire();
    budget_account* b = budget_account::acquire();
    EXPECT_TRUE(a->charge_temp(200 * 1024));
    EXPECT_FALSE(a->charge_temp(100 * 1024));  // 300 KiB > the session's 256
    EXPECT_EQ(a->refusal(), budget_refusal::session_temp);
    EXPECT_FALSE(b->charge_temp(150 * 1024));  // 350 KiB > the total's 300
    EXPECT_EQ(b->refusal(), budget_refusal::total_temp);
    EXPECT_EQ(budget_total_temp(), 200u * 1024);
    a->uncharge_temp(200 * 1024, a->generation());
    EXPECT_TRUE(b->charge_temp(150 * 1024));
    b->uncharge_temp(150 * 1024, b->generation());
    EXPECT_EQ(budget_total_temp(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory);  // memory untouched
    budget_account::release(a);
    budget_account::release(b);
}

TEST(format_bytes, names_whole_units) {
    EXPECT_EQ(format_bytes(256 * MiB), "256 MiB");
    EXPECT_EQ(format_bytes(uint64_t{1} << 30), "1 GiB");
    EXPECT_EQ(format_bytes(1536 * MiB), "1.5 GiB");
    EXPECT_EQ(format_bytes(1000), "1000 bytes");
}

// Through the engine: the errors a front end gets.
class budget_engine : public budget {
  protected:
    void SetUp() override {
        budget::SetUp();
        engine_options o;
        o.data_dir = dir.path;
        o.bounds = current_resource_bounds();
        // Room for SQLite's sorter to fill its memory before it spills to files.
        o.bounds.session_memory = 8 * MiB;
        o.bounds.total_memory = 16 * MiB;
        o.bounds.max_value_bytes = 100 * MiB;
        test::open_engine_and_session(o, eng, sess);
    }
    test::temp_dir dir;
    std::unique_ptr<engine> eng;
    std::unique_ptr<session> sess;
};

TEST_F(budget_engine, memory_bound_fails_the_statement_and_the_session_goes_on) {
    auto e = test::failure_of(*sess, "SELECT length(randomblob(10000000))");
    EXPECT_EQ(e.kind, failure::memory_limit) << e.message;
    EXPECT_STREQ(sqlstate(e.kind), "53200");
    EXPECT_NE(e.message.find("8 MiB a SQL session may use (--sql-session-memory)"),
              std::string::npos)
        << e.message;
    // A zeroblob made real for the row meets it too, and is not passed off as empty.
    e = test::failure_of(*sess, "SELECT zeroblob(3000000)");
    EXPECT_EQ(e.kind, failure::memory_limit) << e.message;
    EXPECT_EQ(test::query(*sess, "SELECT length(randomblob(100000))"),
              (std::vector<std::vector<std::string>>{{"100000"}}));
}

TEST_F(budget_engine, temp_bound_fails_a_large_sort_and_files_stay_in_sql_tmp) {
    EXPECT_TRUE(std::filesystem::is_directory(dir.path / "sql-tmp"));
    auto e = test::failure_of(
        *sess,
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) "
        "SELECT count(*) FROM (SELECT x FROM c ORDER BY randomblob(16) || randomblob(40))");
    EXPECT_EQ(e.kind, failure::temp_limit) << e.message;
    EXPECT_STREQ(sqlstate(e.kind), "53400");
    EXPECT_NE(e.message.find("256 KiB a SQL session may use (--sql-session-temp-bytes)"),
              std::string::npos)
        << e.message;
    EXPECT_EQ(budget_total_temp(), 0u);  // the sort's files are closed and uncharged
    EXPECT_TRUE(std::filesystem::is_empty(dir.path / "sql-tmp"));
    EXPECT_EQ(test::query(*sess, "SELECT 1"), (std::vector<std::vector<std::string>>{{"1"}}));
}

TEST_F(budget_engine, value_length_is_the_limit_of_the_session) {
    sess.reset();
    engine_options o;
    o.data_dir = dir.path;
    o.bounds = current_resource_bounds();
    o.bounds.max_value_bytes = 1000;
    auto e2 = open_engine(o);
    ASSERT_TRUE(e2);
    auto s = (*e2)->open_session();
    ASSERT_TRUE(s);
    auto e = test::failure_of(**s, "SELECT randomblob(1001)");
    EXPECT_EQ(e.kind, failure::program_limit) << e.message;
    EXPECT_STREQ(sqlstate(e.kind), "54000");
    EXPECT_NE(e.message.find("longer than 1000 bytes (--sql-max-value-bytes)"), std::string::npos)
        << e.message;
    EXPECT_EQ(test::query(**s, "SELECT length(randomblob(1000))"),
              (std::vector<std::vector<std::string>>{{"1000"}}));
}

}  // namespace
}  // namespace sluice::sql

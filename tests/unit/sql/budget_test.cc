// The SQL budget (sql/budget.h): the session and total bounds of the accounts DuckDB's
// allocations are charged to (duck/session_memory.h), an account handed out again while a
// block of its earlier owner lives, and the bounds' names in messages. The engine's errors
// when a bound refuses are sql_duck's serving tests'.

#include <gtest/gtest.h>

#include "sql/budget.h"

namespace sluice::sql {
namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

class budget : public ::testing::Test {
  protected:
    void SetUp() override {
        resource_bounds b;
        b.session_memory = 2 * MiB;
        b.total_memory = 3 * MiB;
        set_resource_bounds(b);
        base_memory = budget_total_memory();
    }
    uint64_t base_memory = 0;
};

TEST_F(budget, session_and_total_bounds_refuse_with_their_reason) {
    budget_account* a = budget_account::acquire();
    budget_account* b = budget_account::acquire();
    EXPECT_FALSE(a->charge_memory(2 * MiB + 1));
    EXPECT_EQ(a->refusal(), budget_refusal::session_memory);
    EXPECT_EQ(a->refused_bytes(), 2 * MiB + 1);
    ASSERT_TRUE(a->charge_memory(1536 * 1024));
    EXPECT_EQ(a->memory_used(), 1536u * 1024);
    EXPECT_FALSE(b->charge_memory(1600 * 1024));  // 3.06 MiB > 3
    EXPECT_EQ(b->refusal(), budget_refusal::total_memory);
    EXPECT_EQ(b->memory_used(), 0u);
    ASSERT_TRUE(b->charge_memory(1024 * 1024));  // fits beside a's
    EXPECT_EQ(budget_total_memory(), base_memory + 2560 * 1024);
    b->uncharge_memory(1024 * 1024, b->generation());
    a->uncharge_memory(1536 * 1024, a->generation());
    EXPECT_EQ(a->memory_used(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory);
    a->clear_refusal();
    EXPECT_EQ(a->refusal(), budget_refusal::none);
    budget_account::release(a);
    budget_account::release(b);
}

TEST_F(budget, a_block_outliving_its_account_leaves_the_next_owner_alone) {
    budget_account* a = budget_account::acquire();
    ASSERT_TRUE(a->charge_memory(500000));
    const uint32_t charged_as = a->generation();
    budget_account::release(a);
    budget_account* again = budget_account::acquire();  // the pool hands it out again
    ASSERT_EQ(again, a);
    EXPECT_EQ(again->memory_used(), 0u);
    EXPECT_EQ(budget_total_memory(), base_memory + 500000);  // still held
    ASSERT_TRUE(again->charge_memory(1000));
    again->uncharge_memory(500000, charged_as);  // the earlier owner's block is freed
    EXPECT_EQ(again->memory_used(), 1000u);
    EXPECT_EQ(budget_total_memory(), base_memory + 1000);
    again->uncharge_memory(1000, again->generation());
    budget_account::release(again);
}

TEST_F(budget, refusals_name_their_bound) {
    EXPECT_EQ(refusal_error(budget_refusal::session_memory)->kind, failure::memory_limit);
    EXPECT_NE(refusal_error(budget_refusal::session_memory)->message.find(
                  "2 MiB a SQL session may use (--sql-session-memory)"),
              std::string::npos);
    EXPECT_EQ(refusal_error(budget_refusal::total_memory)->kind, failure::memory_exhausted);
    EXPECT_EQ(refusal_error(budget_refusal::total_temp)->kind, failure::temp_exhausted);
    EXPECT_EQ(refusal_error(budget_refusal::value_length)->kind, failure::program_limit);
    EXPECT_FALSE(refusal_error(budget_refusal::none));
}

TEST(format_bytes, names_whole_units) {
    EXPECT_EQ(format_bytes(256 * MiB), "256 MiB");
    EXPECT_EQ(format_bytes(uint64_t{1} << 30), "1 GiB");
    EXPECT_EQ(format_bytes(1536 * MiB), "1.5 GiB");
    EXPECT_EQ(format_bytes(1000), "1000 bytes");
}

}  // namespace
}  // namespace sluice::sql

// Administration and time: ListGroups / DescribeGroups views, deadlines, shutdown, and
// many idle groups.

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

class coordinator_test : public group_test {
  protected:
    coordinator_test() { cfg.initial_rebalance_delay_ms = 0; }
};

TEST_F(coordinator_test, state_names_are_kafkas) {
    EXPECT_EQ(state_name(group_state::preparing_rebalance), "PreparingRebalance");
    EXPECT_EQ(state_name(group_state::completing_rebalance), "CompletingRebalance");
    EXPECT_EQ(parse_state("stable"), group_state::stable);
    EXPECT_EQ(parse_state("EMPTY"), group_state::empty);
    EXPECT_FALSE(parse_state("Stabl"));
}

TEST_F(coordinator_test, describe_and_list_a_stable_group) {
    auto g = stable_group("g", 2);
    auto d = co().describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->state, group_state::stable);
    EXPECT_EQ(d->protocol_type, "consumer");
    EXPECT_EQ(d->protocol_name, "range");
    ASSERT_EQ(d->members.size(), 2u);
    for (const auto& m : d->members) {
        EXPECT_EQ(m.client_id, "client");
        EXPECT_EQ(m.client_host, "/127.0.0.1");
        size_t i = m.member_id == g[0].id ? 0 : 1;
        EXPECT_EQ(m.metadata, to_bytes("meta-" + std::to_string(i)));
        EXPECT_EQ(m.assignment, assignment(i));
    }
    auto l = co().list();
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].group_id, "g");
    EXPECT_EQ(l[0].protocol_type, "consumer");
    EXPECT_EQ(l[0].state, group_state::stable);
}

TEST_F(coordinator_test, shutdown_answers_parked_joins_and_syncs_not_coordinator) {
    auto g = joined_group("g", 2);
    auto sb = sync("g", g[1].id, 1);
    EXPECT_FALSE(sb.ready());

    std::string a = new_member_id("h");
    auto ja = join(join_req("h", a));
    EXPECT_FALSE(ja.ready()) << "the first join phase waits for a poll";

    co().shutdown();
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->error, ec::not_coordinator);
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->error, ec::not_coordinator);
    EXPECT_EQ(ja->member_id, a);

    co().poll();  // a timer still due answers nothing twice
    EXPECT_EQ(sb.count(), 1u);
    EXPECT_EQ(ja.count(), 1u);
}

TEST_F(coordinator_test, next_deadline) {
    EXPECT_FALSE(co().next_deadline()) << "a new coordinator";
    co().store_offsets("g", {{{"orders", 0}, {1, -1, {}, clock.wall, -1}}});
    EXPECT_FALSE(co().next_deadline()) << "offsets alone arm nothing";

    std::string a = new_member_id("h");
    EXPECT_EQ(co().next_deadline(), clock.steady + session_ms) << "the pending member";
    auto ja = join(join_req("h", a));
    EXPECT_EQ(co().next_deadline(), clock.steady) << "the initial delay (0)";
    co().poll();
    ASSERT_TRUE(ja.ready());
    ASSERT_TRUE(co().next_deadline());
    EXPECT_LE(*co().next_deadline(), clock.steady + session_ms);

    EXPECT_EQ(co().leave("h", {a, std::nullopt, -1}), ec::none);
    EXPECT_FALSE(co().next_deadline()) << "nothing left behind by the leave";
}

TEST_F(coordinator_test, a_group_whose_only_member_id_goes_unused_disappears) {
    new_member_id("g");
    EXPECT_EQ(state("g"), group_state::empty);
    advance(session_ms - 1);
    EXPECT_TRUE(co().describe("g"));
    advance(1);
    ASSERT_TRUE(co().describe("g"));
    EXPECT_EQ(co().describe("g")->state, group_state::empty);
    EXPECT_EQ(co().drop_idle_groups(), 1u);
    EXPECT_FALSE(co().describe("g"));
    EXPECT_EQ(co().group_count(), 0u);
    EXPECT_FALSE(co().next_deadline());
}

TEST_F(coordinator_test, holds_thousands_of_idle_groups_with_offsets) {
    cfg.offsets_retention_ms = 60'000;
    constexpr int groups = 5000;
    for (int i = 0; i < groups; ++i) {
        std::string id = "group-" + std::to_string(i);
        co().store_offsets(id, {{{"orders", 0}, {i, -1, {}, clock.wall, -1}},
                                {{"orders", 1}, {i, -1, {}, clock.wall, -1}}});
    }
    EXPECT_EQ(co().group_count(), static_cast<size_t>(groups));
    EXPECT_EQ(co().list().size(), static_cast<size_t>(groups));
    EXPECT_EQ(co().committed("group-4321", {"orders", 1})->offset, 4321);
    EXPECT_FALSE(co().next_deadline());
    advance(1000);
    EXPECT_TRUE(co().expired_offsets().empty());

    clock.wall += 60'000;
    auto expired = co().expired_offsets();
    EXPECT_EQ(expired.size(), static_cast<size_t>(2 * groups));
    co().erase_expired(expired);
    EXPECT_EQ(co().drop_idle_groups(), static_cast<size_t>(groups));
    EXPECT_EQ(co().group_count(), 0u);
}

}  // namespace
}  // namespace sluice::group::test

// Static membership (group.instance.id): a restarted member takes over its old identity
// without a rebalance, and the old member id is fenced.

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

class static_member_test : public group_test {
  protected:
    static_member_test() { cfg.initial_rebalance_delay_ms = 0; }

    join_reply static_join(const std::string& instance, std::string_view metadata,
                           const std::string& member_id = {}) {
        auto req = join_req("g", member_id, range_protocol(metadata));
        req.instance_id = instance;
        return join(std::move(req));
    }
};

TEST_F(static_member_test, a_restarted_follower_takes_over_without_a_rebalance) {
    auto g = stable_group("g", 2, {"host-a", "host-b"});
    const member &a = g[0], &b = g[1];

    // b restarts: a fresh JoinGroup with its instance id and no member id.
    auto jb = static_join("host-b", "meta-1");
    ASSERT_TRUE(jb.ready()) << "answered at once";
    EXPECT_EQ(jb->error, ec::none);
    EXPECT_EQ(jb->generation, 1);
    EXPECT_NE(jb->member_id, b.id);
    EXPECT_EQ(jb->leader, a.id);
    EXPECT_TRUE(jb->members.empty());
    const std::string new_b = jb->member_id;

    EXPECT_EQ(state("g"), group_state::stable);
    EXPECT_EQ(member_ids("g"), sorted({a.id, new_b}));
    EXPECT_EQ(heartbeat("g", a.id, 1, "host-a"), ec::none);
    EXPECT_EQ(heartbeat("g", b.id, 1, "host-b"), ec::fenced_instance_id);
    EXPECT_EQ(sync("g", b.id, 1, {}, "host-b")->error, ec::fenced_instance_id);
    EXPECT_EQ(co().check_commit("g", {b.id, "host-b", 1}), ec::fenced_instance_id);
    EXPECT_EQ(heartbeat("g", new_b, 1, "host-b"), ec::none);
    EXPECT_EQ(static_join("host-b", "meta-1", b.id)->error, ec::fenced_instance_id);

    auto sb = sync("g", new_b, 1, {}, "host-b");
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->error, ec::none);
    EXPECT_EQ(sb->assignment, assignment(1)) << "the assignment stays with the instance";

    auto d = co().describe("g");
    ASSERT_TRUE(d);
    for (const auto& m : d->members) {
        if (m.member_id == new_b) {
            EXPECT_EQ(m.instance_id, "host-b");
        }
    }
}

TEST_F(static_member_test, a_restarted_leader_keeps_its_leadership_without_a_rebalance) {
    auto g = stable_group("g", 2, {"host-a", "host-b"});
    const member &a = g[0], &b = g[1];

    // JoinGroup v9+: the new id leads, with the member list, and skips the assignor.
    auto req = join_req("g", "", range_protocol("meta-0"));
    req.instance_id = "host-a";
    req.supports_skip_assignment = true;
    auto ja = join(std::move(req));
    ASSERT_TRUE(ja.ready()) << "answered at once";
    EXPECT_EQ(ja->error, ec::none);
    EXPECT_EQ(ja->generation, 1);
    const std::string new_a = ja->member_id;
    EXPECT_NE(new_a, a.id);
    EXPECT_EQ(ja->leader, new_a);
    EXPECT_TRUE(ja->skip_assignment);
    std::vector<std::string> listed;
    for (const auto& m : ja->members) listed.push_back(m.member_id);
    EXPECT_EQ(sorted(listed), sorted({new_a, b.id}));

    EXPECT_EQ(state("g"), group_state::stable);
    EXPECT_EQ(heartbeat("g", b.id, 1, "host-b"), ec::none) << "no rebalance";
    EXPECT_EQ(heartbeat("g", a.id, 1, "host-a"), ec::fenced_instance_id);
    auto sa = sync("g", new_a, 1, {}, "host-a");
    ASSERT_TRUE(sa.ready());
    EXPECT_EQ(sa->error, ec::none);
    EXPECT_EQ(sa->assignment, assignment(0));
    EXPECT_EQ(sync("g", b.id, 1, {}, "host-b")->assignment, assignment(1));

    // Before v9: the answer names the previous leader id and no members, so the client
    // does not run its assignor; the group's leader is still the new id.
    auto again = static_join("host-a", "meta-0");
    ASSERT_TRUE(again.ready());
    EXPECT_EQ(again->error, ec::none);
    EXPECT_EQ(again->generation, 1);
    EXPECT_EQ(again->leader, new_a);
    EXPECT_TRUE(again->members.empty());
    EXPECT_FALSE(again->skip_assignment);
    EXPECT_EQ(state("g"), group_state::stable);
    EXPECT_EQ(heartbeat("g", b.id, 1, "host-b"), ec::none);
    EXPECT_EQ(sync("g", again->member_id, 1, {}, "host-a")->assignment, assignment(0));
    // A later rebalance still has a leader that is here.
    auto jb = static_join("host-b", "new-subscription", b.id);
    EXPECT_FALSE(jb.ready());
    auto ja2 = static_join("host-a", "meta-0", again->member_id);
    ASSERT_TRUE(ja2.ready() && jb.ready());
    EXPECT_EQ(ja2->generation, 2);
    EXPECT_EQ(ja2->leader, again->member_id);
    EXPECT_EQ(ja2->members.size(), 2U);
}

TEST_F(static_member_test, a_restart_with_other_protocols_rebalances) {
    auto g = stable_group("g", 2, {"host-a", "host-b"});
    auto jb = static_join("host-b", "new-subscription");
    EXPECT_FALSE(jb.ready());
    EXPECT_EQ(heartbeat("g", g[0].id, 1, "host-a"), ec::rebalance_in_progress);
    auto ja = static_join("host-a", "meta-0", g[0].id);
    ASSERT_TRUE(ja.ready());
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(jb->generation, 2);
    EXPECT_EQ(member_ids("g"), sorted({g[0].id, jb->member_id}));
}

TEST_F(static_member_test, a_restart_fences_the_old_incarnations_parked_join) {
    auto g = stable_group("g", 3, {"host-a", "host-b", "host-c"});
    auto ja = static_join("host-a", "meta-0", g[0].id);  // the leader starts a rebalance
    auto old_b = static_join("host-b", "meta-1", g[1].id);
    EXPECT_FALSE(old_b.ready()) << "c has not rejoined yet";

    // b restarts while its old incarnation waits: the old join is fenced and the new
    // one takes its place in the join phase.
    auto new_b = static_join("host-b", "meta-1");
    ASSERT_TRUE(old_b.ready());
    EXPECT_EQ(old_b->error, ec::fenced_instance_id);
    EXPECT_FALSE(new_b.ready());

    auto jc = static_join("host-c", "meta-2", g[2].id);
    ASSERT_TRUE(new_b.ready());
    EXPECT_EQ(new_b->error, ec::none);
    EXPECT_EQ(new_b->generation, 2);
    EXPECT_NE(new_b->member_id, g[1].id);
    ASSERT_TRUE(ja.ready());
    std::vector<std::string> listed_ids;
    for (const auto& m : ja->members) listed_ids.push_back(m.member_id);
    EXPECT_EQ(sorted(listed_ids), sorted({g[0].id, new_b->member_id, g[2].id}));
    EXPECT_EQ(old_b.count(), 1u);
}

TEST_F(static_member_test, leave_by_instance_id) {
    auto g = stable_group("g", 2, {"host-a", "host-b"});
    EXPECT_EQ(co().leave("g", {"client-wrong", "host-b", -1}), ec::fenced_instance_id);
    EXPECT_EQ(co().leave("g", {"", "host-unknown", -1}), ec::unknown_member_id);
    EXPECT_EQ(member_ids("g").size(), 2u);

    EXPECT_EQ(co().leave("g", {"", "host-b", -1}), ec::none);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{g[0].id});
    EXPECT_EQ(heartbeat("g", g[0].id, 1, "host-a"), ec::rebalance_in_progress);

    // The instance id is free again: a new b is a new member.
    auto jb = static_join("host-b", "meta-1");
    auto ja = static_join("host-a", "meta-0", g[0].id);
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(jb->generation, 2);
    EXPECT_EQ(ja->members.size(), 2u);
}

TEST_F(static_member_test, a_static_member_absent_from_a_join_phase_stays_in_the_group) {
    auto g = stable_group("g", 2, {"host-a", "host-b"});
    const member &a = g[0], &b = g[1];
    // The leader rejoins (a rebalance). host-b keeps heartbeating but never rejoins.
    auto ja = static_join("host-a", "meta-0", a.id);
    EXPECT_FALSE(ja.ready());
    int64_t waited = 0;
    for (; !ja.ready() && waited <= rebalance_ms; waited += 5000) {
        EXPECT_EQ(heartbeat("g", b.id, 1, "host-b"), ec::rebalance_in_progress);
        advance(5000);
    }
    ASSERT_TRUE(ja.ready());
    EXPECT_GE(waited, rebalance_ms - 5000) << "the join phase waits for the static member";
    EXPECT_EQ(ja->error, ec::none);
    EXPECT_EQ(ja->generation, 2);
    // Unlike a dynamic member, host-b is still a member and the leader assigns it too.
    EXPECT_EQ(member_ids("g"), sorted({a.id, b.id}));
    EXPECT_EQ(ja->members.size(), 2u);
    // Its session, not the join phase, removes it.
    for (int i = 0; i < 4; ++i) {
        EXPECT_NE(heartbeat("g", a.id, 2, "host-a"), ec::unknown_member_id);
        advance(session_ms / 2);
    }
    EXPECT_EQ(member_ids("g"), sorted({a.id}));
}

TEST_F(static_member_test, an_empty_group_keeps_its_protocol_type) {
    auto g = stable_group("g", 1, {"host-a"});
    co().store_offsets("g", {{{"t", 0}, {5, -1, std::nullopt, 1, -1}}});
    EXPECT_EQ(co().leave("g", {g[0].id, "host-a", -1}), ec::none);
    auto d = co().describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->state, group_state::empty);
    EXPECT_EQ(d->protocol_type, "consumer");
}

}  // namespace
}  // namespace sluice::group::test

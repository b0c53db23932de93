// Rebalances of a running group: new members, SyncGroup, fencing of old generations,
// session expiry, the rebalance timeout, and leaving.

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

// No initial delay: only a new group's first join phase waits for a timer.
class rebalance_test : public group_test {
  protected:
    rebalance_test() { cfg.initial_rebalance_delay_ms = 0; }
};

TEST_F(rebalance_test, a_new_member_rebalances_a_stable_group) {
    auto g = stable_group("g", 1);
    const member& a = g[0];
    EXPECT_EQ(a.generation, 1);

    std::string b = new_member_id("g");
    EXPECT_EQ(state("g"), group_state::stable) << "MEMBER_ID_REQUIRED alone changes nothing";
    auto jb = join(join_req("g", b));
    EXPECT_FALSE(jb.ready());
    EXPECT_EQ(state("g"), group_state::preparing_rebalance);
    EXPECT_EQ(heartbeat("g", a.id, a.generation), ec::rebalance_in_progress);

    // The last member to rejoin completes the phase at once, with no timer.
    auto ja = join(join_req("g", a.id));
    ASSERT_TRUE(ja.ready());
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(ja->error, ec::none);
    EXPECT_EQ(jb->error, ec::none);
    EXPECT_EQ(ja->generation, 2);
    EXPECT_EQ(jb->generation, 2);
    EXPECT_EQ(ja->leader, a.id) << "the longest-standing member keeps leading";
    EXPECT_EQ(jb->leader, a.id);
    EXPECT_EQ(ja->members.size(), 2u);
    EXPECT_TRUE(jb->members.empty());
    EXPECT_EQ(state("g"), group_state::completing_rebalance);
}

TEST_F(rebalance_test, leader_sync_distributes_assignments) {
    auto g = joined_group("g", 3);
    const member &a = g[0], &b = g[1], &c = g[2];

    // A follower that syncs before the leader waits for the assignment.
    auto sb = sync("g", b.id, b.generation);
    EXPECT_FALSE(sb.ready());
    EXPECT_EQ(state("g"), group_state::completing_rebalance);

    // The leader assigns a and b and leaves c out.
    auto sa = sync("g", a.id, a.generation, {{a.id, to_bytes("for-a")}, {b.id, to_bytes("for-b")}});
    ASSERT_TRUE(sa.ready());
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sa->error, ec::none);
    EXPECT_EQ(sa->assignment, to_bytes("for-a"));
    EXPECT_EQ(sa->protocol_type, "consumer");
    EXPECT_EQ(sa->protocol_name, "range");
    EXPECT_EQ(sb->error, ec::none);
    EXPECT_EQ(sb->assignment, to_bytes("for-b"));
    EXPECT_EQ(sb.count(), 1u);
    EXPECT_EQ(state("g"), group_state::stable);

    auto sc = sync("g", c.id, c.generation);
    ASSERT_TRUE(sc.ready());
    EXPECT_EQ(sc->error, ec::none);
    EXPECT_TRUE(sc->assignment.empty());

    // A repeated sync in Stable gets the same bytes again.
    EXPECT_EQ(sync("g", b.id, b.generation)->assignment, to_bytes("for-b"));
    auto d = co().describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->protocol_name, "range");
    for (const auto& m : d->members)
        EXPECT_EQ(m.assignment, m.member_id == a.id   ? to_bytes("for-a")
                                : m.member_id == b.id ? to_bytes("for-b")
                                                      : bytes{});
}

TEST_F(rebalance_test, a_rebalance_answers_parked_syncs) {
    auto g = joined_group("g", 2);
    auto sb = sync("g", g[1].id, g[1].generation);
    EXPECT_FALSE(sb.ready());
    std::string c = new_member_id("g");
    auto jc = join(join_req("g", c));
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->error, ec::rebalance_in_progress);
    EXPECT_EQ(sync("g", g[1].id, g[1].generation)->error, ec::rebalance_in_progress);
}

TEST_F(rebalance_test, old_generations_are_fenced) {
    auto g = stable_group("g", 2);
    const member &a = g[0], &b = g[1];
    std::string c = new_member_id("g");
    auto jc = join(join_req("g", c));
    auto ja = join(join_req("g", a.id));
    auto jb = join(join_req("g", b.id));
    ASSERT_TRUE(ja.ready());
    ASSERT_EQ(ja->generation, 2);

    EXPECT_EQ(heartbeat("g", b.id, 1), ec::illegal_generation);
    EXPECT_EQ(sync("g", b.id, 1)->error, ec::illegal_generation);
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 1}), ec::illegal_generation);
    EXPECT_EQ(heartbeat("g", b.id, 3), ec::illegal_generation);

    EXPECT_EQ(heartbeat("g", b.id, 2), ec::none) << "heartbeats are fine after the join";
}

TEST_F(rebalance_test, unknown_members_and_groups) {
    auto g = stable_group("g", 1);
    EXPECT_EQ(heartbeat("g", "client-nobody", 1), ec::unknown_member_id);
    EXPECT_EQ(sync("g", "client-nobody", 1)->error, ec::unknown_member_id);
    EXPECT_EQ(co().leave("g", {"client-nobody", std::nullopt, -1}), ec::unknown_member_id);
    EXPECT_EQ(co().check_commit("g", {"client-nobody", std::nullopt, 1}), ec::unknown_member_id);

    EXPECT_EQ(heartbeat("nowhere", g[0].id, 1), ec::unknown_member_id);
    EXPECT_EQ(sync("nowhere", g[0].id, 1)->error, ec::unknown_member_id);
    EXPECT_EQ(co().leave("nowhere", {g[0].id, std::nullopt, -1}), ec::unknown_member_id);
    EXPECT_FALSE(co().describe("nowhere"));
}

TEST_F(rebalance_test, a_silent_member_expires_after_its_session_timeout) {
    auto g = stable_group("g", 2);
    const member &a = g[0], &b = g[1];

    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(session_ms - 5000 - 1);
    EXPECT_EQ(member_ids("g"), sorted({a.id, b.id})) << "not a millisecond early";
    EXPECT_EQ(state("g"), group_state::stable);

    advance(1);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{a.id});
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::rebalance_in_progress);
    EXPECT_EQ(heartbeat("g", b.id, 1), ec::unknown_member_id);

    auto ja = join(join_req("g", a.id));
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
    ASSERT_EQ(ja->members.size(), 1u);
    EXPECT_EQ(ja->members[0].member_id, a.id);
}

TEST_F(rebalance_test, heartbeats_keep_a_member_alive) {
    auto g = stable_group("g", 1);
    for (int i = 0; i < 10; ++i) {
        advance(session_ms - 1);
        ASSERT_EQ(heartbeat("g", g[0].id, 1), ec::none) << i;
    }
    EXPECT_EQ(state("g"), group_state::stable);
}

TEST_F(rebalance_test, parked_joins_do_not_expire_and_laggards_are_dropped) {
    auto g = stable_group("g", 2);
    const member &a = g[0], &b = g[1];

    auto ja = join(join_req("g", a.id));  // the leader rejoins: a rebalance
    EXPECT_FALSE(ja.ready());
    // b keeps heartbeating but never rejoins.
    for (int t = 5000; t < rebalance_ms; t += 5000) {
        advance(5000);
        EXPECT_EQ(heartbeat("g", b.id, 1), ec::rebalance_in_progress);
    }
    advance(rebalance_ms - 25000 - 1);
    EXPECT_FALSE(ja.ready());
    EXPECT_EQ(member_ids("g"), sorted({a.id, b.id})) << "a waited past its session, parked";

    advance(1);  // the rebalance timeout
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->error, ec::none);
    EXPECT_EQ(ja->generation, 2);
    ASSERT_EQ(ja->members.size(), 1u);
    EXPECT_EQ(ja->members[0].member_id, a.id);
    EXPECT_EQ(heartbeat("g", b.id, 1), ec::unknown_member_id);
}

TEST_F(rebalance_test, a_member_id_never_used_expires_and_stops_blocking_the_join) {
    auto g = stable_group("g", 2);
    const member &a = g[0], &b = g[1];
    std::string c = new_member_id("g");  // c never comes back

    EXPECT_EQ(co().leave("g", {b.id, std::nullopt, -1}), ec::none);
    auto ja = join(join_req("g", a.id));
    EXPECT_FALSE(ja.ready()) << "c's promised join is awaited";

    advance(session_ms - 1);
    EXPECT_FALSE(ja.ready());
    advance(1);
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
    EXPECT_EQ(ja->members.size(), 1u);

    EXPECT_EQ(join(join_req("g", c))->error, ec::unknown_member_id);
}

TEST_F(rebalance_test, a_member_id_given_up_by_leave_stops_blocking_the_join) {
    auto g = stable_group("g", 1);
    std::string b = new_member_id("g");
    auto ja = join(join_req("g", g[0].id));
    EXPECT_FALSE(ja.ready());
    EXPECT_EQ(co().leave("g", {b, std::nullopt, -1}), ec::none);
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
    EXPECT_EQ(ja->members.size(), 1u);
}

TEST_F(rebalance_test, a_pending_member_that_rejoins_is_included) {
    auto g = stable_group("g", 1);
    std::string b = new_member_id("g");
    auto ja = join(join_req("g", g[0].id));  // the leader's rejoin starts a rebalance
    EXPECT_FALSE(ja.ready());
    advance(1000);
    auto jb = join(join_req("g", b));
    ASSERT_TRUE(ja.ready());
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(ja->members.size(), 2u);
}

TEST_F(rebalance_test, a_leader_that_never_syncs_is_removed_with_the_other_laggards) {
    constexpr int32_t timeout = 15'000;
    std::vector<join_reply> replies;
    std::vector<std::string> ids;
    for (int i = 0; i < 3; ++i) {
        ids.push_back(new_member_id("g"));
        auto req = join_req("g", ids.back());
        req.rebalance_timeout_ms = timeout;
        replies.push_back(join(req));
    }
    await_all(replies);
    const std::string &a = ids[0], &b = ids[1], &c = ids[2];
    ASSERT_EQ(replies[0]->leader, a);

    auto sb = sync("g", b, 1);
    advance(8000);
    EXPECT_EQ(heartbeat("g", a, 1), ec::none);  // alive, but stuck before its sync
    EXPECT_EQ(heartbeat("g", c, 1), ec::none);
    advance(timeout - 8000 - 1);
    EXPECT_FALSE(sb.ready());
    EXPECT_EQ(member_ids("g").size(), 3u);

    advance(1);
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->error, ec::rebalance_in_progress);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{b});
    EXPECT_EQ(state("g"), group_state::preparing_rebalance);
    EXPECT_EQ(heartbeat("g", a, 1), ec::unknown_member_id);

    auto jb = join(join_req("g", b));
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(jb->generation, 2);
    EXPECT_EQ(jb->leader, b);
}

TEST_F(rebalance_test, a_follower_parked_in_sync_past_its_session_still_expires_later) {
    // b waits in SyncGroup longer than its session timeout (the leader is slow). Its
    // session must run again from the moment it gets its assignment.
    auto g = joined_group("g", 2);
    const member &a = g[0], &b = g[1];
    auto sb = sync("g", b.id, 1);
    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(2000);
    EXPECT_EQ(member_ids("g").size(), 2u) << "parked in SyncGroup: alive";
    auto sa = sync("g", a.id, 1, {{a.id, to_bytes("x")}, {b.id, to_bytes("y")}});
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->assignment, to_bytes("y"));

    // b is never heard from again; a keeps heartbeating.
    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(session_ms - 5000 - 1);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    EXPECT_EQ(member_ids("g").size(), 2u);
    advance(1);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{a.id});
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::rebalance_in_progress);
}

TEST_F(rebalance_test, a_member_whose_sync_was_cancelled_expires_after_its_session) {
    // b's sync, parked past b's session timeout, is cancelled by a rebalance; b then
    // crashes. The join phase ends when b's session (restarted by that answer) expires,
    // not at the rebalance timeout.
    auto g = joined_group("g", 2);
    const member &a = g[0], &b = g[1];
    auto sb = sync("g", b.id, 1);
    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(5000);
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::none);
    advance(2000);
    std::string c = new_member_id("g");
    auto jc = join(join_req("g", c));
    ASSERT_TRUE(sb.ready());
    EXPECT_EQ(sb->error, ec::rebalance_in_progress);
    auto ja = join(join_req("g", a.id));

    advance(session_ms - 1);
    EXPECT_FALSE(ja.ready());
    advance(1);
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
    EXPECT_EQ(ja->members.size(), 2u);
    EXPECT_EQ(member_ids("g"), sorted({a.id, c}));
}

TEST_F(rebalance_test, leave_rebalances_the_others) {
    auto g = stable_group("g", 2);
    const member &a = g[0], &b = g[1];
    EXPECT_EQ(co().leave("g", {b.id, std::nullopt, -1}), ec::none);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{a.id});
    EXPECT_EQ(heartbeat("g", a.id, 1), ec::rebalance_in_progress);
    EXPECT_EQ(heartbeat("g", b.id, 1), ec::unknown_member_id);

    auto ja = join(join_req("g", a.id));
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
    EXPECT_EQ(ja->members.size(), 1u);
}

TEST_F(rebalance_test, leave_of_the_last_laggard_completes_the_join) {
    auto g = stable_group("g", 2);
    auto ja = join(join_req("g", g[0].id));
    EXPECT_FALSE(ja.ready());
    EXPECT_EQ(co().leave("g", {g[1].id, std::nullopt, -1}), ec::none);
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 2);
}

TEST_F(rebalance_test, leave_while_parked_answers_the_join) {
    auto g = stable_group("g", 2);
    auto jb = join(join_req("g", g[1].id, range_protocol("changed")));
    EXPECT_FALSE(jb.ready());
    EXPECT_EQ(co().leave("g", {g[1].id, std::nullopt, -1}), ec::none);
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(jb->error, ec::unknown_member_id);
    EXPECT_EQ(jb.count(), 1u);
}

TEST_F(rebalance_test, the_last_member_leaving_empties_the_group) {
    auto g = stable_group("g", 1);
    co().store_offsets("g", {{{"orders", 0}, {42, -1, {}, clock.wall, -1}}});
    EXPECT_EQ(co().leave("g", {g[0].id, std::nullopt, -1}), ec::none);

    auto d = co().describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->state, group_state::empty);
    EXPECT_TRUE(d->members.empty());
    auto l = co().list();
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0].group_id, "g");
    EXPECT_EQ(l[0].state, group_state::empty);
    EXPECT_FALSE(co().next_deadline()) << "nothing left to time";
    EXPECT_EQ(co().committed("g", {"orders", 0})->offset, 42);

    // Without offsets, the Empty group stays listed (as in Kafka) until the periodic
    // cleanup forgets it; the group with offsets stays.
    auto h = stable_group("h", 1);
    EXPECT_EQ(co().leave("h", {h[0].id, std::nullopt, -1}), ec::none);
    EXPECT_EQ(state("h"), group_state::empty);
    EXPECT_TRUE(listed("h"));
    EXPECT_EQ(co().drop_idle_groups(), 1u);
    EXPECT_FALSE(co().describe("h"));
    EXPECT_FALSE(listed("h"));
    EXPECT_EQ(co().group_count(), 1u);

    // The group can be joined again; generations keep counting (2 was the empty one).
    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a));
    co().poll();
    ASSERT_TRUE(ja.ready());
    EXPECT_EQ(ja->generation, 3);
}

TEST_F(rebalance_test, an_unchanged_follower_rejoining_a_stable_group_keeps_its_assignment) {
    auto g = stable_group("g", 2);
    auto jb = join(join_req("g", g[1].id, range_protocol("meta-1")));
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(jb->error, ec::none);
    EXPECT_EQ(jb->generation, 1);
    EXPECT_EQ(jb->leader, g[0].id);
    EXPECT_EQ(state("g"), group_state::stable);
    EXPECT_EQ(heartbeat("g", g[0].id, 1), ec::none);
    EXPECT_EQ(sync("g", g[1].id, 1)->assignment, assignment(1));

    // With other metadata it is a rebalance.
    auto jb2 = join(join_req("g", g[1].id, range_protocol("new-subscription")));
    EXPECT_FALSE(jb2.ready());
    EXPECT_EQ(heartbeat("g", g[0].id, 1), ec::rebalance_in_progress);
}

}  // namespace
}  // namespace sluice::group::test

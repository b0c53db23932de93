// Committed offsets: who may commit when, what is stored and read back, deletion, and
// retention.

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

class offsets_test : public group_test {
  protected:
    offsets_test() { cfg.initial_rebalance_delay_ms = 0; }

    static constexpr int64_t day_ms = int64_t{24} * 3600 * 1000;

    offset_entry entry(std::string topic, int32_t partition, int64_t offset,
                       int64_t expire_ms = -1) {
        return {{std::move(topic), partition}, {offset, 7, "md", clock.wall, expire_ms}};
    }
    void commit(const std::string& group, std::vector<offset_entry> entries) {
        co().store_offsets(group, entries);
    }
    std::vector<topic_partition> expired_in(const std::string& group) {
        std::vector<topic_partition> out;
        for (const auto& [id, e] : co().expired_offsets())
            if (id == group) out.push_back(e.tp);
        std::sort(out.begin(), out.end());
        return out;
    }
    static member_ref simple() { return {"", std::nullopt, -1}; }
};

TEST_F(offsets_test, simple_commits_need_a_group_without_members) {
    EXPECT_EQ(co().check_commit("g", simple()), ec::none) << "no group yet";
    EXPECT_EQ(co().check_commit("g", {"client-x", std::nullopt, 1}), ec::illegal_generation);
    commit("g", {entry("orders", 0, 10)});
    EXPECT_EQ(state("g"), group_state::empty);
    EXPECT_EQ(co().check_commit("g", simple()), ec::none) << "an Empty group";

    auto g = stable_group("h", 1);
    EXPECT_EQ(co().check_commit("h", simple()), ec::unknown_member_id);
}

TEST_F(offsets_test, member_commits_follow_the_generation) {
    auto g = joined_group("g", 2);
    const member &a = g[0], &b = g[1];
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 1}), ec::rebalance_in_progress)
        << "joined but not yet assigned";

    sync("g", a.id, 1, {{a.id, {}}, {b.id, {}}});
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 1}), ec::none);
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 0}), ec::illegal_generation);
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 2}), ec::illegal_generation);
    EXPECT_EQ(co().check_commit("g", {"client-x", std::nullopt, 1}), ec::unknown_member_id);

    // During a rebalance, members commit what they consumed before giving it up.
    std::string c = new_member_id("g");
    auto jc = join(join_req("g", c));
    ASSERT_EQ(state("g"), group_state::preparing_rebalance);
    EXPECT_EQ(co().check_commit("g", {b.id, std::nullopt, 1}), ec::none);
}

TEST_F(offsets_test, a_commit_counts_as_a_heartbeat) {
    auto g = stable_group("g", 1);
    for (int i = 0; i < 3; ++i) {
        advance(session_ms - 1);
        ASSERT_EQ(co().check_commit("g", {g[0].id, std::nullopt, 1}), ec::none);
    }
    EXPECT_EQ(state("g"), group_state::stable);
}

TEST_F(offsets_test, stored_offsets_are_read_back) {
    EXPECT_FALSE(co().committed("g", {"orders", 0}));
    EXPECT_TRUE(co().committed_all("g").empty());

    commit("g", {entry("orders", 1, 100), entry("orders", 0, 50)});
    clock.wall += 1000;
    commit("g", {entry("audit", 0, 7), entry("orders", 1, 120)});

    auto c = co().committed("g", {"orders", 1});
    ASSERT_TRUE(c);
    EXPECT_EQ(c->offset, 120);
    EXPECT_EQ(c->leader_epoch, 7);
    EXPECT_EQ(c->metadata, "md");
    EXPECT_EQ(c->commit_ms, clock.wall);
    EXPECT_FALSE(co().committed("g", {"orders", 2}));
    EXPECT_FALSE(co().committed("other", {"orders", 1}));

    auto all = co().committed_all("g");
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0].tp, (topic_partition{"audit", 0}));
    EXPECT_EQ(all[1].tp, (topic_partition{"orders", 0}));
    EXPECT_EQ(all[1].value.offset, 50);
    EXPECT_EQ(all[2].tp, (topic_partition{"orders", 1}));
    EXPECT_EQ(all[2].value.offset, 120);
    EXPECT_TRUE(listed("g"));

    co().store_offsets("none", {});
    EXPECT_FALSE(listed("none")) << "nothing stored, no group";
}

TEST_F(offsets_test, delete_group) {
    EXPECT_EQ(co().check_delete_group("g"), ec::group_id_not_found);

    auto g = stable_group("g", 1);
    commit("g", {entry("orders", 0, 1)});
    EXPECT_EQ(co().check_delete_group("g"), ec::non_empty_group);

    EXPECT_EQ(co().leave("g", {g[0].id, std::nullopt, -1}), ec::none);
    EXPECT_EQ(co().check_delete_group("g"), ec::none);
    co().delete_group("g");
    EXPECT_FALSE(listed("g"));
    EXPECT_FALSE(co().committed("g", {"orders", 0}));
    EXPECT_EQ(co().check_delete_group("g"), ec::group_id_not_found);
}

TEST_F(offsets_test, offset_delete_refuses_subscribed_topics_of_a_consumer_group) {
    std::vector<topic_partition> tps{{"orders", 0}, {"audit", 3}, {"payments", 1}};
    std::vector<error_code> per_partition;
    EXPECT_EQ(co().check_offset_delete("g", tps, per_partition), ec::group_id_not_found);

    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a, {{"range", subscription_v0({"orders"})}}));
    std::string b = new_member_id("g");
    auto jb = join(join_req("g", b, {{"range", subscription_v0({"payments", "orders"})}}));
    await_all({ja, jb});
    commit("g", {entry("orders", 0, 1), entry("audit", 3, 1), entry("payments", 1, 1)});

    EXPECT_EQ(co().check_offset_delete("g", tps, per_partition), ec::none);
    EXPECT_EQ(per_partition, (std::vector<error_code>{ec::group_subscribed_to_topic, ec::none,
                                                      ec::group_subscribed_to_topic}));

    EXPECT_EQ(co().leave("g", {a, std::nullopt, -1}), ec::none);
    EXPECT_EQ(co().leave("g", {b, std::nullopt, -1}), ec::none);
    ASSERT_EQ(state("g"), group_state::empty);
    EXPECT_EQ(co().check_offset_delete("g", tps, per_partition), ec::none);
    EXPECT_EQ(per_partition, std::vector<error_code>(3, ec::none));

    co().erase_offsets("g", {{"orders", 0}, {"payments", 1}});
    auto left = co().committed_all("g");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].tp, (topic_partition{"audit", 3}));
    co().erase_offsets("g", {{"audit", 3}});
    EXPECT_TRUE(listed("g")) << "Empty, kept until the periodic cleanup";
    co().drop_idle_groups();
    EXPECT_FALSE(listed("g")) << "an Empty group without offsets is gone";
}

TEST_F(offsets_test, offset_delete_in_a_non_consumer_group_with_members) {
    auto req = join_req("connect-cluster", new_member_id("connect-cluster"));
    req.protocol_type = "connect";
    auto r = join(req);
    await_all({r});
    commit("connect-cluster", {entry("configs", 0, 1)});
    std::vector<error_code> per_partition;
    EXPECT_EQ(co().check_offset_delete("connect-cluster", {{"configs", 0}}, per_partition),
              ec::non_empty_group);
}

TEST_F(offsets_test, a_deleted_topic_takes_only_its_offsets) {
    commit("g", {entry("orders", 0, 1), entry("orders", 1, 2), entry("orders-dlq", 0, 3),
                 entry("order", 0, 4)});
    commit("h", {entry("orders", 0, 5)});
    co().remove_topic("orders");

    auto left = co().committed_all("g");
    ASSERT_EQ(left.size(), 2u);
    EXPECT_EQ(left[0].tp, (topic_partition{"order", 0}));
    EXPECT_EQ(left[1].tp, (topic_partition{"orders-dlq", 0}));
    EXPECT_TRUE(co().committed_all("h").empty());
    co().drop_idle_groups();
    EXPECT_FALSE(listed("h")) << "its only offsets are gone, and so is the empty group";
    EXPECT_TRUE(listed("g"));
}

TEST_F(offsets_test, offsets_of_a_group_with_members_never_expire) {
    cfg.offsets_retention_ms = day_ms;
    auto g = stable_group("g", 1);
    commit("g", {entry("orders", 0, 1)});
    for (int i = 0; i < 3; ++i) {
        clock.wall += day_ms;
        EXPECT_EQ(heartbeat("g", g[0].id, 1), ec::none);
    }
    EXPECT_TRUE(co().expired_offsets().empty());

    // Once empty, retention counts from then.
    clock.wall += 1000;
    EXPECT_EQ(co().leave("g", {g[0].id, std::nullopt, -1}), ec::none);
    clock.wall += day_ms - 1;
    EXPECT_TRUE(co().expired_offsets().empty());
    clock.wall += 1;
    EXPECT_EQ(expired_in("g"), (std::vector<topic_partition>{{"orders", 0}}));
}

TEST_F(offsets_test, retention_counts_from_the_later_of_empty_and_commit) {
    cfg.offsets_retention_ms = day_ms;
    commit("g", {entry("old", 0, 1)});  // the group is empty since now
    clock.wall += 1000;
    commit("g", {entry("new", 0, 1)});

    clock.wall += day_ms - 1000 - 1;
    EXPECT_TRUE(co().expired_offsets().empty());
    clock.wall += 1;
    EXPECT_EQ(expired_in("g"), (std::vector<topic_partition>{{"old", 0}}));
    clock.wall += 1000;
    EXPECT_EQ(expired_in("g"), (std::vector<topic_partition>{{"new", 0}, {"old", 0}}));

    co().erase_expired(co().expired_offsets());
    EXPECT_TRUE(co().committed_all("g").empty());
    co().drop_idle_groups();  // the broker's sweep does both
    EXPECT_FALSE(listed("g"));
}

TEST_F(offsets_test, an_explicit_expiry_time_is_honoured) {
    cfg.offsets_retention_ms = day_ms;
    commit("g", {entry("short", 0, 1, clock.wall + 5000), entry("default", 0, 1)});
    clock.wall += 4999;
    EXPECT_TRUE(co().expired_offsets().empty());
    clock.wall += 1;
    EXPECT_EQ(expired_in("g"), (std::vector<topic_partition>{{"short", 0}}));

    // An explicit time later than retention also wins.
    commit("h", {entry("long", 0, 1, clock.wall + 2 * day_ms)});
    clock.wall += day_ms;
    EXPECT_TRUE(expired_in("h").empty());
    clock.wall += day_ms;
    EXPECT_EQ(expired_in("h"), (std::vector<topic_partition>{{"long", 0}}));
}

TEST_F(offsets_test, erase_expired_keeps_an_offset_recommitted_since) {
    cfg.offsets_retention_ms = day_ms;
    commit("g", {entry("orders", 0, 1), entry("orders", 1, 1)});
    clock.wall += day_ms;
    auto expired = co().expired_offsets();
    ASSERT_EQ(expired.size(), 2u);

    clock.wall += 10;
    commit("g", {entry("orders", 1, 2)});  // raced the sweep
    co().erase_expired(expired);

    auto left = co().committed_all("g");
    ASSERT_EQ(left.size(), 1u);
    EXPECT_EQ(left[0].tp, (topic_partition{"orders", 1}));
    EXPECT_EQ(left[0].value.offset, 2);
}

TEST_F(offsets_test, restore_counts_emptiness_from_the_newest_commit) {
    cfg.offsets_retention_ms = day_ms;
    const int64_t newest = clock.wall - day_ms / 2;  // committed before the restart
    co().restore("g", {{{"orders", 0}, {1, -1, {}, newest - 5000, -1}},
                       {{"orders", 1}, {2, -1, {}, newest, -1}}});
    EXPECT_EQ(state("g"), group_state::empty);
    EXPECT_EQ(co().committed("g", {"orders", 1})->offset, 2);

    // Both expire a retention period after the newest commit, not after the restart.
    clock.wall = newest + day_ms - 1;
    EXPECT_TRUE(co().expired_offsets().empty());
    clock.wall += 1;
    EXPECT_EQ(expired_in("g"), (std::vector<topic_partition>{{"orders", 0}, {"orders", 1}}));
}

}  // namespace
}  // namespace sluice::group::test

// KIP-848 consumer groups: the server-side assignors, the incremental reconciliation,
// and the coordinator driven through heartbeats as a Java consumer with
// group.protocol=consumer sends them, with a hand-driven clock and a store in memory.

#include <gtest/gtest.h>

#include <map>
#include <optional>

#include "group/consumer/assignor.h"
#include "group/consumer/coordinator.h"
#include "group/consumer/reconcile.h"
#include "group_test_util.h"

namespace sluice::group::consumer {
namespace {

using test::ec;

size_t count(const partition_map& m) {
    size_t n = 0;
    for (const auto& [t, ps] : m) n += ps.size();
    return n;
}

partition_map pm(std::initializer_list<std::pair<const std::string, std::set<int32_t>>> l) {
    return partition_map(l);
}

// --- assignors ---

TEST(ConsumerAssignor, UniformBalancesAndStaysSticky) {
    std::vector<assignor_member> ms = {{"a", {"t"}, {}}, {"b", {"t"}, {}}, {"c", {"t"}, {}}};
    auto first = assign(uniform_assignor, ms, {{"t", 6}});
    std::set<int32_t> all;
    for (const auto& [id, m] : first) {
        EXPECT_EQ(count(m), 2u) << id;
        for (int32_t p : m.at("t")) EXPECT_TRUE(all.insert(p).second) << "partition twice";
    }
    EXPECT_EQ(all.size(), 6u);
    // b leaves: a and c keep what they had and share b's partitions.
    std::vector<assignor_member> two = {{"a", {"t"}, first["a"]}, {"c", {"t"}, first["c"]}};
    auto second = assign(uniform_assignor, two, {{"t", 6}});
    EXPECT_EQ(count(second["a"]), 3u);
    EXPECT_EQ(count(second["c"]), 3u);
    EXPECT_TRUE(minus(first["a"], second["a"]).empty());
    EXPECT_TRUE(minus(first["c"], second["c"]).empty());
}

TEST(ConsumerAssignor, UniformOnlyGivesSubscribedTopics) {
    std::vector<assignor_member> ms = {{"a", {"x"}, {}}, {"b", {"x", "y"}, {}}};
    auto out = assign(uniform_assignor, ms, {{"x", 2}, {"y", 4}});
    EXPECT_FALSE(out["a"].count("y"));
    EXPECT_EQ(out["b"]["y"].size(), 4u);
    EXPECT_EQ(out["a"]["x"].size() + out["b"]["x"].size(), 2u);
}

TEST(ConsumerAssignor, RangeGivesConsecutivePartitionsInMemberOrder) {
    std::vector<assignor_member> ms = {{"m2", {"t", "u"}, {}}, {"m1", {"t", "u"}, {}}};
    auto out = assign(range_assignor, ms, {{"t", 5}, {"u", 5}});
    EXPECT_EQ(out["m1"], pm({{"t", {0, 1, 2}}, {"u", {0, 1, 2}}}));
    EXPECT_EQ(out["m2"], pm({{"t", {3, 4}}, {"u", {3, 4}}}));
}

// --- reconciliation ---

TEST(ConsumerReconcile, RevokesBeforeAnythingNew) {
    member_assignment cur{member_state::stable, 3, 2, pm({{"t", {0, 1}}}), {}};
    auto nobody = [](const std::string&, int32_t) { return false; };
    auto next = reconcile(cur, 4, pm({{"t", {1, 2}}}), pm({{"t", {0, 1}}}), nobody);
    EXPECT_EQ(next.state, member_state::unrevoked_partitions);
    EXPECT_EQ(next.member_epoch, 3);  // unchanged until it revokes
    EXPECT_EQ(next.assigned, pm({{"t", {1}}}));
    EXPECT_EQ(next.pending_revocation, pm({{"t", {0}}}));
    // Still owning partition 0: nothing moves.
    EXPECT_EQ(reconcile(next, 4, pm({{"t", {1, 2}}}), pm({{"t", {0, 1}}}), nobody), next);
    // Revoked: the new epoch and the free partition 2.
    auto done = reconcile(next, 4, pm({{"t", {1, 2}}}), pm({{"t", {1}}}), nobody);
    EXPECT_EQ(done.state, member_state::stable);
    EXPECT_EQ(done.member_epoch, 4);
    EXPECT_EQ(done.previous_epoch, 3);
    EXPECT_EQ(done.assigned, pm({{"t", {1, 2}}}));
}

TEST(ConsumerReconcile, WaitsForAnotherOwnerToRelease) {
    member_assignment cur{member_state::stable, 1, 0, {}, {}};
    bool held = true;
    auto owner = [&](const std::string&, int32_t p) { return held && p == 3; };
    auto next = reconcile(cur, 2, pm({{"t", {2, 3}}}), partition_map{}, owner);
    EXPECT_EQ(next.state, member_state::unreleased_partitions);
    EXPECT_EQ(next.member_epoch, 2);
    EXPECT_EQ(next.assigned, pm({{"t", {2}}}));
    held = false;
    auto done = reconcile(next, 2, pm({{"t", {2, 3}}}), std::nullopt, owner);
    EXPECT_EQ(done.state, member_state::stable);
    EXPECT_EQ(done.assigned, pm({{"t", {2, 3}}}));
}

// --- the coordinator ---

class fake_topics final : public topic_view {
  public:
    std::map<std::string, int32_t> sizes;
    std::optional<int32_t> partitions(const std::string& t) const override {
        auto it = sizes.find(t);
        if (it == sizes.end()) return std::nullopt;
        return it->second;
    }
    std::vector<std::string> names() const override {
        std::vector<std::string> out;
        for (const auto& [n, s] : sizes) out.push_back(n);
        return out;
    }
};

class ConsumerGroup : public ::testing::Test {
  protected:
    ConsumerGroup() {
        topics.sizes = {{"orders", 6}, {"audit-1", 2}, {"audit-2", 2}, {"other", 1}};
        make();
    }
    void make() {
        co = std::make_unique<coordinator>(cfg, topics, clock.source());
        co->set_state_writer(&writer);
    }

    heartbeat_result beat(heartbeat_request r) {
        std::optional<heartbeat_result> got;
        co->heartbeat(std::move(r), [&](const heartbeat_result& x) { got = x; });
        EXPECT_TRUE(got.has_value());
        check_single_owner();
        return got.value_or(heartbeat_result{});
    }
    heartbeat_result join(const std::string& member, std::vector<std::string> topics_ = {"orders"},
                          std::optional<std::string> instance = std::nullopt) {
        heartbeat_request r;
        r.version = 1;
        r.group_id = "g";
        r.member_id = member;
        r.member_epoch = 0;
        r.instance_id = std::move(instance);
        r.rebalance_timeout_ms = 30000;
        r.subscribed_topic_names = std::move(topics_);
        r.owned = partition_map{};
        auto out = beat(std::move(r));
        if (out.error == ec::none) owned[member] = out.assignment.value_or(partition_map{});
        epochs[member] = out.member_epoch;
        return out;
    }
    // A member heartbeats, says what it owns, and applies what it gets, as the client does.
    heartbeat_result poll(const std::string& member) {
        heartbeat_request r;
        r.version = 1;
        r.group_id = "g";
        r.member_id = member;
        r.member_epoch = epochs[member];
        r.owned = owned[member];
        auto out = beat(std::move(r));
        if (out.error == ec::none) {
            if (out.assignment) owned[member] = *out.assignment;
            epochs[member] = out.member_epoch;
        }
        return out;
    }
    void settle(const std::vector<std::string>& members, int rounds = 6) {
        for (int i = 0; i < rounds; ++i)
            for (const auto& m : members) poll(m);
    }
    // What members believe they own never overlaps.
    void check_single_owner() {
        std::map<std::pair<std::string, int32_t>, std::string> seen;
        for (const auto& [m, ps] : owned)
            for (const auto& [t, parts] : ps)
                for (int32_t p : parts) {
                    auto [it, fresh] = seen.insert({{t, p}, m});
                    EXPECT_TRUE(fresh)
                        << t << "-" << p << " owned by " << it->second << " and " << m;
                }
    }

    config cfg;
    fake_topics topics;
    test::fake_clock clock;
    test::consumer_writer writer;
    std::unique_ptr<coordinator> co;
    std::map<std::string, partition_map> owned;
    std::map<std::string, int32_t> epochs;
};

TEST_F(ConsumerGroup, ThreeMembersSpreadThenOneLeaves) {
    ASSERT_EQ(join("a").error, ec::none);
    EXPECT_EQ(count(owned["a"]), 6u);
    EXPECT_EQ(epochs["a"], 1);
    join("b");
    join("c");
    settle({"a", "b", "c"});
    for (const char* m : {"a", "b", "c"}) EXPECT_EQ(count(owned[m]), 2u) << m;
    auto d = co->describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->state, "Stable");
    EXPECT_EQ(d->group_epoch, 3);
    EXPECT_EQ(d->assignment_epoch, 3);
    for (const auto& m : d->members) EXPECT_EQ(m.member_epoch, 3);

    heartbeat_request leave;
    leave.version = 1;
    leave.group_id = "g";
    leave.member_id = "b";
    leave.member_epoch = leave_epoch;
    EXPECT_EQ(beat(leave).member_epoch, leave_epoch);
    owned.erase("b");
    settle({"a", "c"});
    EXPECT_EQ(count(owned["a"]) + count(owned["c"]), 6u);
    EXPECT_EQ(count(owned["a"]), 3u);
    EXPECT_EQ(co->describe("g")->state, "Stable");
    EXPECT_EQ(co->describe("g")->group_epoch, 4);
}

TEST_F(ConsumerGroup, ExpiredSessionGivesPartitionsAway) {
    join("a");
    join("b");
    settle({"a", "b"});
    clock.steady += cfg.consumer_session_timeout_ms - 1;
    poll("a");
    co->poll();
    EXPECT_EQ(co->describe("g")->members.size(), 2u);
    clock.steady += 2;
    co->poll();
    ASSERT_EQ(co->describe("g")->members.size(), 1u);
    owned.erase("b");
    settle({"a"});
    EXPECT_EQ(count(owned["a"]), 6u);
    EXPECT_EQ(poll("b").error, ec::unknown_member_id);
}

TEST_F(ConsumerGroup, EpochsAreChecked) {
    join("a");
    heartbeat_request r;
    r.version = 1;
    r.group_id = "g";
    r.member_id = "a";
    r.member_epoch = 7;
    EXPECT_EQ(beat(r).error, ec::fenced_member_epoch);
    EXPECT_EQ(co->check_commit("g", "a", 1, 9), ec::none);
    EXPECT_EQ(co->check_commit("g", "a", 0, 9), ec::stale_member_epoch);
    EXPECT_EQ(co->check_commit("g", "a", 2, 9), ec::fenced_member_epoch);
    EXPECT_EQ(co->check_commit("g", "zz", 1, 9), ec::unknown_member_id);
    EXPECT_EQ(co->check_commit("g", "a", 1, 8), ec::unsupported_version);
    EXPECT_EQ(co->check_commit("g", "", -1, 9), ec::unknown_member_id);  // not while members
    EXPECT_EQ(co->check_commit("classic", "", -1, 9), std::nullopt);
    EXPECT_EQ(co->check_fetch("g", std::string("a"), 0), ec::stale_member_epoch);
    EXPECT_EQ(co->check_fetch("g", std::string("a"), 1), ec::none);
    EXPECT_EQ(co->check_fetch("g", std::nullopt, -1), ec::none);
}

TEST_F(ConsumerGroup, InvalidRequests) {
    heartbeat_request r;
    r.version = 1;
    r.group_id = "g";
    r.member_id = "a";
    r.member_epoch = 0;
    r.owned = partition_map{};
    r.subscribed_topic_names = std::vector<std::string>{"orders"};
    EXPECT_EQ(beat(r).error, ec::invalid_request);  // no rebalance timeout
    r.rebalance_timeout_ms = 1000;
    r.server_assignor = "sticky";
    EXPECT_EQ(beat(r).error, ec::unsupported_assignor);
    r.server_assignor = "range";
    r.subscribed_topic_regex = "audit-[";
    EXPECT_EQ(beat(r).error, ec::invalid_regular_expression);
    r.subscribed_topic_regex.reset();
    EXPECT_EQ(beat(r).error, ec::none);
    EXPECT_EQ(co->describe("g")->assignor, "range");
}

TEST_F(ConsumerGroup, RegexSubscriptionFollowsNewTopics) {
    heartbeat_request r;
    r.version = 1;
    r.group_id = "g";
    r.member_id = "a";
    r.member_epoch = 0;
    r.rebalance_timeout_ms = 1000;
    r.subscribed_topic_regex = "audit-.*";
    r.owned = partition_map{};
    auto got = beat(r);
    ASSERT_EQ(got.error, ec::none);
    EXPECT_EQ(*got.assignment, pm({{"audit-1", {0, 1}}, {"audit-2", {0, 1}}}));
    owned["a"] = *got.assignment;
    epochs["a"] = got.member_epoch;
    topics.sizes["audit-3"] = 1;
    topics.sizes["xaudit-4"] = 1;  // a full match is needed
    auto next = poll("a");
    EXPECT_EQ(next.member_epoch, 2);
    EXPECT_EQ(owned["a"], pm({{"audit-1", {0, 1}}, {"audit-2", {0, 1}}, {"audit-3", {0}}}));
}

TEST_F(ConsumerGroup, StaticMemberComesBackWithoutRebalance) {
    join("a", {"orders"}, "host-1");
    join("b", {"orders"}, "host-2");
    settle({"a", "b"});
    auto before = owned["a"];
    int32_t epoch = co->describe("g")->group_epoch;
    heartbeat_request r;
    r.version = 1;
    r.group_id = "g";
    r.member_id = "a";
    r.member_epoch = static_leave_epoch;
    r.instance_id = "host-1";
    EXPECT_EQ(beat(r).member_epoch, static_leave_epoch);
    EXPECT_EQ(join("a2", {"orders"}, "host-2").error, ec::unreleased_instance_id);
    owned.erase("a");
    auto back = join("a2", {"orders"}, "host-1");
    ASSERT_EQ(back.error, ec::none);
    EXPECT_EQ(back.member_epoch, epoch);
    EXPECT_EQ(*back.assignment, before);
    EXPECT_EQ(co->describe("g")->group_epoch, epoch);
}

TEST_F(ConsumerGroup, RestartRestoresEpochsAndAssignments) {
    join("a");
    join("b");
    settle({"a", "b"});
    auto d = co->describe("g");
    make();  // a new coordinator: the broker restarted
    for (const auto& [id, g] : writer.stored) co->restore(g);
    auto r = poll("a");
    EXPECT_EQ(r.error, ec::none);
    EXPECT_EQ(r.member_epoch, d->group_epoch);
    EXPECT_FALSE(r.assignment.has_value());  // nothing changed: nothing to send
    auto after = co->describe("g");
    EXPECT_EQ(after->group_epoch, d->group_epoch);
    EXPECT_EQ(after->state, "Stable");
    EXPECT_EQ(after->members.size(), 2u);
}

}  // namespace
}  // namespace sluice::group::consumer

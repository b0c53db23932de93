// Online migration between the classic protocol and consumer groups (KIP-848): a
// consumer-protocol member joining a classic group converts it, classic members carry
// on through JoinGroup / SyncGroup / Heartbeat with the broker assigning them, and the
// group goes back to the classic coordinator when the last consumer member leaves.

#include <gtest/gtest.h>

#include "group/consumer/coordinator.h"
#include "group/consumer_protocol.h"
#include "group_test_util.h"

namespace sluice::group::consumer {
namespace {

using test::ec;
using test::join_reply;
using test::sync_reply;

class one_topic final : public topic_view {
  public:
    std::optional<int32_t> partitions(const std::string& t) const override {
        return t == "orders" ? std::optional<int32_t>(6) : std::nullopt;
    }
    std::vector<std::string> names() const override { return {"orders"}; }
};

class Migration : public test::group_test {
  protected:
    Migration() {
        cfg.initial_rebalance_delay_ms = 0;
        cons = std::make_unique<coordinator>(cfg, topics, clock.source());
        cons->set_classic(&co());
        cons->set_state_writer(&writer);
    }
    static std::vector<protocol_entry> orders_protocol() {
        return {{"range", test::subscription_v0({"orders"})}};
    }
    // A stable classic group: a holds partitions 0-2, b 3-5.
    std::vector<member> classic_pair() {
        std::vector<join_reply> replies;
        for (int i = 0; i < 2; ++i) {
            std::string id = new_member_id("g", orders_protocol());
            replies.push_back(join(join_req("g", id, orders_protocol())));
        }
        await_all(replies);
        std::vector<member> ms;
        for (auto& r : replies) ms.push_back({r->member_id, r->generation, std::nullopt, *r});
        auto leader = sync("g", ms[0].id, ms[0].generation,
                           {{ms[0].id, serialize_assignment({{"orders", {0, 1, 2}}}, 0)},
                            {ms[1].id, serialize_assignment({{"orders", {3, 4, 5}}}, 0)}});
        EXPECT_TRUE(leader.ready());
        EXPECT_EQ(state("g"), group_state::stable);
        return ms;
    }
    heartbeat_result beat(const std::string& id, int32_t epoch,
                          std::optional<partition_map> owned) {
        heartbeat_request r;
        r.version = 1;
        r.group_id = "g";
        r.member_id = id;
        r.member_epoch = epoch;
        r.owned = std::move(owned);
        if (epoch == 0) {
            r.rebalance_timeout_ms = 30000;
            r.subscribed_topic_names = std::vector<std::string>{"orders"};
        }
        std::optional<heartbeat_result> got;
        cons->heartbeat(std::move(r), [&](const heartbeat_result& x) { got = x; });
        EXPECT_TRUE(got.has_value());
        return got.value_or(heartbeat_result{});
    }
    // A classic member joins again (eager: it gave up everything) and syncs.
    partition_map rejoin(member& m) {
        join_reply j;
        cons->classic_join(join_req("g", m.id, orders_protocol()), j.callback());
        EXPECT_TRUE(j.ready());
        EXPECT_EQ(j->error, ec::none);
        EXPECT_EQ(j->leader, "");  // the broker assigns
        EXPECT_EQ(j->protocol_name, "range");
        m.generation = j->generation;
        sync_request s;
        s.group_id = "g";
        s.member_id = m.id;
        s.generation = m.generation;
        s.protocol_type = "consumer";
        s.protocol_name = "range";
        sync_reply r;
        cons->classic_sync(s, r.callback());
        EXPECT_TRUE(r.ready());
        EXPECT_EQ(r->error, ec::none);
        return parse_assignment(r->assignment).value_or(partition_map{});
    }

    one_topic topics;
    test::consumer_writer writer;
    std::unique_ptr<coordinator> cons;
};

TEST_F(Migration, ConsumerMemberUpgradesTheGroupAndLeavingDowngradesIt) {
    auto ms = classic_pair();
    const int32_t generation = ms[0].generation;
    auto c = beat("c", 0, partition_map{});
    ASSERT_EQ(c.error, ec::none);
    EXPECT_TRUE(cons->has_members("g"));
    EXPECT_EQ(co().describe("g")->members.size(), 0u);  // the classic coordinator let go
    auto d = cons->describe("g");
    EXPECT_EQ(d->group_epoch, generation + 1);
    EXPECT_EQ(d->members.size(), 3u);
    // c waits: every partition is still owned by a classic member.
    EXPECT_TRUE(c.assignment && c.assignment->empty());
    // The classic members are told to join again, and give up what c is to get.
    for (auto& m : ms) {
        EXPECT_EQ(cons->classic_heartbeat("g", {m.id, std::nullopt, m.generation}),
                  ec::rebalance_in_progress);
        // Their commits with the old generation still count until they rejoin.
        EXPECT_EQ(cons->check_commit("g", m.id, m.generation, 8), ec::none);
    }
    std::map<std::string, partition_map> owned;
    for (int round = 0; round < 3; ++round) {
        for (auto& m : ms) {
            if (cons->classic_heartbeat("g", {m.id, std::nullopt, m.generation}) !=
                ec::rebalance_in_progress)
                continue;
            owned[m.id] = rejoin(m);
        }
        auto hb = beat("c", c.member_epoch, owned["c"]);
        ASSERT_EQ(hb.error, ec::none);
        c.member_epoch = hb.member_epoch;
        if (hb.assignment) owned["c"] = *hb.assignment;
    }
    size_t total = 0;
    std::set<int32_t> all;
    for (const auto& [id, pm] : owned) {
        EXPECT_EQ(pm.count("orders") ? pm.at("orders").size() : 0, 2u) << id;
        for (int32_t p : pm.count("orders") ? pm.at("orders") : std::set<int32_t>{}) all.insert(p);
        total += pm.count("orders") ? pm.at("orders").size() : 0;
    }
    EXPECT_EQ(total, 6u);
    EXPECT_EQ(all.size(), 6u);
    EXPECT_EQ(cons->describe("g")->state, "Stable");
    for (auto& m : ms) {
        EXPECT_EQ(cons->classic_heartbeat("g", {m.id, std::nullopt, m.generation}), ec::none);
        EXPECT_EQ(cons->classic_heartbeat("g", {m.id, std::nullopt, m.generation - 1}),
                  ec::illegal_generation);
        EXPECT_EQ(cons->check_commit("g", m.id, m.generation - 1, 8), ec::illegal_generation);
    }

    // The last consumer-protocol member leaves: a classic group again, rebalancing.
    EXPECT_EQ(beat("c", -1, std::nullopt).error, ec::none);
    EXPECT_FALSE(cons->is_consumer_group("g"));
    auto back = co().describe("g");
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->members.size(), 2u);
    EXPECT_EQ(back->state, group_state::preparing_rebalance);
    EXPECT_EQ(heartbeat("g", ms[0].id, back->generation), ec::rebalance_in_progress);
}

// Classic members of a converted group are stored with their session timeout and
// protocols: a coordinator restored from the record (a broker restart) knows them at the
// same epoch, with the same partitions, and nobody rejoins.
TEST_F(Migration, ClassicMembersSurviveARestartWithoutRejoining) {
    auto ms = classic_pair();
    auto c = beat("c", 0, partition_map{});
    ASSERT_EQ(c.error, ec::none);
    std::map<std::string, partition_map> owned;
    for (int round = 0; round < 3; ++round) {
        for (auto& m : ms)
            if (cons->classic_heartbeat("g", {m.id, std::nullopt, m.generation}) ==
                ec::rebalance_in_progress)
                owned[m.id] = rejoin(m);
        auto hb = beat("c", c.member_epoch, owned["c"]);
        c.member_epoch = hb.member_epoch;
        if (hb.assignment) owned["c"] = *hb.assignment;
    }
    ASSERT_EQ(cons->describe("g")->state, "Stable");
    ASSERT_EQ(writer.stored.count("g"), 1u);
    const auto& record = writer.stored.at("g");
    for (const auto& sm : record.members) {
        EXPECT_EQ(sm.classic.has_value(), sm.member_id != "c") << sm.member_id;
        if (sm.classic) {
            EXPECT_EQ(sm.classic->session_timeout_ms, join_req("g", "", {}).session_timeout_ms);
            EXPECT_EQ(sm.classic->protocols, orders_protocol());
        }
    }

    auto restarted = std::make_unique<coordinator>(cfg, topics, clock.source());
    restarted->restore(record);
    auto d = restarted->describe("g");
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(d->state, "Stable");
    for (const auto& md : d->members) EXPECT_EQ(md.classic, md.member_id != "c") << md.member_id;
    for (auto& m : ms) {
        EXPECT_EQ(restarted->classic_heartbeat("g", {m.id, std::nullopt, m.generation}), ec::none);
        sync_request s;
        s.group_id = "g";
        s.member_id = m.id;
        s.generation = m.generation;
        s.protocol_type = "consumer";
        s.protocol_name = "range";
        sync_reply r;
        restarted->classic_sync(s, r.callback());
        ASSERT_TRUE(r.ready());
        EXPECT_EQ(r->error, ec::none);
        EXPECT_EQ(parse_assignment(r->assignment).value_or(partition_map{}), owned[m.id]);
    }
    EXPECT_EQ(d->group_epoch, cons->describe("g")->group_epoch);
}

TEST_F(Migration, RefusedWhenThePolicySaysNoOrTheGroupIsNotAConsumerOne) {
    cfg.consumer_migration_policy = "downgrade";
    cons->set_settings(cfg);
    classic_pair();
    EXPECT_EQ(beat("c", 0, partition_map{}).error, ec::group_id_not_found);
    EXPECT_EQ(co().describe("g")->members.size(), 2u);
    // A classic member of a consumer group must speak the consumer protocol type.
    cfg.consumer_migration_policy = "bidirectional";
    cons->set_settings(cfg);
    ASSERT_EQ(beat("c", 0, partition_map{}).error, ec::none);
    auto req = join_req("g", "x", {{"range", test::subscription_v0({"orders"})}});
    req.protocol_type = "connect";
    join_reply j;
    cons->classic_join(req, j.callback());
    EXPECT_EQ(j->error, ec::inconsistent_group_protocol);
    join_reply unknown;
    cons->classic_join(join_req("g", {}, orders_protocol()), unknown.callback());
    EXPECT_EQ(unknown->error, ec::member_id_required);
}

}  // namespace
}  // namespace sluice::group::consumer

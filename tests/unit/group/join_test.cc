// The join phase of a new group: member ids handed out by MEMBER_ID_REQUIRED, the
// initial rebalance delay, protocol selection, and the checks a JoinGroup must pass.

#include <map>

#include "group_test_util.h"

namespace sluice::group::test {
namespace {

// The tests below count in steps of a 300 ms delay (make run's); the broker's default
// is Kafka's 3 s.
class join_test : public group_test {
  protected:
    join_test() { cfg.initial_rebalance_delay_ms = 300; }
};

TEST(join_defaults, the_initial_rebalance_delay_is_kafkas_3_s) {
    EXPECT_EQ(config{}.initial_rebalance_delay_ms, 3000);
}

TEST_F(join_test, first_join_is_answered_member_id_required_with_an_id) {
    auto r = join(join_req("g"));
    ASSERT_TRUE(r.ready());
    EXPECT_EQ(r->error, ec::member_id_required);
    // Kafka's form: the client id, a dash and a UUID.
    EXPECT_TRUE(r->member_id.starts_with("client-")) << r->member_id;
    EXPECT_EQ(r->member_id.size(), std::string("client-").size() + 36) << r->member_id;
    EXPECT_EQ(r->generation, -1);
    EXPECT_TRUE(r->members.empty());

    auto again = join(join_req("g"));
    ASSERT_TRUE(again.ready());
    EXPECT_EQ(again->error, ec::member_id_required);
    EXPECT_NE(again->member_id, r->member_id);
}

TEST_F(join_test, rejoin_is_parked_until_the_initial_delay_passes) {
    std::string id = new_member_id("g");
    auto r = join(join_req("g", id, range_protocol("subscription")));
    EXPECT_FALSE(r.ready());
    EXPECT_EQ(state("g"), group_state::preparing_rebalance);

    advance(cfg.initial_rebalance_delay_ms - 1);
    EXPECT_FALSE(r.ready());

    advance(1);
    ASSERT_TRUE(r.ready());
    EXPECT_EQ(r.count(), 1u);
    EXPECT_EQ(r->error, ec::none);
    EXPECT_EQ(r->generation, 1);
    EXPECT_EQ(r->member_id, id);
    EXPECT_EQ(r->leader, id);
    EXPECT_EQ(r->protocol_type, "consumer");
    EXPECT_EQ(r->protocol_name, "range");
    ASSERT_EQ(r->members.size(), 1u);
    EXPECT_EQ(r->members[0].member_id, id);
    EXPECT_EQ(r->members[0].metadata, to_bytes("subscription"));
    EXPECT_EQ(state("g"), group_state::completing_rebalance);
}

TEST_F(join_test, leader_gets_every_members_metadata_for_the_selected_protocol) {
    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a, {{"range", to_bytes("a-range")}, {"rr", to_bytes("a-rr")}}));
    std::string b = new_member_id("g");
    auto jb = join(join_req("g", b, {{"range", to_bytes("b-range")}}));
    await_all({ja, jb});

    for (const auto* r : {&*ja, &*jb}) {
        EXPECT_EQ(r->error, ec::none);
        EXPECT_EQ(r->generation, 1);
        EXPECT_EQ(r->leader, a);
        EXPECT_EQ(r->protocol_name, "range");
    }
    std::map<std::string, bytes> metadata;
    for (const auto& m : ja->members) metadata[m.member_id] = m.metadata;
    EXPECT_EQ(metadata,
              (std::map<std::string, bytes>{{a, to_bytes("a-range")}, {b, to_bytes("b-range")}}));
    EXPECT_TRUE(jb->members.empty()) << "followers get no member list";
}

TEST_F(join_test, a_member_arriving_during_the_initial_delay_extends_it) {
    // Delay 300 ms: the member arriving at 100 ms pushes completion to 600 ms.
    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a));
    advance(100);
    std::string b = new_member_id("g");
    auto jb = join(join_req("g", b));

    advance(200);  // 300 ms: the first delay ends, but a member arrived during it
    EXPECT_FALSE(ja.ready());
    advance(299);
    EXPECT_FALSE(ja.ready());
    EXPECT_FALSE(jb.ready());

    advance(1);  // 600 ms: no arrival during the extension
    ASSERT_TRUE(ja.ready());
    ASSERT_TRUE(jb.ready());
    EXPECT_EQ(ja->generation, 1);
    EXPECT_EQ(ja->members.size(), 2u);
}

TEST_F(join_test, initial_delay_extensions_stop_at_the_rebalance_timeout) {
    // Rebalance timeout 1000 ms, delay 300 ms: arrivals in every period extend the delay
    // at 300, 600 and (by the 100 ms left) 900 ms; at 1000 ms the group forms anyway.
    auto joiner = [&] {
        std::string id = new_member_id("g");
        auto req = join_req("g", id);
        req.rebalance_timeout_ms = 1000;
        return join(std::move(req));
    };
    std::vector<join_reply> replies{joiner()};
    advance(250);
    replies.push_back(joiner());  // 250 ms
    advance(50);                  // 300 ms: extended to 600
    advance(200);
    replies.push_back(joiner());  // 500 ms
    advance(100);                 // 600 ms: extended to 900
    advance(250);
    replies.push_back(joiner());  // 850 ms
    advance(50);                  // 900 ms: extended by the 100 ms left, to 1000
    advance(50);
    replies.push_back(joiner());  // 950 ms
    advance(49);
    EXPECT_FALSE(replies[0].ready());

    advance(1);  // 1000 ms
    for (const auto& r : replies) {
        ASSERT_TRUE(r.ready());
        EXPECT_EQ(r->error, ec::none);
        EXPECT_EQ(r->generation, 1);
    }
    EXPECT_EQ(replies[0]->members.size(), 5u);
}

TEST_F(join_test, selects_the_common_protocol_with_the_most_first_preference_votes) {
    // "z" is not supported by b, so it cannot win; a votes for x (its first candidate),
    // b and c vote for y, which wins although the leader prefers x.
    auto p = [](std::string_view name, const std::string& who) {
        return protocol_entry{std::string(name), to_bytes(who + "-" + std::string(name))};
    };
    auto joiner = [&](std::vector<protocol_entry> protocols) {
        std::string id = new_member_id("g", protocols);
        return std::pair{id, join(join_req("g", id, std::move(protocols)))};
    };
    auto [a, ja] = joiner({p("z", "a"), p("x", "a"), p("y", "a")});
    auto [b, jb] = joiner({p("y", "b"), p("x", "b")});
    auto [c, jc] = joiner({p("y", "c"), p("x", "c"), p("z", "c")});
    await_all({ja, jb, jc});

    EXPECT_EQ(ja->leader, a);
    for (const auto* r : {&*ja, &*jb, &*jc}) EXPECT_EQ(r->protocol_name, "y");
    std::map<std::string, bytes> metadata;
    for (const auto& m : ja->members) metadata[m.member_id] = m.metadata;
    EXPECT_EQ(metadata, (std::map<std::string, bytes>{
                            {a, to_bytes("a-y")}, {b, to_bytes("b-y")}, {c, to_bytes("c-y")}}));
}

TEST_F(join_test, inconsistent_group_protocol) {
    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a, {{"range", {}}, {"rr", {}}}));

    auto other_type = join_req("g");
    other_type.protocol_type = "connect";
    auto r1 = join(other_type);
    ASSERT_TRUE(r1.ready());
    EXPECT_EQ(r1->error, ec::inconsistent_group_protocol);

    auto r2 = join(join_req("g", {}, {{"sticky", {}}}));
    ASSERT_TRUE(r2.ready());
    EXPECT_EQ(r2->error, ec::inconsistent_group_protocol);

    // One protocol in common is enough.
    auto r3 = join(join_req("g", {}, {{"sticky", {}}, {"rr", {}}}));
    ASSERT_TRUE(r3.ready());
    EXPECT_EQ(r3->error, ec::member_id_required);

    // A new group needs a protocol type and at least one protocol. As in Kafka the refused
    // join leaves an Empty group, which the periodic cleanup forgets.
    auto no_type = join_req("fresh");
    no_type.protocol_type.clear();
    EXPECT_EQ(join(no_type)->error, ec::inconsistent_group_protocol);
    EXPECT_EQ(join(join_req("fresh", {}, {}))->error, ec::inconsistent_group_protocol);
    ASSERT_TRUE(co().describe("fresh"));
    EXPECT_EQ(co().describe("fresh")->state, group_state::empty);
    EXPECT_EQ(co().drop_idle_groups(), 1u);
    EXPECT_FALSE(co().describe("fresh"));
}

TEST_F(join_test, invalid_group_id_and_session_timeout) {
    EXPECT_EQ(join(join_req(""))->error, ec::invalid_group_id);

    auto low = join_req("g");
    low.session_timeout_ms = cfg.min_session_timeout_ms - 1;
    EXPECT_EQ(join(low)->error, ec::invalid_session_timeout);
    auto high = join_req("g");
    high.session_timeout_ms = cfg.max_session_timeout_ms + 1;
    EXPECT_EQ(join(high)->error, ec::invalid_session_timeout);
    EXPECT_EQ(co().group_count(), 0u);

    // Both bounds are inclusive.
    auto min = join_req("g");
    min.session_timeout_ms = cfg.min_session_timeout_ms;
    EXPECT_EQ(join(min)->error, ec::member_id_required);
    auto max = join_req("g");
    max.session_timeout_ms = cfg.max_session_timeout_ms;
    EXPECT_EQ(join(max)->error, ec::member_id_required);
}

TEST_F(join_test, unknown_member_id) {
    auto r = join(join_req("nowhere", "client-made-up"));
    EXPECT_EQ(r->error, ec::unknown_member_id);
    EXPECT_FALSE(co().describe("nowhere")) << "a rejoin does not create a group";

    std::string a = new_member_id("g");
    auto ja = join(join_req("g", a));
    EXPECT_EQ(join(join_req("g", "client-made-up"))->error, ec::unknown_member_id);
}

TEST_F(join_test, group_max_size_reached) {
    cfg.max_group_size = 2;
    // Members waiting for their rejoin count, as the ids handed out are promises.
    std::string a = new_member_id("g");
    std::string b = new_member_id("g");
    auto full = join(join_req("g"));
    ASSERT_TRUE(full.ready());
    EXPECT_EQ(full->error, ec::group_max_size_reached);

    auto ja = join(join_req("g", a));
    auto jb = join(join_req("g", b));
    await_all({ja, jb});
    EXPECT_EQ(join(join_req("g"))->error, ec::group_max_size_reached);
    auto static_req = join_req("g");
    static_req.instance_id = "static-c";
    EXPECT_EQ(join(static_req)->error, ec::group_max_size_reached);
    EXPECT_EQ(member_ids("g"), sorted({a, b}));
}

TEST_F(join_test, static_members_are_not_asked_for_a_member_id) {
    auto req = join_req("g");
    req.instance_id = "host-1";
    auto r = join(req);
    EXPECT_FALSE(r.ready()) << "parked in the initial delay";
    advance(cfg.initial_rebalance_delay_ms);
    ASSERT_TRUE(r.ready());
    EXPECT_EQ(r->error, ec::none);
    EXPECT_FALSE(r->member_id.empty());
    ASSERT_EQ(r->members.size(), 1u);
    EXPECT_EQ(r->members[0].instance_id, "host-1");
}

}  // namespace
}  // namespace sluice::group::test

// Durable group state: what the coordinator writes and when, what it answers while a
// write is in flight or after one failed, and a restart that restores the groups: the
// same generation, members and assignments, with members' sessions started anew.

#include <map>

#include "group/state_store.h"
#include "group_test_util.h"

namespace sluice::group::test {
namespace {

// A state store in memory behind a writer that applies writes at once, or holds them
// until flush() (a slow disk), or fails them.
class memory_writer final : public state_writer {
  public:
    void write(group_write w, done_fn done) override {
        _queued.push_back({std::move(w), std::move(done)});
        ++writes;
        if (!hold) flush();
    }
    void flush() {
        auto queued = std::move(_queued);
        _queued.clear();
        for (auto& [w, done] : queued) {
            if (fail) {
                done(error{errc::io_error, "disk on fire"});
                continue;
            }
            if (w.op == group_write::kind::erase)
                stored.erase(w.group.group_id);
            else
                stored[w.group.group_id] = w.group;
            done({});
        }
    }
    size_t queued() const { return _queued.size(); }

    std::map<std::string, stored_group> stored;
    bool hold = false;
    bool fail = false;
    size_t writes = 0;

  private:
    std::vector<std::pair<group_write, done_fn>> _queued;
};

class persistence_test : public group_test {
  protected:
    persistence_test() { cfg.initial_rebalance_delay_ms = 0; }
    void SetUp() override { co().set_state_writer(&writer); }

    // The broker going down (SIGTERM or kill -9: the store holds what was written) and
    // coming back: every stored group restored into a fresh coordinator.
    void restart_from_store() {
        restart([this](coordinator& c) {
            c.set_state_writer(&writer);
            for (const auto& [id, g] : writer.stored) c.restore_group(g);
        });
    }

    memory_writer writer;
};

TEST_F(persistence_test, a_stable_generation_is_stored_with_every_member_and_assignment) {
    auto g = stable_group("g", 2);
    ASSERT_EQ(writer.stored.count("g"), 1u);
    const stored_group& s = writer.stored.at("g");
    EXPECT_EQ(s.state, group_state::stable);
    EXPECT_EQ(s.generation, g[0].generation);
    EXPECT_EQ(s.protocol_type, std::optional<std::string>("consumer"));
    EXPECT_EQ(s.protocol_name, std::optional<std::string>("range"));
    EXPECT_EQ(s.leader, g[0].id);
    ASSERT_EQ(s.members.size(), 2u);
    for (size_t i = 0; i < 2; ++i) {
        EXPECT_EQ(s.members[i].member_id, g[i].id) << "in the order they joined";
        EXPECT_EQ(s.members[i].client_id, "client");
        EXPECT_EQ(s.members[i].client_host, "/127.0.0.1");
        EXPECT_EQ(s.members[i].session_timeout_ms, session_ms);
        EXPECT_EQ(s.members[i].rebalance_timeout_ms, rebalance_ms);
        EXPECT_EQ(s.members[i].protocols, range_protocol("meta-" + std::to_string(i)));
        EXPECT_EQ(s.members[i].assignment, assignment(i));
    }
}

TEST_F(persistence_test, a_restored_group_resumes_its_generation_without_a_rebalance) {
    auto g = stable_group("g", 2);
    const int32_t gen = g[0].generation;
    restart_from_store();

    EXPECT_EQ(state("g"), group_state::stable);
    auto d = co().describe("g");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->generation, gen);
    EXPECT_EQ(d->protocol_name, "range");
    EXPECT_EQ(member_ids("g"), sorted({g[0].id, g[1].id}));
    for (const auto& m : d->members) {
        size_t i = m.member_id == g[0].id ? 0 : 1;
        EXPECT_EQ(m.assignment, assignment(i));
        EXPECT_EQ(m.metadata, to_bytes("meta-" + std::to_string(i)));
    }
    for (const auto& m : g) EXPECT_EQ(heartbeat("g", m.id, gen), ec::none);
    auto s = sync("g", g[1].id, gen);
    ASSERT_TRUE(s.ready());
    EXPECT_EQ(s->error, ec::none);
    EXPECT_EQ(s->assignment, assignment(1));
    EXPECT_EQ(co().check_commit("g", {g[0].id, std::nullopt, gen}), ec::none);
    // A follower's rejoin with the same protocols gets the same generation back.
    auto j = join(join_req("g", g[1].id, range_protocol("meta-1")));
    ASSERT_TRUE(j.ready());
    EXPECT_EQ(j->error, ec::none);
    EXPECT_EQ(j->generation, gen);
    EXPECT_EQ(state("g"), group_state::stable);
}

TEST_F(persistence_test, a_restored_member_that_never_returns_expires_after_its_session) {
    auto g = stable_group("g", 2);
    const int32_t gen = g[0].generation;
    advance(session_ms - 1000);  // the old sessions are nearly over when the broker dies
    restart_from_store();
    // The sessions start anew at the restart: a whole session timeout from now.
    for (int i = 0; i < 3; ++i) {
        advance(session_ms / 3);
        EXPECT_EQ(heartbeat("g", g[0].id, gen), ec::none);
    }
    EXPECT_EQ(member_ids("g"), sorted({g[0].id, g[1].id})) << "1 ms before its new session ends";
    advance(2);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{g[0].id})
        << "the member that never heartbeat is gone after its session timeout";
    EXPECT_EQ(heartbeat("g", g[0].id, gen), ec::rebalance_in_progress);
    EXPECT_EQ(heartbeat("g", g[1].id, gen), ec::unknown_member_id);
    ASSERT_EQ(writer.stored.at("g").members.size(), 1u);
    EXPECT_EQ(writer.stored.at("g").state, group_state::preparing_rebalance);
}

TEST_F(persistence_test, syncs_are_answered_once_the_assignment_is_durable) {
    auto g = joined_group("g", 2);
    writer.hold = true;
    auto follower = sync("g", g[1].id, g[1].generation);
    auto leader =
        sync("g", g[0].id, g[0].generation, {{g[0].id, assignment(0)}, {g[1].id, assignment(1)}});
    EXPECT_FALSE(leader.ready());
    EXPECT_FALSE(follower.ready());
    EXPECT_EQ(state("g"), group_state::completing_rebalance);
    EXPECT_EQ(writer.queued(), 1u);
    writer.flush();
    ASSERT_TRUE(leader.ready());
    ASSERT_TRUE(follower.ready());
    EXPECT_EQ(leader->error, ec::none);
    EXPECT_EQ(leader->assignment, assignment(0));
    EXPECT_EQ(follower->assignment, assignment(1));
    EXPECT_EQ(state("g"), group_state::stable);
}

TEST_F(persistence_test, a_failed_write_answers_coordinator_not_available_and_rebalances) {
    auto g = joined_group("g", 2);
    writer.fail = true;
    auto follower = sync("g", g[1].id, g[1].generation);
    auto leader = sync("g", g[0].id, g[0].generation, {{g[0].id, assignment(0)}});
    ASSERT_TRUE(leader.ready());
    ASSERT_TRUE(follower.ready());
    EXPECT_EQ(leader->error, ec::coordinator_not_available);
    EXPECT_EQ(follower->error, ec::coordinator_not_available);
    EXPECT_EQ(state("g"), group_state::preparing_rebalance);
}

TEST_F(persistence_test, a_write_overtaken_by_a_rebalance_answers_nothing) {
    auto g = joined_group("g", 2);
    writer.hold = true;
    auto leader = sync("g", g[0].id, g[0].generation, {{g[0].id, assignment(0)}});
    EXPECT_EQ(co().leave("g", {g[1].id, std::nullopt, -1}), ec::none);
    ASSERT_TRUE(leader.ready()) << "the rebalance answers the parked sync";
    EXPECT_EQ(leader->error, ec::rebalance_in_progress);
    writer.flush();
    EXPECT_EQ(leader.count(), 1u);
    EXPECT_NE(state("g"), group_state::stable);
    EXPECT_EQ(writer.stored.at("g").state, group_state::preparing_rebalance)
        << "the later write (the leave) is the one kept";
}

TEST_F(persistence_test, after_a_leave_a_restart_makes_the_others_rejoin) {
    auto g = stable_group("g", 2);
    const int32_t gen = g[0].generation;
    EXPECT_EQ(co().leave("g", {g[1].id, std::nullopt, -1}), ec::none);
    restart_from_store();
    EXPECT_EQ(state("g"), group_state::preparing_rebalance);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{g[0].id});
    EXPECT_EQ(heartbeat("g", g[0].id, gen), ec::rebalance_in_progress)
        << "the generation lost a member's partitions: no one may keep it";
    auto j = join(join_req("g", g[0].id, range_protocol("meta-0")));
    co().poll();
    ASSERT_TRUE(j.ready());
    EXPECT_EQ(j->error, ec::none);
    EXPECT_EQ(j->generation, gen + 1);
    EXPECT_EQ(j->leader, g[0].id);
}

TEST_F(persistence_test, a_restored_rebalance_drops_members_that_do_not_rejoin) {
    auto g = stable_group("g", 3);
    EXPECT_EQ(co().leave("g", {g[2].id, std::nullopt, -1}), ec::none);
    restart_from_store();
    auto j = join(join_req("g", g[0].id, range_protocol("meta-0")));
    for (int i = 0; i < 3; ++i) EXPECT_EQ(heartbeat("g", g[1].id, g[1].generation),
                                          ec::rebalance_in_progress);
    EXPECT_FALSE(j.ready());
    advance(rebalance_ms);
    ASSERT_TRUE(j.ready());
    EXPECT_EQ(j->error, ec::none);
    EXPECT_EQ(member_ids("g"), std::vector<std::string>{g[0].id});
}

TEST_F(persistence_test, an_empty_group_is_stored_empty_and_erased_when_forgotten) {
    auto g = stable_group("g", 1);
    EXPECT_EQ(co().leave("g", {g[0].id, std::nullopt, -1}), ec::none);
    co().poll();
    EXPECT_EQ(state("g"), group_state::empty);
    ASSERT_EQ(writer.stored.count("g"), 1u);
    EXPECT_EQ(writer.stored.at("g").state, group_state::empty);
    EXPECT_TRUE(writer.stored.at("g").members.empty());
    EXPECT_EQ(writer.stored.at("g").generation, g[0].generation + 1);

    restart_from_store();
    EXPECT_EQ(state("g"), group_state::empty);
    EXPECT_EQ(co().describe("g")->generation, g[0].generation + 1);
    EXPECT_EQ(co().list().at(0).protocol_type, "consumer");
    EXPECT_EQ(co().drop_idle_groups(), 1u);
    EXPECT_EQ(writer.stored.count("g"), 0u) << "a forgotten group leaves no record";
}

TEST_F(persistence_test, joins_alone_write_nothing) {
    auto g = joined_group("g", 2);
    EXPECT_EQ(writer.writes, 0u);
    EXPECT_TRUE(writer.stored.empty());
}

TEST_F(persistence_test, a_static_members_new_id_is_stored_before_its_join_is_answered) {
    auto g = stable_group("g", 2, {"a", "b"});
    writer.hold = true;
    auto req = join_req("g", {}, range_protocol("meta-1"));
    req.instance_id = "b";
    auto j = join(std::move(req));
    EXPECT_FALSE(j.ready());
    writer.flush();
    ASSERT_TRUE(j.ready());
    ASSERT_EQ(j->error, ec::none);
    const std::string new_id = j->member_id;
    EXPECT_NE(new_id, g[1].id);

    restart_from_store();
    EXPECT_EQ(heartbeat("g", new_id, g[1].generation, "b"), ec::none);
    EXPECT_EQ(heartbeat("g", g[1].id, g[1].generation, "b"), ec::fenced_instance_id);
    EXPECT_EQ(state("g"), group_state::stable);
}

}  // namespace
}  // namespace sluice::group::test

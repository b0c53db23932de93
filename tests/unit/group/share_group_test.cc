// Share groups (KIP-932): the share-partition window (acquisition, locks, delivery
// counts, acknowledgements), its stored form, and the coordinator's membership and
// simple assignor, with a hand-driven clock.

#include <gtest/gtest.h>

#include <functional>
#include <utility>

#include "group/share/coordinator.h"
#include "group/share/partition.h"

namespace sluice::group::share {
namespace {

using protocol::error_code;

constexpr int8_t accept = 1, release = 2, reject = 3;

partition_limits lim() {
    return {1000, 3, 100};
}

TEST(SharePartition, AcquiresNewRecordsThenOnlyWhatIsAvailable) {
    share_partition p(0, 0, {});
    EXPECT_EQ(p.fetch_position(10, lim()), 0);
    auto a = p.acquire("m1", 0, 9, 4, 0, lim());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].first, 0);
    EXPECT_EQ(a[0].last, 3);
    EXPECT_EQ(a[0].delivery_count, 1);
    EXPECT_EQ(p.end(), 4);
    EXPECT_EQ(p.fetch_position(10, lim()), 4);  // nothing available in the window
    auto b = p.acquire("m2", 0, 9, 100, 0, lim());
    ASSERT_EQ(b.size(), 1u);
    EXPECT_EQ(b[0].first, 4);  // m1's records stay m1's
    EXPECT_EQ(b[0].last, 9);
    EXPECT_EQ(p.fetch_position(10, lim()), -1);
}

TEST(SharePartition, AcknowledgementsMoveTheWindow) {
    share_partition p(0, 0, {});
    (void)p.acquire("m", 0, 4, 10, 0, lim());
    EXPECT_EQ(p.acknowledge("other", 0, 0, {accept}, 1, lim()), error_code::invalid_record_state);
    EXPECT_EQ(p.acknowledge("m", 0, 1, {accept}, 1, lim()), error_code::none);
    EXPECT_EQ(p.start(), 2);
    EXPECT_EQ(p.acknowledge("m", 0, 0, {accept}, 1, lim()), error_code::invalid_record_state);
    EXPECT_EQ(p.acknowledge("m", 2, 4, {release, reject, accept}, 1, lim()), error_code::none);
    EXPECT_EQ(p.start(), 2);  // 2 was released: it comes back
    EXPECT_EQ(p.fetch_position(5, lim()), 2);
    auto again = p.acquire("m2", 2, 4, 10, 2, lim());
    ASSERT_EQ(again.size(), 1u);
    EXPECT_EQ(again[0].first, 2);
    EXPECT_EQ(again[0].last, 2);
    EXPECT_EQ(again[0].delivery_count, 2);
    EXPECT_EQ(p.acknowledge("m2", 2, 4, {accept, accept}, 3, lim()), error_code::invalid_request);
    EXPECT_EQ(p.acknowledge("m2", 2, 2, {9}, 3, lim()), error_code::invalid_request);
    EXPECT_EQ(p.acknowledge("m2", 2, 2, {accept}, 3, lim()), error_code::none);
    EXPECT_EQ(p.start(), 5);
    EXPECT_TRUE(p.records().empty());
}

TEST(SharePartition, ExpiredLocksRedeliverUntilTheLimit) {
    share_partition p(0, 0, {});
    int64_t now = 0;
    for (int16_t delivery = 1; delivery <= 3; ++delivery) {
        ASSERT_EQ(p.fetch_position(1, lim()), 0) << delivery;
        auto a = p.acquire("m", 0, 0, 1, now, lim());
        ASSERT_EQ(a.size(), 1u);
        EXPECT_EQ(a[0].delivery_count, delivery);
        now += 1000;  // the lock's duration
        EXPECT_EQ(p.acknowledge("m", 0, 0, {accept}, now, lim()), error_code::invalid_record_state);
        EXPECT_TRUE(p.settle(now, 0, lim()));
    }
    // Delivered three times: archived, and the window moved past it.
    EXPECT_EQ(p.start(), 1);
    EXPECT_EQ(p.fetch_position(1, lim()), -1);
}

TEST(SharePartition, ALeavingMemberGivesBackWithoutCountingADelivery) {
    share_partition p(0, 0, {});
    (void)p.acquire("m", 0, 1, 10, 0, lim());
    EXPECT_TRUE(p.release_member("m", 0, lim()));
    auto a = p.acquire("n", 0, 1, 10, 0, lim());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].delivery_count, 1);
}

TEST(SharePartition, TheWindowIsBoundedAndFollowsTheLogStart) {
    share_partition p(0, 0, {});
    auto a = p.acquire("m", 0, 500, 1000, 0, lim());
    ASSERT_EQ(a.size(), 1u);
    EXPECT_EQ(a[0].last, 99);  // max in flight
    EXPECT_EQ(p.fetch_position(500, lim()), -1);
    EXPECT_TRUE(p.settle(0, 50, lim()));
    EXPECT_EQ(p.start(), 50);
    EXPECT_EQ(p.records().size(), 50u);
}

TEST(SharePartition, RecordsRoundTripThroughTheStoredForm) {
    share_partition p(0, 0, {});
    (void)p.acquire("m", 0, 5, 10, 0, lim());
    ASSERT_EQ(p.acknowledge("m", 1, 3, {accept, reject, release}, 0, lim()), error_code::none);
    auto text = format_records(p.records());
    EXPECT_EQ(text, "0-0:a:1;1-1:k:1;2-2:x:1;3-5:a:1");
    auto back = parse_records(text);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(format_records(*back), text);
    // Locks are not stored: what was acquired comes back available, its deliveries kept.
    EXPECT_EQ(back->at(0).state, record_state::available);
    EXPECT_EQ(back->at(0).delivery_count, 1);
    EXPECT_EQ(back->at(1).state, record_state::acknowledged);
    EXPECT_FALSE(parse_records("1-0:a:1").has_value());
    EXPECT_FALSE(parse_records("0-1:q:1").has_value());
    EXPECT_FALSE(parse_records("0-1:a:1x").has_value());
    EXPECT_TRUE(parse_records("")->empty());
}

TEST(SharePartition, SkippedRecordsAreArchivedNotHandedOut) {
    // read_committed: a control record (2) and an aborted transaction's records (4-5).
    share_partition p(0, 0, {});
    auto a = p.acquire("m", 0, 6, 10, 0, lim(), {{2, 2}, {4, 5}});
    ASSERT_EQ(a.size(), 3u);
    EXPECT_EQ(a[0].first, 0);
    EXPECT_EQ(a[0].last, 1);
    EXPECT_EQ(a[1].first, 3);
    EXPECT_EQ(a[1].last, 3);
    EXPECT_EQ(a[2].first, 6);
    EXPECT_EQ(p.end(), 7);
    ASSERT_EQ(p.acknowledge("m", 0, 1, {accept}, 1, lim()), error_code::none);
    EXPECT_EQ(p.start(), 3);  // past the archived control record
    ASSERT_EQ(p.acknowledge("m", 3, 3, {accept}, 1, lim()), error_code::none);
    EXPECT_EQ(p.start(), 6);
    // Only skipped records read: nothing handed out, the window moves past them.
    share_partition q(0, 0, {});
    EXPECT_TRUE(q.acquire("m", 0, 1, 10, 0, lim(), {{0, 1}}).empty());
    EXPECT_EQ(q.start(), 2);
    EXPECT_EQ(q.end(), 2);
}

class topics final : public consumer::topic_view {
  public:
    std::map<std::string, int32_t> sizes;
    std::optional<int32_t> partitions(const std::string& t) const override {
        auto it = sizes.find(t);
        return it == sizes.end() ? std::nullopt : std::optional<int32_t>(it->second);
    }
    std::vector<std::string> names() const override { return {}; }
};

struct share_coordinator_test : ::testing::Test {
    topics t;
    int64_t now = 0;
    coordinator c{config{}, t, clock_source{[this] { return now; }, [this] { return now; }}};

    heartbeat_result beat(const std::string& m, int32_t epoch,
                          std::optional<std::vector<std::string>> subs = std::nullopt) {
        heartbeat_request r;
        r.group_id = "g";
        r.member_id = m;
        r.member_epoch = epoch;
        r.subscribed_topic_names = std::move(subs);
        heartbeat_result out;
        c.heartbeat(r, [&](heartbeat_result got) { out = std::move(got); });
        return out;
    }
    // The coordinator's calls below answer at once: its default runner runs their work
    // on the calling thread.
    std::vector<partition_description> partitions() {
        std::vector<partition_description> out;
        c.partitions([&](std::vector<partition_description> got) { out = std::move(got); });
        return out;
    }
    std::optional<std::vector<partition_offset>> offsets() {
        std::optional<std::vector<partition_offset>> out;
        c.offsets("g", [&](std::optional<std::vector<partition_offset>> got) { out = std::move(got); });
        return out;
    }
    // The group's error, else the one partition's.
    error_code alter(const tp& p, int64_t start) {
        error_code out = error_code::unknown_server_error;
        c.alter_offsets("g", {{p, start}}, [&](error_code g, std::vector<error_code> each) {
            out = g != error_code::none ? g : each.at(0);
        });
        return out;
    }
    error_code delete_offsets(const std::string& topic) {
        error_code out = error_code::unknown_server_error;
        c.delete_offsets("g", {topic}, [&](error_code g, std::vector<error_code> each) {
            out = g != error_code::none ? g : each.at(0);
        });
        return out;
    }
    error_code delete_group() {
        error_code out = error_code::unknown_server_error;
        c.delete_group("g", [&](error_code e) { out = e; });
        return out;
    }
};

TEST_F(share_coordinator_test, MoreMembersThanPartitionsShareThem) {
    t.sizes["t"] = 1;
    auto a = beat("a", 0, std::vector<std::string>{"t"});
    ASSERT_EQ(a.error, error_code::none);
    EXPECT_EQ(a.member_epoch, 1);
    ASSERT_TRUE(a.assignment);
    EXPECT_EQ(a.assignment->at("t"), std::set<int32_t>{0});
    auto b = beat("b", 0, std::vector<std::string>{"t"});
    EXPECT_EQ(b.member_epoch, 2);
    EXPECT_EQ(b.assignment->at("t"), std::set<int32_t>{0});
    auto a2 = beat("a", 1);
    EXPECT_EQ(a2.member_epoch, 2);
    EXPECT_TRUE(a2.assignment);
    EXPECT_FALSE(beat("a", 2).assignment);  // unchanged
    EXPECT_EQ(beat("a", 1).error, error_code::fenced_member_epoch);
    EXPECT_EQ(beat("x", 3).error, error_code::unknown_member_id);
    EXPECT_EQ(beat("a", -3).error, error_code::invalid_request);  // as Kafka
}

TEST_F(share_coordinator_test, FewerMembersThanPartitionsAreDealtOut) {
    t.sizes["t"] = 4;
    (void)beat("a", 0, std::vector<std::string>{"t"});
    auto b = beat("b", 0, std::vector<std::string>{"t"});
    auto a = beat("a", 1);
    ASSERT_TRUE(a.assignment && b.assignment);
    EXPECT_EQ(a.assignment->at("t").size() + b.assignment->at("t").size(), 4u);
    EXPECT_EQ(beat("b", -1).member_epoch, -1);
    auto alone = beat("a", 2);
    ASSERT_TRUE(alone.assignment);
    EXPECT_EQ(alone.assignment->at("t").size(), 4u);
}

TEST_F(share_coordinator_test, SessionsAndAcknowledgements) {
    t.sizes["t"] = 1;
    (void)beat("a", 0, std::vector<std::string>{"t"});
    const tp p{"t", 0};
    EXPECT_EQ(c.use_session("g", "a", 1, {}, {}).error, error_code::share_session_not_found);
    auto s = c.use_session("g", "a", 0, {p}, {});
    ASSERT_EQ(s.error, error_code::none);
    EXPECT_EQ(s.partitions.size(), 1u);
    EXPECT_EQ(c.use_session("g", "a", 2, {}, {}).error, error_code::invalid_share_session_epoch);
    EXPECT_EQ(c.use_session("g", "a", 1, {}, {}).partitions.size(), 1u);
    EXPECT_EQ(c.use_session("g", "", 0, {}, {}).error, error_code::unknown_member_id);
    // latest: a new group starts at the high watermark.
    EXPECT_EQ(c.fetch_position("g", p, 0, 5), -1);
    EXPECT_EQ(c.fetch_position("g", p, 0, 8), 5);
    auto got = c.acquire("g", "a", p, 5, 7, 10);
    ASSERT_TRUE(got.ok());
    ASSERT_EQ(got->size(), 1u);
    EXPECT_EQ(c.acknowledge("g", "a", p, 5, 7, {accept}), error_code::none);
    EXPECT_EQ(partitions().at(0).start_offset, 8);
    // A member whose session ends is removed and its records released.
    (void)c.acquire("g", "a", p, c.fetch_position("g", p, 0, 9), 8, 10);
    now += config{}.session_timeout_ms + 1;
    ASSERT_TRUE(c.describe("g").has_value());
    EXPECT_TRUE(c.describe("g")->members.empty());
    EXPECT_EQ(partitions().at(0).acquired, 0u);
}

TEST_F(share_coordinator_test, OffsetsOfAnEmptyGroupAreAlteredAndDeleted) {
    t.sizes["t"] = 2;
    const tp p0{"t", 0}, p1{"t", 1};
    EXPECT_FALSE(offsets().has_value());
    EXPECT_EQ(delete_offsets("t"), error_code::group_id_not_found);
    EXPECT_EQ(delete_group(), error_code::group_id_not_found);
    // Altering creates the group, as Kafka does.
    ASSERT_EQ(alter(p0, 4), error_code::none);
    ASSERT_EQ(alter(p1, 9), error_code::none);
    ASSERT_TRUE(c.is_share_group("g"));
    auto o = offsets();
    ASSERT_TRUE(o && o->size() == 2u);
    EXPECT_EQ(o->at(0).start_offset, 4);
    EXPECT_EQ(o->at(1).start_offset, 9);
    // The next fetch starts there.
    EXPECT_EQ(c.fetch_position("g", p0, 0, 10), 4);
    // A member makes the group not empty.
    (void)beat("a", 0, std::vector<std::string>{"t"});
    EXPECT_EQ(alter(p0, 0), error_code::non_empty_group);
    EXPECT_EQ(delete_group(), error_code::non_empty_group);
    (void)beat("a", -1);
    EXPECT_EQ(delete_offsets("t"), error_code::none);
    EXPECT_TRUE(offsets()->empty());
    EXPECT_EQ(delete_offsets("t"), error_code::unknown_topic_or_partition);  // nothing left
    EXPECT_EQ(delete_group(), error_code::none);
    EXPECT_FALSE(c.is_share_group("g"));
}

TEST_F(share_coordinator_test, AForgottenGroupsMembersRejoinAndStillHoldTheirRecords) {
    t.sizes["t"] = 1;
    const tp p{"t", 0};
    ASSERT_EQ(beat("a", 0, std::vector<std::string>{"t"}).member_epoch, 1);
    ASSERT_EQ(c.fetch_position("g", p, 0, 3), -1);  // latest: starts at the end
    ASSERT_EQ(c.fetch_position("g", p, 0, 6), 3);
    ASSERT_TRUE(c.acquire("g", "a", p, 3, 5, 10).ok());
    // The group moved to another coordinator: its members are dropped here, what they
    // acquired is not given back.
    c.forget("g");
    EXPECT_FALSE(c.is_share_group("g"));
    EXPECT_EQ(partitions().at(0).acquired, 3u);
    // Back here, the member is not known and rejoins; it still acknowledges its records.
    EXPECT_EQ(beat("a", 1).error, error_code::unknown_member_id);
    EXPECT_EQ(beat("a", 0, std::vector<std::string>{"t"}).error, error_code::none);
    EXPECT_EQ(c.acknowledge("g", "a", p, 3, 5, {accept}), error_code::none);
    EXPECT_EQ(partitions().at(0).start_offset, 6);
}

TEST_F(share_coordinator_test, TheRunnersJobsReleaseAndAnswerLater) {
    // As the broker's share_work_queue in shared mode: jobs wait until run.
    std::vector<std::pair<std::string, std::function<void()>>> queued;
    c.set_runner([&](const std::string& group, const std::string& member, std::function<void()> job,
                     std::function<void()> done) {
        queued.emplace_back(group + "/" + member, [job = std::move(job), done = std::move(done)] {
            job();
            if (done) done();
        });
    });
    auto run_all = [&] {
        for (auto& [key, fn] : std::exchange(queued, {})) fn();
    };
    t.sizes["t"] = 1;
    const tp p{"t", 0};
    (void)beat("a", 0, std::vector<std::string>{"t"});
    (void)beat("b", 0, std::vector<std::string>{"t"});
    ASSERT_EQ(c.fetch_position("g", p, 0, 4), -1);
    ASSERT_EQ(c.fetch_position("g", p, 0, 7), 4);
    ASSERT_TRUE(c.acquire("g", "a", p, 4, 5, 10).ok());
    ASSERT_TRUE(c.acquire("g", "b", p, 6, 6, 10).ok());
    // A leaving member is out of the group at once; it is answered after its release.
    std::optional<heartbeat_result> left;
    heartbeat_request r;
    r.group_id = "g";
    r.member_id = "a";
    r.member_epoch = -1;
    c.heartbeat(r, [&](heartbeat_result got) { left = std::move(got); });
    EXPECT_FALSE(left.has_value());
    ASSERT_EQ(queued.size(), 1u);
    EXPECT_EQ(queued.front().first, "g/a");  // behind member a's ShareFetch work
    EXPECT_EQ(c.describe("g")->members.size(), 1u);
    run_all();
    ASSERT_TRUE(left.has_value());
    EXPECT_EQ(left->member_epoch, -1);
    // A timed-out member's release is queued the same way; the offsets read after it.
    now += config{}.session_timeout_ms + 1;
    EXPECT_TRUE(c.describe("g")->members.empty());
    std::optional<std::vector<partition_offset>> seen;
    c.offsets("g", [&](std::optional<std::vector<partition_offset>> got) { seen = std::move(got); });
    ASSERT_EQ(queued.size(), 2u);
    EXPECT_EQ(queued.at(0).first, "g/b");
    EXPECT_EQ(queued.at(1).first, "g/");
    EXPECT_FALSE(seen.has_value());
    run_all();
    ASSERT_TRUE(seen && seen->size() == 1u);
    EXPECT_EQ(seen->at(0).start_offset, 4);
    // system.share_groups' windows too.
    std::optional<std::vector<partition_description>> windows;
    c.partitions([&](std::vector<partition_description> got) { windows = std::move(got); });
    EXPECT_FALSE(windows.has_value());
    run_all();
    ASSERT_TRUE(windows && windows->size() == 1u);
    EXPECT_EQ(windows->at(0).acquired, 0u);  // both members' records released
}

}  // namespace
}  // namespace sluice::group::share

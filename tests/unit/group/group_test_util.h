#pragma once

// Shared helpers of the group coordinator tests: a clock advanced by hand, replies that
// record what a parked callback eventually received, and members driven through the
// same JoinGroup / SyncGroup sequence a Kafka consumer sends.

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "common/logging.h"
#include "group/consumer_protocol.h"
#include "group/coordinator.h"

namespace sluice::protocol {
// Failures print "UNKNOWN_MEMBER_ID" rather than a raw byte dump.
inline void PrintTo(error_code e, std::ostream* os) {
    *os << error_name(e) << " (" << static_cast<int>(e) << ")";
}
}  // namespace sluice::protocol

namespace sluice::group {
inline void PrintTo(group_state s, std::ostream* os) {
    *os << state_name(s);
}
}  // namespace sluice::group

namespace sluice::group::test {

using ec = error_code;

inline bytes to_bytes(std::string_view s) {
    return bytes(s.begin(), s.end());
}

// Consumer group records (KIP-848) kept in memory, each write durable at once; writes of
// classic groups are counted and otherwise ignored.
class consumer_writer final : public state_writer {
  public:
    void write(group_write w, done_fn done) override {
        if (w.op == group_write::kind::erase_consumer)
            stored.erase(w.consumer.group_id);
        else if (w.op == group_write::kind::put_consumer)
            stored[w.consumer.group_id] = w.consumer;
        ++writes;
        done({});
    }
    std::map<std::string, stored_consumer_group> stored;
    size_t writes = 0;
};

// Steady and wall time both move only when a test says so. Neither starts at 0: a real
// monotonic clock never reads 0, and the coordinator uses 0 for "no deadline armed".
struct fake_clock {
    int64_t steady = 1'000'000;
    int64_t wall = 1'700'000'000'000;  // November 2023
    clock_source source() {
        return {[this] { return steady; }, [this] { return wall; }};
    }
};

// What a callback received; a parked callback leaves it empty until it is answered.
template <typename R>
class reply {
  public:
    std::function<void(const R&)> callback() const {
        auto got = _got;
        return [got](const R& r) { got->push_back(r); };
    }
    bool ready() const { return !_got->empty(); }
    size_t count() const { return _got->size(); }
    const R& operator*() const { return _got->back(); }
    const R* operator->() const { return &_got->back(); }

  private:
    std::shared_ptr<std::vector<R>> _got = std::make_shared<std::vector<R>>();
};
using join_reply = reply<join_result>;
using sync_reply = reply<sync_result>;

// ConsumerProtocolSubscription v0: int16 version, int32 topic count, each topic an int16
// length and its bytes, then int32 user_data length (-1: null).
inline void put16(bytes& b, int16_t v) {
    b.push_back(static_cast<uint8_t>(v >> 8));
    b.push_back(static_cast<uint8_t>(v));
}
inline void put32(bytes& b, int32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) b.push_back(static_cast<uint8_t>(v >> shift));
}
inline void put_string(bytes& b, std::string_view s) {
    put16(b, static_cast<int16_t>(s.size()));
    b.insert(b.end(), s.begin(), s.end());
}
inline bytes subscription_v0(const std::vector<std::string>& topics) {
    bytes b;
    put16(b, 0);
    put32(b, static_cast<int32_t>(topics.size()));
    for (const auto& t : topics) put_string(b, t);
    put32(b, -1);
    return b;
}
// v1 appends owned_partitions: an array of {topic, array of int32 partition}.
inline bytes subscription_v1(
    const std::vector<std::string>& topics, std::string_view user_data,
    const std::vector<std::pair<std::string, std::vector<int32_t>>>& owned) {
    bytes b;
    put16(b, 1);
    put32(b, static_cast<int32_t>(topics.size()));
    for (const auto& t : topics) put_string(b, t);
    put32(b, static_cast<int32_t>(user_data.size()));
    b.insert(b.end(), user_data.begin(), user_data.end());
    put32(b, static_cast<int32_t>(owned.size()));
    for (const auto& [topic, partitions] : owned) {
        put_string(b, topic);
        put32(b, static_cast<int32_t>(partitions.size()));
        for (int32_t p : partitions) put32(b, p);
    }
    return b;
}

class group_test : public ::testing::Test {
  protected:
    // The coordinator logs every rebalance at info; failures are easier to read without.
    group_test() { set_log_level(log_level::warn); }
    ~group_test() override { set_log_level(log_level::info); }

    static constexpr int32_t session_ms = 10'000;
    static constexpr int32_t rebalance_ms = 30'000;

    // Tests adjust cfg before their first use of co().
    config cfg;
    fake_clock clock;

    coordinator& co() {
        if (!_co) _co = std::make_unique<coordinator>(cfg, clock.source());
        return *_co;
    }
    // Time passes, then the broker's timer loop runs.
    void advance(int64_t ms) {
        clock.steady += ms;
        clock.wall += ms;
        co().poll();
    }

    static std::vector<protocol_entry> range_protocol(std::string_view metadata = "meta") {
        return {{"range", to_bytes(metadata)}};
    }
    // A JoinGroup as a v4+ consumer sends it.
    static join_request join_req(const std::string& group, const std::string& member_id = {},
                                 std::vector<protocol_entry> protocols = range_protocol()) {
        join_request r;
        r.group_id = group;
        r.member_id = member_id;
        r.client_id = "client";
        r.client_host = "/127.0.0.1";
        r.session_timeout_ms = session_ms;
        r.rebalance_timeout_ms = rebalance_ms;
        r.protocol_type = "consumer";
        r.protocols = std::move(protocols);
        r.require_known_member_id = true;
        return r;
    }
    join_reply join(join_request req) {
        join_reply r;
        co().join(std::move(req), r.callback());
        return r;
    }
    // The first JoinGroup of a dynamic member: answered MEMBER_ID_REQUIRED with its id.
    std::string new_member_id(const std::string& group,
                              std::vector<protocol_entry> protocols = range_protocol()) {
        auto r = join(join_req(group, {}, std::move(protocols)));
        EXPECT_TRUE(r.ready());
        if (!r.ready()) return {};
        EXPECT_EQ(r->error, ec::member_id_required);
        return r->member_id;
    }
    sync_reply sync(const std::string& group, const std::string& member_id, int32_t generation,
                    std::vector<std::pair<std::string, bytes>> assignments = {},
                    std::optional<std::string> instance_id = std::nullopt) {
        sync_request req;
        req.group_id = group;
        req.member_id = member_id;
        req.instance_id = std::move(instance_id);
        req.generation = generation;
        req.protocol_type = "consumer";
        req.assignments = std::move(assignments);
        sync_reply r;
        co().sync(std::move(req), r.callback());
        return r;
    }
    error_code heartbeat(const std::string& group, const std::string& member_id, int32_t generation,
                         std::optional<std::string> instance_id = std::nullopt) {
        return co().heartbeat(group, {member_id, std::move(instance_id), generation});
    }

    // Runs the clock until every reply has arrived (the initial delay, extended once per
    // round of arrivals); fails the test if they have not within the rebalance timeout.
    void await_all(const std::vector<join_reply>& replies) {
        auto done = [&] {
            return std::all_of(replies.begin(), replies.end(),
                               [](const join_reply& r) { return r.ready(); });
        };
        co().poll();
        const int32_t step = std::max(1, cfg.initial_rebalance_delay_ms);
        for (int64_t waited = 0; !done() && waited <= rebalance_ms; waited += step) advance(step);
        ASSERT_TRUE(done());
    }

    struct member {
        std::string id;
        int32_t generation = -1;
        std::optional<std::string> instance_id;
        join_result joined;
    };
    // A new group whose members (dynamic, or static when instance ids are given) complete
    // their first join phase together: the group is left in CompletingRebalance. The
    // leader is members[0].
    std::vector<member> joined_group(const std::string& group, size_t n,
                                     const std::vector<std::string>& instance_ids = {}) {
        std::vector<join_reply> replies;
        for (size_t i = 0; i < n; ++i) {
            if (i < instance_ids.size()) {
                auto req = join_req(group, {}, range_protocol("meta-" + std::to_string(i)));
                req.instance_id = instance_ids[i];
                replies.push_back(join(std::move(req)));
            } else {
                std::string id = new_member_id(group);
                replies.push_back(
                    join(join_req(group, id, range_protocol("meta-" + std::to_string(i)))));
            }
        }
        await_all(replies);
        std::vector<member> out;
        for (size_t i = 0; i < n; ++i) {
            const join_result& r = *replies[i];
            EXPECT_EQ(r.error, ec::none);
            out.push_back({r.member_id, r.generation,
                           i < instance_ids.size() ? std::optional(instance_ids[i]) : std::nullopt,
                           r});
        }
        EXPECT_EQ(out.front().id, out.front().joined.leader);
        return out;
    }
    // As joined_group, then every member syncs: member i is assigned "assignment-i".
    std::vector<member> stable_group(const std::string& group, size_t n,
                                     const std::vector<std::string>& instance_ids = {}) {
        auto members = joined_group(group, n, instance_ids);
        std::vector<std::pair<std::string, bytes>> assignments;
        for (size_t i = 0; i < members.size(); ++i)
            assignments.push_back({members[i].id, assignment(i)});
        auto leader =
            sync(group, members[0].id, members[0].generation, assignments, members[0].instance_id);
        EXPECT_TRUE(leader.ready());
        for (size_t i = 1; i < members.size(); ++i) {
            auto r = sync(group, members[i].id, members[i].generation, {}, members[i].instance_id);
            EXPECT_TRUE(r.ready());
            EXPECT_EQ(r->error, ec::none);
        }
        EXPECT_EQ(state(group), group_state::stable);
        return members;
    }
    static bytes assignment(size_t i) { return to_bytes("assignment-" + std::to_string(i)); }

    // A broker restart: a new coordinator on the same clock, which setup fills (restores
    // groups into) before the test goes on.
    void restart(const std::function<void(coordinator&)>& setup) {
        _co = std::make_unique<coordinator>(cfg, clock.source());
        setup(*_co);
    }

    group_state state(const std::string& group) {
        auto d = co().describe(group);
        return d ? d->state : group_state::dead;
    }
    std::vector<std::string> member_ids(const std::string& group) {
        std::vector<std::string> ids;
        if (auto d = co().describe(group))
            for (const auto& m : d->members) ids.push_back(m.member_id);
        std::sort(ids.begin(), ids.end());
        return ids;
    }
    static std::vector<std::string> sorted(std::vector<std::string> v) {
        std::sort(v.begin(), v.end());
        return v;
    }
    bool listed(const std::string& group) {
        auto l = co().list();
        return std::any_of(l.begin(), l.end(), [&](const auto& g) { return g.group_id == group; });
    }

  private:
    std::unique_ptr<coordinator> _co;
};

}  // namespace sluice::group::test

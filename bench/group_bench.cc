// sluice-groupbench: how long a consumer-group rebalance takes at the coordinator.
//
// N members (one thread and one connection each, speaking the protocol through
// Sluice's own codecs) form a group of protocol type "consumer". Then, for each round,
// the leader rejoins (which starts a rebalance), the followers rejoin, the leader
// assigns and everyone syncs. A round's time runs from the moment the last member sends
// its JoinGroup to the moment the last member holds its SyncGroup assignment; client
// work in between is a few microseconds, so the figure is the broker's.
//
//   sluice-groupbench --bootstrap HOST:PORT [--members N] [--rounds R] [--group G]
//
// Run the broker with --group-initial-rebalance-delay-ms 0 so that forming the group
// does not wait; the rounds themselves never involve the initial delay.

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app/admin_client.h"
#include "bench_cli.h"
#include "protocol/error_code.h"
#include "protocol/messages/heartbeat.h"
#include "protocol/messages/join_group.h"
#include "protocol/messages/sync_group.h"

using namespace sluice;
using clk = std::chrono::steady_clock;

namespace {

struct options {
    std::string bootstrap = "127.0.0.1:9092";
    int members = 3;
    int rounds = 20;
    std::string group = "groupbench";
};

[[noreturn]] void die(const std::string& msg) {
    bench::die("sluice-groupbench", msg);
}

options parse(int argc, char** argv) {
    options o;
    bench::parse_flags("sluice-groupbench", argc, argv,
                       [&](const std::string& a, const std::string& v) {
                           if (a == "--bootstrap")
                               o.bootstrap = v;
                           else if (a == "--members")
                               o.members = std::stoi(v);
                           else if (a == "--rounds")
                               o.rounds = std::stoi(v);
                           else if (a == "--group")
                               o.group = v;
                           else
                               return false;
                           return true;
                       });
    if (o.members < 1 || o.rounds < 1) die("--members and --rounds must be at least 1");
    return o;
}

// A ConsumerProtocolSubscription v0 for one topic: the bytes a real consumer sends.
bytes subscription() {
    bytes b;
    protocol::writer w(b);
    w.fixed<int16_t>(0);
    w.fixed<int32_t>(1);
    w.fixed<int16_t>(5);
    for (char c : std::string("bench")) b.push_back(static_cast<uint8_t>(c));
    w.fixed<int32_t>(-1);
    return b;
}

constexpr int16_t join_version = 5, sync_version = 3, heartbeat_version = 3;

class member {
  public:
    member(const options& o, const net::host_port& addr) : _o(o) {
        if (auto r = _c.connect(addr); !r) die(r.err().message);
    }

    // Joins (or rejoins); returns the join response, retrying MEMBER_ID_REQUIRED.
    protocol::join_group_response join() {
        for (;;) {
            protocol::join_group_request req;
            req.group_id = _o.group;
            req.session_timeout_ms = 30000;
            req.rebalance_timeout_ms = 30000;
            req.member_id = _id;
            req.protocol_type = "consumer";
            req.protocols.push_back({"range", subscription()});
            auto r = _c.call<protocol::join_group_request, protocol::join_group_response>(
                protocol::api_key::join_group, join_version, req);
            if (!r) die(r.err().message);
            _id = r->member_id;
            if (r->error_code == static_cast<int16_t>(protocol::error_code::member_id_required))
                continue;
            if (r->error_code != 0) die("JoinGroup error " + std::to_string(r->error_code));
            _generation = r->generation_id;
            _leader = r->leader == _id;
            _last_join = *r;
            return *r;
        }
    }

    // SyncGroup; the leader assigns one made-up partition per member. Returns the
    // error code (REBALANCE_IN_PROGRESS while the group is still forming).
    int16_t sync() {
        protocol::sync_group_request req;
        req.group_id = _o.group;
        req.generation_id = _generation;
        req.member_id = _id;
        if (_leader) {
            int32_t p = 0;
            for (const auto& m : _last_join.members) {
                bytes a;
                protocol::writer w(a);
                w.fixed<int32_t>(p++);
                req.assignments.push_back({m.member_id, std::move(a)});
            }
        }
        auto r = _c.call<protocol::sync_group_request, protocol::sync_group_response>(
            protocol::api_key::sync_group, sync_version, req);
        if (!r) die(r.err().message);
        return r->error_code;
    }

    int16_t heartbeat() {
        protocol::heartbeat_request req{_o.group, _generation, _id, std::nullopt};
        auto r = _c.call<protocol::heartbeat_request, protocol::heartbeat_response>(
            protocol::api_key::heartbeat, heartbeat_version, req);
        if (!r) die(r.err().message);
        return r->error_code;
    }

    int32_t generation() const { return _generation; }
    bool leader() const { return _leader; }
    size_t members_seen() const { return _last_join.members.size(); }

  private:
    const options& _o;
    app::admin_client _c;
    std::string _id;
    int32_t _generation = -1;
    bool _leader = false;
    protocol::join_group_response _last_join;
};

}  // namespace

int main(int argc, char** argv) {
    options o = parse(argc, argv);
    auto addr = net::parse_host_port(o.bootstrap);
    if (!addr) die(addr.err().message);
    const int n = o.members;

    std::atomic<int32_t> full_generation{-1};  // a generation whose leader saw all n
    std::vector<int32_t> synced(static_cast<size_t>(n), -1);
    std::mutex mu;
    std::barrier sync_point(n);
    std::vector<clk::time_point> join_sent(static_cast<size_t>(n)),
        assigned(static_cast<size_t>(n));
    std::vector<double> rounds_ms;
    std::vector<bool> is_leader(static_cast<size_t>(n));

    auto formed = [&] {
        std::lock_guard lock(mu);
        int32_t g = full_generation.load();
        return g >= 0 &&
               std::all_of(synced.begin(), synced.end(), [g](int32_t s) { return s == g; });
    };

    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i) {
        threads.emplace_back([&, i] {
            member m(o, *addr);
            // Forming: join, sync, heartbeat; rejoin whenever the group rebalances, until
            // every member is in the one generation whose leader saw all n.
            bool need_join = true;
            while (!formed()) {
                if (need_join) {
                    m.join();
                    if (m.leader() && m.members_seen() == static_cast<size_t>(n))
                        full_generation = m.generation();
                    need_join = m.sync() != 0;
                    if (!need_join) {
                        std::lock_guard lock(mu);
                        synced[static_cast<size_t>(i)] = m.generation();
                    }
                    continue;
                }
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                if (m.heartbeat() != 0) need_join = true;
            }
            is_leader[static_cast<size_t>(i)] = m.leader();
            for (int r = 0; r < o.rounds; ++r) {
                sync_point.arrive_and_wait();
                // The leader's rejoin starts the rebalance; followers rejoin after it.
                if (!m.leader()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
                join_sent[static_cast<size_t>(i)] = clk::now();
                m.join();
                if (int16_t e = m.sync(); e != 0) die("SyncGroup error " + std::to_string(e));
                assigned[static_cast<size_t>(i)] = clk::now();
                sync_point.arrive_and_wait();
                if (i == 0) {
                    auto last_join = *std::max_element(join_sent.begin(), join_sent.end());
                    auto last_assigned = *std::max_element(assigned.begin(), assigned.end());
                    rounds_ms.push_back(
                        std::chrono::duration<double, std::milli>(last_assigned - last_join)
                            .count());
                }
            }
        });
    }
    for (auto& t : threads) t.join();
    std::sort(rounds_ms.begin(), rounds_ms.end());
    auto pct = [&](double q) {
        return rounds_ms[std::min(rounds_ms.size() - 1, static_cast<size_t>(q * rounds_ms.size()))];
    };
    std::printf("members=%d rounds=%d rebalance_ms: min=%.2f p50=%.2f p90=%.2f max=%.2f\n", n,
                o.rounds, rounds_ms.front(), pct(0.5), pct(0.9), rounds_ms.back());
    return 0;
}

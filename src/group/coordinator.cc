#include "group/coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "common/ascii.h"
#include "common/clock.h"
#include "common/logging.h"
#include "group/group_data.h"

namespace sluice::group {

std::string_view state_name(group_state s) {
    switch (s) {
        case group_state::empty:
            return "Empty";
        case group_state::preparing_rebalance:
            return "PreparingRebalance";
        case group_state::completing_rebalance:
            return "CompletingRebalance";
        case group_state::stable:
            return "Stable";
        case group_state::dead:
            return "Dead";
    }
    return "Dead";
}

std::optional<group_state> parse_state(std::string_view name) {
    for (auto s : {group_state::empty, group_state::preparing_rebalance,
                   group_state::completing_rebalance, group_state::stable, group_state::dead}) {
        if (iequals(state_name(s), name)) return s;
    }
    return std::nullopt;
}

int64_t steady_now_ms() {
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady::now().time_since_epoch()).count();
}

clock_source system_clocks() {
    return {steady_now_ms, [] { return now_ms(); }};
}

coordinator::coordinator(config cfg, clock_source clock)
    : _cfg(std::move(cfg)), _clock(std::move(clock)) {
    std::random_device rd;
    _id_state[0] = (uint64_t{rd()} << 32) | rd();
    _id_state[1] = (uint64_t{rd()} << 32) | rd();
}

coordinator::~coordinator() = default;

coordinator::group_data* coordinator::find(const std::string& id) const {
    auto it = _groups.find(id);
    return it == _groups.end() ? nullptr : it->second.get();
}

coordinator::group_data& coordinator::get_or_create(const std::string& id) {
    auto& slot = _groups[id];
    if (!slot) {
        slot = std::make_unique<group_data>();
        slot->id = id;
        slot->empty_since_ms = _clock.wall_ms();
    }
    return *slot;
}

bool coordinator::maybe_drop(group_data& g) {
    if (g.state != group_state::empty || !g.members.empty() || !g.pending.empty() ||
        !g.offsets.empty())
        return false;
    disarm(timer_kind::group, g, {}, g.deadline);
    unstore(g);
    _groups.erase(g.id);  // g is gone after this line
    return true;
}

size_t coordinator::drop_idle_groups() {
    std::vector<group_data*> idle;
    for (auto& [id, g] : _groups) idle.push_back(g.get());
    size_t dropped = 0;
    for (group_data* g : idle) dropped += maybe_drop(*g) ? 1 : 0;
    return dropped;
}

// Kafka's form: the client id, a dash and a random UUID.
std::string coordinator::new_member_id(const std::string& client_id) {
    // xorshift128+ seeded from the kernel: unique, not secret (ids fence, they do not
    // authenticate).
    auto next = [this] {
        uint64_t s1 = _id_state[0];
        const uint64_t s0 = _id_state[1];
        _id_state[0] = s0;
        s1 ^= s1 << 23;
        _id_state[1] = s1 ^ s0 ^ (s1 >> 17) ^ (s0 >> 26);
        return _id_state[1] + s0;
    };
    uint64_t a = next(), b = next();
    return fmt::format("{}-{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}", client_id, a >> 32,
                       (a >> 16) & 0xffff, a & 0xfff, ((b >> 48) & 0x3fff) | 0x8000,
                       b & 0xffffffffffffULL);
}

// --- timers ---

void coordinator::arm(timer_kind k, group_data& g, const std::string& member, int64_t& slot,
                      int64_t at) {
    _timers.arm(k, g.id, member, slot, at);
}

void coordinator::disarm(timer_kind k, const group_data& g, const std::string& member,
                         int64_t& slot) {
    _timers.disarm(k, g.id, member, slot);
}

std::optional<int64_t> coordinator::next_deadline() const {
    return _timers.next();
}

void coordinator::poll() {
    int64_t now = _clock.steady_ms();
    while (auto due = _timers.pop_due(now)) {
        const auto& k = *due;
        group_data* g = find(k.group);
        if (!g) continue;
        switch (k.kind) {
            case timer_kind::group:
                g->deadline = 0;
                on_group_deadline(*g);
                break;
            case timer_kind::member: {
                auto it = g->members.find(k.member);
                if (it == g->members.end()) break;
                it->second.deadline = 0;
                on_member_deadline(*g, k.member);
                break;
            }
            case timer_kind::pending: {
                auto it = g->pending.find(k.member);
                if (it == g->pending.end()) break;
                it->second = 0;
                on_pending_deadline(*g, k.member);
                break;
            }
        }
    }
}

void coordinator::shutdown() {
    for (auto& [id, g] : _groups) take_parked(*g).answer(error_code::not_coordinator);
}

coordinator::parked_calls coordinator::take_parked(group_data& g) {
    parked_calls out;
    for (auto& [mid, m] : g.members) {
        if (auto cb = std::exchange(m.awaiting_join, nullptr))
            out.joins.emplace_back(std::move(cb), mid);
        if (auto cb = std::exchange(m.awaiting_sync, nullptr)) out.syncs.push_back(std::move(cb));
    }
    return out;
}

void coordinator::parked_calls::answer(error_code e) {
    for (auto& [cb, mid] : joins) {
        join_result r;
        r.error = e;
        r.member_id = mid;
        cb(r);
    }
    for (auto& cb : syncs) {
        sync_result r;
        r.error = e;
        cb(r);
    }
}

void coordinator::forget(const std::string& group_id) {
    group_data* g = find(group_id);
    if (!g) return;
    for (auto& [mid, m] : g->members) disarm(timer_kind::member, *g, mid, m.deadline);
    for (auto& [mid, deadline] : g->pending) disarm(timer_kind::pending, *g, mid, deadline);
    disarm(timer_kind::group, *g, {}, g->deadline);
    auto parked = take_parked(*g);
    _groups.erase(group_id);
    // Answered after the group is gone, so a client retrying at once finds no stale state.
    parked.answer(error_code::not_coordinator);
}

// --- administration ---

std::vector<group_listing> coordinator::list() const {
    std::vector<group_listing> out;
    out.reserve(_groups.size());
    for (const auto& [id, g] : _groups)
        out.push_back({id, g->protocol_type.value_or(""), g->state});
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.group_id < b.group_id; });
    return out;
}

std::optional<group_description> coordinator::describe(const std::string& group_id) const {
    const group_data* g = find(group_id);
    if (!g) return std::nullopt;
    group_description d;
    d.group_id = g->id;
    d.state = g->state;
    d.generation = g->generation;
    d.protocol_type = g->protocol_type.value_or("");
    // Kafka names the protocol only once a generation is running.
    if (g->state == group_state::stable || g->state == group_state::completing_rebalance)
        d.protocol_name = g->protocol_name.value_or("");
    for (const auto& [mid, m] : g->members) {
        auto& md = d.members.emplace_back();
        md.member_id = mid;
        md.instance_id = m.instance_id;
        md.client_id = m.client_id;
        md.client_host = m.client_host;
        if (g->state == group_state::stable || g->state == group_state::completing_rebalance) {
            if (const auto* p = m.find_protocol(d.protocol_name)) md.metadata = p->metadata;
        }
        if (g->state == group_state::stable) md.assignment = m.assignment;
    }
    return d;
}

}  // namespace sluice::group

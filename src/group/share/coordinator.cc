#include "group/share/coordinator.h"

#include <algorithm>

#include "common/logging.h"
#include "group/group_configs.h"
#include "group/share/group_data.h"

namespace sluice::group::share {

coordinator::coordinator(config cfg, const consumer::topic_view& topics, clock_source clock)
    : _cfg(std::move(cfg)), _topics(topics), _clock(std::move(clock)) {}

coordinator::~coordinator() = default;

coordinator::group_data* coordinator::find(const std::string& id) const {
    auto it = _groups.find(id);
    return it == _groups.end() ? nullptr : it->second.get();
}

config coordinator::settings(const std::string& group) const {
    return _group_configs ? _group_configs->share_settings(group, _cfg) : _cfg;
}

void coordinator::restore(stored_share_partition s) {
    _groups.try_emplace(s.group, std::make_unique<group_data>(group_data{s.group}));
    _partitions[{s.group, s.partition}] = std::move(s.state);
}

void coordinator::forget(const std::string& group) {
    auto it = _groups.find(group);
    if (it == _groups.end()) return;
    log_info("group", "share group {}: {} members dropped (coordinated elsewhere now)", group,
             it->second->members.size());
    _groups.erase(it);
}

bool coordinator::is_share_group(const std::string& group_id) const {
    return find(group_id) != nullptr;
}

std::map<std::string, int32_t> coordinator::subscribed_sizes(const group_data& g) const {
    std::map<std::string, int32_t> out;
    for (const auto& [id, m] : g.members)
        for (const auto& t : m.subscribed)
            if (auto n = _topics.partitions(t)) out[t] = *n;
    return out;
}

// Kafka's simple assignor for share groups: every partition of a subscribed topic goes
// to at least one of its subscribers. With fewer subscribers than partitions they are
// dealt out in turn; with more, each subscriber gets one partition and several share
// it, so that nobody idles.
void coordinator::assign(group_data& g) {
    for (auto& [id, m] : g.members) m.assigned.clear();
    for (const auto& [topic, n] : g.sizes) {
        std::vector<member_data*> subs;
        for (auto& [id, m] : g.members)
            if (std::binary_search(m.subscribed.begin(), m.subscribed.end(), topic))
                subs.push_back(&m);
        if (subs.empty() || n <= 0) continue;
        const auto count = static_cast<int32_t>(subs.size());
        if (n >= count) {
            for (int32_t p = 0; p < n; ++p) subs[p % count]->assigned[topic].insert(p);
        } else {
            for (int32_t i = 0; i < count; ++i) subs[i]->assigned[topic].insert(i % n);
        }
    }
    g.assignment_epoch = g.epoch;
}

void coordinator::remove_member(group_data& g, const std::string& member_id, const char* reason,
                                std::function<void()> done) {
    g.members.erase(member_id);  // member_id is the caller's, not the map's key
    ++g.epoch;
    g.sizes = subscribed_sizes(g);
    assign(g);
    log_info("group", "share group {}: member {} removed ({}), epoch {}", g.id, member_id, reason,
             g.epoch);
    // Behind the member's own share-partition work (the runner's key is the member's).
    _run(
        g.id, member_id, [w = work(g.id), member_id]() mutable { w.release_all(member_id); },
        std::move(done));
}

void coordinator::expire_members(int64_t now) {
    for (auto& [id, g] : _groups) {
        std::vector<std::string> gone;
        for (const auto& [mid, m] : g->members)
            if (now - m.last_seen_ms > settings(id).session_timeout_ms) gone.push_back(mid);
        for (const auto& mid : gone) remove_member(*g, mid, "session timed out");
    }
}

void coordinator::heartbeat(heartbeat_request req, std::function<void(heartbeat_result)> done) {
    heartbeat_result r;
    const int64_t now = _clock.steady_ms();
    expire_members(now);
    auto fail = [&](error_code e, std::string msg) {
        r.error = e;
        r.message = std::move(msg);
        done(std::move(r));
    };
    if (req.group_id.empty()) return fail(error_code::invalid_group_id, "the group id is empty");
    if (req.member_id.empty()) return fail(error_code::invalid_request, "the member id is empty");
    // Kafka's throwIfShareGroupHeartbeatRequestIsInvalid: -1 leaves, below is malformed.
    if (req.member_epoch < -1) return fail(error_code::invalid_request, "MemberEpoch is invalid.");
    if (!find(req.group_id) && _other && _other(req.group_id))
        return fail(error_code::group_id_not_found,
                    "group " + req.group_id + " is not a share group");
    auto& slot = _groups[req.group_id];
    if (!slot) slot = std::make_unique<group_data>(group_data{req.group_id});
    group_data& g = *slot;
    r.member_id = req.member_id;
    r.heartbeat_interval_ms = settings(req.group_id).heartbeat_interval_ms;
    auto it = g.members.find(req.member_id);
    if (req.member_epoch == -1) {
        r.member_epoch = -1;
        if (it == g.members.end()) return done(std::move(r));
        // Answered once what it held is given back, as when it was released at once.
        return remove_member(g, req.member_id, "left",
                             [done = std::move(done), r = std::move(r)]() mutable { done(r); });
    }
    if (req.member_epoch == 0) {
        if (!req.subscribed_topic_names || req.subscribed_topic_names->empty())
            return fail(error_code::invalid_request, "a joining member subscribes to topics");
        if (it == g.members.end()) {
            it = g.members.emplace(req.member_id, member_data{req.member_id}).first;
            ++g.epoch;
        }
        it->second.epoch = 0;
    } else if (it == g.members.end()) {
        return fail(error_code::unknown_member_id, "no such member in the share group");
    } else if (req.member_epoch != it->second.epoch) {
        return fail(error_code::fenced_member_epoch, "the member epoch is not the member's");
    }
    member_data& m = it->second;
    m.last_seen_ms = now;
    m.client_id = req.client_id;
    m.client_host = req.client_host;
    if (req.rack_id) m.rack_id = req.rack_id;
    if (req.subscribed_topic_names) {
        auto subs = *req.subscribed_topic_names;
        std::sort(subs.begin(), subs.end());
        subs.erase(std::unique(subs.begin(), subs.end()), subs.end());
        if (subs != m.subscribed) {
            m.subscribed = std::move(subs);
            if (m.epoch != 0) ++g.epoch;
        }
    }
    // A subscribed topic created, deleted or grown moves the epoch as well.
    if (auto sizes = subscribed_sizes(g); sizes != g.sizes) {
        g.sizes = std::move(sizes);
        if (g.assignment_epoch == g.epoch) ++g.epoch;
    }
    if (g.assignment_epoch != g.epoch) assign(g);
    if (m.epoch != g.epoch) {
        m.epoch = g.epoch;
        r.assignment = m.assigned;
    }
    r.member_epoch = m.epoch;
    done(std::move(r));
}

std::vector<std::string> coordinator::list() const {
    std::vector<std::string> out;
    for (const auto& [id, g] : _groups) out.push_back(id);
    return out;
}

std::optional<group_description> coordinator::describe(const std::string& group_id) {
    expire_members(_clock.steady_ms());
    const group_data* g = find(group_id);
    if (!g) return std::nullopt;
    group_description d{
        g->id, g->members.empty() ? "Empty" : "Stable", g->epoch, g->assignment_epoch, {}};
    for (const auto& [id, m] : g->members)
        d.members.push_back(
            {m.id, m.rack_id, m.epoch, m.client_id, m.client_host, m.subscribed, m.assigned});
    return d;
}

void coordinator::partitions(std::function<void(std::vector<partition_description>)> done) {
    auto out = std::make_shared<std::vector<partition_description>>();
    auto job = [w = work(""), out]() mutable {
        for (const auto& [group, p, sp] : w.windows()) {
            size_t in_flight = 0;
            for (const auto& [off, r] : sp.records())
                if (r.state == record_state::available || r.state == record_state::acquired)
                    ++in_flight;
            out->push_back({group, p, sp.start(), sp.end(), sp.acquired_count(), in_flight});
        }
    };
    _run("", "", std::move(job), [out, done = std::move(done)] { done(std::move(*out)); });
}

session_result coordinator::use_session(const std::string& group, const std::string& member,
                                        int32_t epoch, const std::vector<tp>& added,
                                        const std::vector<tp>& forgotten) {
    session_result r;
    if (member.empty()) {
        r.error = error_code::unknown_member_id;
        return r;
    }
    const auto key = std::make_pair(group, member);
    auto it = _sessions.find(key);
    if (epoch == 0) {
        it = _sessions.insert_or_assign(key, share_session{}).first;
    } else if (it == _sessions.end()) {
        r.error = error_code::share_session_not_found;
        return r;
    } else if (epoch != -1 && epoch != it->second.next_epoch) {
        r.error = error_code::invalid_share_session_epoch;
        return r;
    }
    share_session& s = it->second;
    if (epoch != -1) s.next_epoch = epoch == INT32_MAX ? 1 : epoch + 1;
    s.partitions.insert(added.begin(), added.end());
    for (const auto& p : forgotten) s.partitions.erase(p);
    r.partitions.assign(s.partitions.begin(), s.partitions.end());
    return r;
}

std::vector<tp> coordinator::end_session(const std::string& group, const std::string& member) {
    // Shared mode: what the member acquired here is in this broker's session partitions
    // (it closes a session at every broker it fetched from).
    std::vector<tp> parts;
    if (auto it = _sessions.find({group, member}); it != _sessions.end() && shared_store())
        parts.assign(it->second.partitions.begin(), it->second.partitions.end());
    _sessions.erase({group, member});
    if (shared_store()) return parts;
    for (const auto& w : local_windows(group)) parts.push_back(w.partition);
    return parts;
}

partition_work coordinator::work(const std::string& group) {
    return partition_work(shared_store() ? nullptr : this, _store, group, settings(group), _clock,
                          find(group) != nullptr);
}

std::vector<stored_share_partition> coordinator::local_windows(const std::string& group) const {
    std::vector<stored_share_partition> out;
    auto it = group.empty() ? _partitions.begin() : _partitions.lower_bound({group, tp{}});
    for (; it != _partitions.end() && (group.empty() || it->first.first == group); ++it)
        out.push_back({it->first.first, it->first.second, it->second});
    return out;
}

result<void> partition_store::update(const std::string&, const tp&, const update_fn&) {
    return error{errc::unsupported, "this share-partition store is changed through save()"};
}

}  // namespace sluice::group::share

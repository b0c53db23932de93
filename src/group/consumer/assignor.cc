#include "group/consumer/assignor.h"

#include <algorithm>
#include <limits>
#include <utility>

namespace sluice::group::consumer {
namespace {

size_t count(const partition_map& m) {
    size_t n = 0;
    for (const auto& [t, ps] : m) n += ps.size();
    return n;
}

// Per topic, members subscribed to it in member-id order; the first P % M get one more.
target_assignment assign_range(const std::vector<assignor_member>& members,
                               const topic_sizes& topics) {
    target_assignment out;
    for (const auto& m : members) out[m.member_id];
    for (const auto& [topic, partitions] : topics) {
        std::vector<const assignor_member*> subs;
        for (const auto& m : members)
            if (m.topics.count(topic)) subs.push_back(&m);
        if (subs.empty()) continue;
        std::sort(subs.begin(), subs.end(),
                  [](const auto* a, const auto* b) { return a->member_id < b->member_id; });
        const auto n = static_cast<int32_t>(subs.size());
        int32_t next = 0;
        for (int32_t i = 0; i < n; ++i) {
            int32_t share = partitions / n + (i < partitions % n ? 1 : 0);
            for (int32_t k = 0; k < share; ++k) out[subs[i]->member_id][topic].insert(next++);
        }
    }
    return out;
}

// Keeps each member's previous partitions that are still valid, hands out the rest to
// the least loaded eligible member, then moves partitions from the most to the least
// loaded eligible member until no member has two more than another that could take one.
target_assignment assign_uniform(const std::vector<assignor_member>& members,
                                 const topic_sizes& topics) {
    target_assignment out;
    std::map<std::string, const assignor_member*> by_id;
    for (const auto& m : members) {
        out[m.member_id];
        by_id[m.member_id] = &m;
    }
    if (members.empty()) return out;
    std::map<std::pair<std::string, int32_t>, std::string> owner;
    // When every member subscribes to the same topics, each keeps at most its quota of
    // its previous partitions, the lowest numbered first (as Kafka's homogeneous uniform
    // assignor): P / M each, one more for the first P % M members in member-id order.
    bool homogeneous = true;
    size_t total = 0;
    for (const auto& m : members) homogeneous = homogeneous && m.topics == members.front().topics;
    for (const auto& t : members.front().topics)
        if (auto it = topics.find(t); it != topics.end()) total += static_cast<size_t>(it->second);
    size_t extra = total % members.size();
    // Sticky part, in member-id order so a partition two members claim goes to one.
    for (const auto& [id, m] : by_id) {
        size_t quota = total / members.size() + (extra > 0 ? 1 : 0);
        if (extra > 0) --extra;
        if (!homogeneous) quota = std::numeric_limits<size_t>::max();
        for (const auto& [topic, ps] : m->previous) {
            auto size = topics.find(topic);
            if (size == topics.end() || !m->topics.count(topic)) continue;
            for (int32_t p : ps) {
                if (p >= size->second || owner.count({topic, p})) continue;
                if (count(out[id]) >= quota) break;
                owner[{topic, p}] = id;
                out[id][topic].insert(p);
            }
        }
    }
    auto load = [&](const std::string& id) { return count(out[id]); };
    auto eligible = [&](const std::string& topic) {
        std::vector<std::string> ids;
        for (const auto& [id, m] : by_id)
            if (m->topics.count(topic)) ids.push_back(id);
        return ids;
    };
    for (const auto& [topic, partitions] : topics) {
        auto ids = eligible(topic);
        if (ids.empty()) continue;
        for (int32_t p = 0; p < partitions; ++p) {
            if (owner.count({topic, p})) continue;
            auto best =
                *std::min_element(ids.begin(), ids.end(),
                                  [&](const auto& a, const auto& b) { return load(a) < load(b); });
            owner[{topic, p}] = best;
            out[best][topic].insert(p);
        }
    }
    // Balance: each move lowers the spread, so this ends.
    for (bool moved = true; moved;) {
        moved = false;
        for (auto& [tp, from] : owner) {
            const auto& [topic, p] = tp;
            size_t from_load = load(from);
            std::string to;
            size_t to_load = from_load;
            for (const auto& id : eligible(topic)) {
                size_t l = load(id);
                if (l + 1 < from_load && l < to_load) {
                    to = id;
                    to_load = l;
                }
            }
            if (to.empty()) continue;
            auto& src = out[from][topic];
            src.erase(p);
            if (src.empty()) out[from].erase(topic);
            out[to][topic].insert(p);
            from = to;
            moved = true;
        }
    }
    return out;
}

}  // namespace

bool is_known_assignor(std::string_view name) {
    return name == uniform_assignor || name == range_assignor;
}

target_assignment assign(std::string_view assignor, const std::vector<assignor_member>& members,
                         const topic_sizes& topics) {
    if (assignor == range_assignor) return assign_range(members, topics);
    return assign_uniform(members, topics);
}

}  // namespace sluice::group::consumer

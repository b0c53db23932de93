// The share group offset APIs of share::coordinator (KIP-932): what
// DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets and
// DeleteGroups do to a share group's share-partitions.

#include "common/logging.h"
#include "group/share/coordinator.h"
#include "group/share/group_data.h"

namespace sluice::group::share {

std::optional<std::vector<partition_offset>> coordinator::offsets(const std::string& group) {
    const std::vector<tp> parts = group_partitions(group);
    // Shared mode: a group whose members are gone (or were at another coordinator) is
    // known by its stored share-partitions.
    if (!find(group) && (parts.empty() || !shared_store())) return std::nullopt;
    std::vector<partition_offset> out;
    const int64_t now = _clock.steady_ms();
    const partition_limits lim = limits(group);
    for (const auto& p : parts) {
        // An expired lock is available again: the start offset is what a fetch now sees.
        std::optional<share_partition> seen;
        (void)update(group, p, [&](std::optional<share_partition>& sp) {
            if (!sp) return false;
            const bool changed = sp->settle(now, 0, lim);
            seen = sp;
            return changed;
        });
        if (!seen) continue;
        int64_t done = 0;
        for (const auto& [off, r] : seen->records())
            if (r.state == record_state::acknowledged || r.state == record_state::archived) ++done;
        out.push_back({p, seen->start(), done});
    }
    return out;
}

error_code coordinator::check_empty(const std::string& group, bool create) {
    expire_members(_clock.steady_ms());
    const group_data* g = find(group);
    if (!g) {
        if (_other && _other(group)) return error_code::group_id_not_found;
        if (create || (shared_store() && !group_partitions(group).empty())) return error_code::none;
        return error_code::group_id_not_found;
    }
    return g->members.empty() ? error_code::none : error_code::non_empty_group;
}

error_code coordinator::alter_offset(const std::string& group, const tp& p, int64_t start) {
    if (auto e = check_empty(group, true); e != error_code::none) return e;
    share_partition fresh(start, start, {});
    if (auto e = save(group, p, fresh); e != error_code::none) return e;
    _groups.try_emplace(group, std::make_unique<group_data>(group_data{group}));
    if (!shared_store()) _partitions[{group, p}] = std::move(fresh);
    log_info("group", "share group {}: {}-{} starts at offset {}", group, p.first, p.second, start);
    return error_code::none;
}

result<bool> coordinator::delete_offsets(const std::string& group, const std::string& topic) {
    std::vector<tp> parts = group_partitions(group);
    std::erase_if(parts, [&](const tp& p) { return p.first != topic; });
    if (parts.empty()) return false;
    if (auto r = erase(group, parts); !r) return r.err();
    for (const auto& p : parts) _partitions.erase({group, p});
    log_info("group", "share group {}: offsets of {} deleted", group, topic);
    return true;
}

error_code coordinator::delete_group(const std::string& group) {
    if (auto e = check_empty(group, false); e != error_code::none) return e;
    const std::vector<tp> parts = group_partitions(group);
    if (!parts.empty() && !erase(group, parts)) return error_code::kafka_storage_error;
    for (const auto& p : parts) _partitions.erase({group, p});
    for (auto it = _sessions.begin(); it != _sessions.end();)
        it = it->first.first == group ? _sessions.erase(it) : std::next(it);
    _groups.erase(group);
    log_info("group", "share group {} deleted", group);
    return error_code::none;
}

result<void> coordinator::erase(const std::string& group, const std::vector<tp>& parts) {
    if (!_store) return {};
    auto r = _store->erase(group, parts);
    if (!r) log_warn("group", "share group {}: state not erased: {}", group, r.err().message);
    return r;
}

}  // namespace sluice::group::share

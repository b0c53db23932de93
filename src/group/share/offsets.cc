// The share group offset APIs (KIP-932): what DescribeShareGroupOffsets,
// AlterShareGroupOffsets, DeleteShareGroupOffsets and DeleteGroups do to a share group's
// share-partitions. The coordinator checks the group's membership on its thread; the
// share-partitions are read and changed by partition_work in a job of the runner's
// (under the key (group, ""), so one group's offset changes apply in arrival order).

#include <algorithm>
#include <memory>

#include "common/logging.h"
#include "group/share/coordinator.h"
#include "group/share/group_data.h"

namespace sluice::group::share {

std::optional<std::vector<partition_offset>> partition_work::offsets() {
    const std::vector<tp> parts = partitions();
    // Shared mode: a group whose members are gone (or were at another coordinator) is
    // known by its stored share-partitions.
    if (!_known && parts.empty()) return std::nullopt;
    std::vector<partition_offset> out;
    const int64_t now = _clock.steady_ms();
    for (const auto& p : parts) {
        // An expired lock is available again: the start offset is what a fetch now sees.
        std::optional<share_partition> seen;
        (void)update(p, [&](std::optional<share_partition>& sp) {
            if (!sp) return false;
            const bool changed = sp->settle(now, 0, _limits);
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

error_code partition_work::alter_offset(const tp& p, int64_t start) {
    if (auto e = save(p, share_partition(start, start, {})); e != error_code::none) return e;
    log_info("group", "share group {}: {}-{} starts at offset {}", _group, p.first, p.second,
             start);
    return error_code::none;
}

error_code partition_work::delete_offsets(const std::string& topic) {
    std::vector<tp> parts = partitions();
    std::erase_if(parts, [&](const tp& p) { return p.first != topic; });
    if (parts.empty()) return error_code::unknown_topic_or_partition;
    if (auto e = erase(parts); e != error_code::none) return e;
    log_info("group", "share group {}: offsets of {} deleted", _group, topic);
    return error_code::none;
}

error_code partition_work::erase_all() {
    const std::vector<tp> parts = partitions();
    return parts.empty() ? error_code::none : erase(parts);
}

void coordinator::offsets(const std::string& group,
                          std::function<void(std::optional<std::vector<partition_offset>>)> done) {
    auto out = std::make_shared<std::optional<std::vector<partition_offset>>>();
    _run(
        group, "", [w = work(group), out]() mutable { *out = w.offsets(); },
        [out, done = std::move(done)] { done(std::move(*out)); });
}

error_code coordinator::check_empty(const std::string& group, bool create) {
    expire_members(_clock.steady_ms());
    const group_data* g = find(group);
    if (!g) {
        if (_other && _other(group)) return error_code::group_id_not_found;
        // Shared mode: the work looks for the group's share-partitions in the store.
        if (create || shared_store()) return error_code::none;
        return error_code::group_id_not_found;
    }
    return g->members.empty() ? error_code::none : error_code::non_empty_group;
}

namespace {

// What a change of a group's offsets found, filled in by its job.
struct change_outcome {
    error_code group = error_code::none;
    std::vector<error_code> each;
};

}  // namespace

void coordinator::alter_offsets(const std::string& group,
                                std::vector<std::pair<tp, int64_t>> starts, changes_done done) {
    if (auto e = check_empty(group, true); e != error_code::none) return done(e, {});
    auto out = std::make_shared<change_outcome>();
    auto job = [w = work(group), starts = std::move(starts), out]() mutable {
        for (const auto& [p, start] : starts) out->each.push_back(w.alter_offset(p, start));
    };
    _run(group, "", std::move(job), [this, group, out, done = std::move(done)] {
        if (std::count(out->each.begin(), out->each.end(), error_code::none) > 0)
            _groups.try_emplace(group, std::make_unique<group_data>(group_data{group}));
        done(out->group, std::move(out->each));
    });
}

void coordinator::delete_offsets(const std::string& group, std::vector<std::string> topics,
                                 changes_done done) {
    if (auto e = check_empty(group, false); e != error_code::none) return done(e, {});
    auto out = std::make_shared<change_outcome>();
    auto job = [w = work(group), topics = std::move(topics), out]() mutable {
        if (!w.exists()) {
            out->group = error_code::group_id_not_found;
            return;
        }
        for (const auto& t : topics) out->each.push_back(w.delete_offsets(t));
    };
    _run(group, "", std::move(job),
         [out, done = std::move(done)] { done(out->group, std::move(out->each)); });
}

void coordinator::delete_group(const std::string& group, std::function<void(error_code)> done) {
    if (auto e = check_empty(group, false); e != error_code::none) return done(e);
    auto out = std::make_shared<error_code>(error_code::none);
    auto job = [w = work(group), out]() mutable {
        *out = w.exists() ? w.erase_all() : error_code::group_id_not_found;
    };
    _run(group, "", std::move(job), [this, group, out, done = std::move(done)] {
        // A member that joined meanwhile keeps the group (its state starts afresh, as if
        // it had joined just after).
        const group_data* g = find(group);
        if (*out == error_code::none && (!g || g->members.empty())) {
            for (auto it = _sessions.begin(); it != _sessions.end();)
                it = it->first.first == group ? _sessions.erase(it) : std::next(it);
            _groups.erase(group);
            log_info("group", "share group {} deleted", group);
        }
        done(*out);
    });
}

}  // namespace sluice::group::share

// share::partition_work: what ShareFetch and ShareAcknowledge do to a group's
// share-partitions, apart from the coordinator's membership and sessions so that shared
// mode can run it off the coordinator's thread.

#include "common/logging.h"
#include "group/share/coordinator.h"

namespace sluice::group::share {

partition_work::partition_work(coordinator* owner, std::shared_ptr<partition_store> store,
                               std::string group, const config& settings, clock_source clock,
                               bool known)
    : _owner(owner),
      _store(std::move(store)),
      _group(std::move(group)),
      _earliest(settings.auto_offset_reset == "earliest"),
      _limits{settings.record_lock_duration_ms, settings.delivery_count_limit,
              settings.partition_max_record_locks},
      _clock(std::move(clock)),
      _known(known) {}

error_code partition_work::update(const tp& p, const partition_store::update_fn& fn) {
    if (!_owner) {
        if (auto r = _store->update(_group, p, fn); !r) {
            log_warn("group", "share group {}: state of {}-{} not changed: {}", _group, p.first,
                     p.second, r.err().message);
            return error_code::kafka_storage_error;
        }
        return error_code::none;
    }
    // A copy, so that nothing is handed out that is not on disk.
    auto& held = _owner->_partitions;
    auto it = held.find({_group, p});
    std::optional<share_partition> sp;
    if (it != held.end()) sp = it->second;
    if (!fn(sp) || !sp) return error_code::none;
    return save(p, *sp);
}

error_code partition_work::save(const tp& p, const share_partition& s) {
    if (_store)
        if (auto r = _store->save(_group, p, s); !r) {
            log_warn("group", "share group {}: state of {}-{} not saved: {}", _group, p.first,
                     p.second, r.err().message);
            return error_code::kafka_storage_error;
        }
    if (_owner) _owner->_partitions[{_group, p}] = s;
    return error_code::none;
}

error_code partition_work::erase(const std::vector<tp>& parts) {
    if (_store)
        if (auto r = _store->erase(_group, parts); !r) {
            log_warn("group", "share group {}: state not erased: {}", _group, r.err().message);
            return error_code::kafka_storage_error;
        }
    if (_owner)
        for (const auto& p : parts) _owner->_partitions.erase({_group, p});
    return error_code::none;
}

std::vector<stored_share_partition> partition_work::windows() {
    if (_owner) return _owner->local_windows(_group);
    if (!_store) return {};
    auto rows = _store->load(_group);
    if (!rows) {
        log_warn("group", "share group {}: share-partitions not read: {}", _group,
                 rows.err().message);
        return {};
    }
    return std::move(*rows);
}

std::vector<tp> partition_work::partitions() {
    std::vector<tp> out;
    for (const auto& w : windows()) out.push_back(w.partition);
    return out;
}

bool partition_work::exists() {
    return _known || !partitions().empty();
}

int64_t partition_work::fetch_position(const tp& p, int64_t log_start, int64_t high_watermark) {
    const int64_t now = _clock.steady_ms();
    int64_t pos = -1;
    auto e = update(p, [&](std::optional<share_partition>& sp) {
        bool changed = false;
        if (!sp) {
            const int64_t at = _earliest ? log_start : high_watermark;
            sp = share_partition(at, at, {});
            changed = true;
        }
        changed = sp->settle(now, log_start, _limits) || changed;
        pos = sp->fetch_position(high_watermark, _limits);
        return changed;
    });
    return e == error_code::none ? pos : -1;
}

result<std::vector<acquired_range>> partition_work::acquire(const std::string& member, const tp& p,
                                                            int64_t first, int64_t last,
                                                            int32_t max_records,
                                                            const std::vector<offset_range>& skip) {
    const int64_t now = _clock.steady_ms();
    std::vector<acquired_range> out;
    auto e = update(p, [&](std::optional<share_partition>& sp) {
        out.clear();
        if (!sp) return false;
        const int64_t start = sp->start(), end = sp->end();
        out = sp->acquire(member, first, last, max_records, now, _limits, skip);
        return !out.empty() || !skip.empty() || sp->start() != start || sp->end() != end;
    });
    if (e != error_code::none) return error{errc::io_error, "share-partition state not saved"};
    return out;
}

error_code partition_work::acknowledge(const std::string& member, const tp& p, int64_t first,
                                       int64_t last, const std::vector<int8_t>& types) {
    const int64_t now = _clock.steady_ms();
    error_code out = error_code::invalid_record_state;
    auto e = update(p, [&](std::optional<share_partition>& sp) {
        out = sp ? sp->acknowledge(member, first, last, types, now, _limits)
                 : error_code::invalid_record_state;
        return out == error_code::none;
    });
    return e != error_code::none ? e : out;
}

void partition_work::release(const std::string& member, const std::vector<tp>& parts) {
    const int64_t now = _clock.steady_ms();
    for (const auto& p : parts)
        (void)update(p, [&](std::optional<share_partition>& sp) {
            return sp && sp->release_member(member, now, _limits);
        });
}

}  // namespace sluice::group::share

// Shared mode's group coordinators (docs/shared-mode.md#groups): a broker serves a group
// only while placement puts the group on it and it holds its lease. A group that moves
// away is forgotten here; one that moves here starts from the database's state, read by
// the cluster poll, and answers COORDINATOR_LOAD_IN_PROGRESS until then.

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "broker/broker.h"
#include "common/logging.h"
#include "shared/placement.h"

namespace sluice::broker {

namespace {

// The store `slot` holds, opened by `open` at the first use and kept (poll thread only);
// nullptr, logged, when it cannot be opened.
template <typename Store, typename Open>
Store* opened_once(std::unique_ptr<Store>& slot, const Open& open, std::string_view what) {
    if (!slot) {
        auto opened = open();
        if (!opened) {
            log_warn("shared", "cannot read {}: {}", what, opened.err().message);
            return nullptr;
        }
        slot = std::move(*opened);
    }
    return slot.get();
}

// The committed offsets in the database, by group: read when a broker leaves, since its
// groups now fall to others, and when another broker's transaction committed offsets.
// nullopt, logged, when they cannot be read.
std::optional<std::map<std::string, std::vector<group::offset_entry>>> load_committed(
    const metadata_stores& stores, std::unique_ptr<catalog::offset_store>& slot) {
    std::map<std::string, std::vector<group::offset_entry>> by_group;
    auto* store = opened_once(slot, stores.open_offsets, "committed offsets");
    auto rows =
        store
            ? store->load()
            : result<std::vector<catalog::stored_offset>>(error{errc::io_error, "no offset store"});
    if (!rows) {
        log_warn("shared", "cannot read committed offsets: {}", rows.err().message);
        return std::nullopt;
    }
    for (auto& r : *rows) {
        group::committed_offset v{r.offset, r.leader_epoch, std::move(r.metadata), r.commit_ms,
                                  r.expire_ms};
        by_group[r.group_id].push_back({{std::move(r.topic), r.partition}, std::move(v)});
    }
    return by_group;
}

}  // namespace

struct broker::group_snapshot {
    std::map<std::string, std::vector<group::offset_entry>> offsets;
    bool with_state = false;  // the groups' state was read too, not only their offsets
    std::vector<group::stored_group> classic;
    std::vector<group::stored_consumer_group> consumer;
    // Groups whose coordinator epoch this broker took before the read: what memory holds
    // of them is stale.
    std::set<std::string> taken;
};

protocol::error_code broker::group_coordinator_error(const std::string& group_id) const {
    using protocol::error_code;
    if (!shared()) return error_code::none;
    if (!_shared.registry) return error_code::coordinator_not_available;  // not serving yet
    shared::coordinator_view v;
    v.self = _shared.registry->address().broker_id;
    v.member = _shared.registry->member();
    v.live = _live_ids;
    if (_groups_loading) v.settled = std::span<const int32_t>(_settled_ids);
    switch (shared::coordination_of(shared::group_key(group_id), v)) {
        case shared::coordination::here:
            return _groups_reload.count(group_id) ? error_code::coordinator_load_in_progress
                                                  : error_code::none;
        case shared::coordination::elsewhere:
            return error_code::not_coordinator;
        case shared::coordination::unavailable:
            return error_code::coordinator_not_available;
        case shared::coordination::loading:
            return error_code::coordinator_load_in_progress;
    }
    return error_code::coordinator_not_available;
}

std::set<std::string> broker::held_group_ids() const {
    std::set<std::string> ids;
    for (const auto& g : _groups.list()) ids.insert(g.group_id);
    for (const auto& g : _consumer_groups.list()) ids.insert(g.group_id);
    for (const auto& g : _share_groups.list()) ids.insert(g);
    return ids;
}

void broker::drop_moved_groups(bool all) {
    const int32_t self = _shared.registry->address().broker_id;
    size_t n = 0;
    for (const auto& id : held_group_ids()) {
        if (!all && shared::place(shared::group_key(id), _live_ids) == self) continue;
        _consumer_groups.forget(id);
        _groups.forget(id);
        _share_groups.forget(id);  // members dropped, their records left acquired
        // Its writes still queued are refused from now on.
        if (_stores.group_fence) _stores.group_fence->drop(id);
        ++n;
    }
    if (n) log_info("shared", "forgot {} groups: placed on other brokers now", n);
}

void broker::on_groups_fenced(const std::set<std::string>& groups) {
    if (!shared() || !_shared.registry) return;
    const int32_t self = _shared.registry->address().broker_id;
    for (const auto& id : groups) {
        _consumer_groups.forget(id);
        _groups.forget(id);
        const bool here = _shared.registry->member() &&
                          shared::place(shared::group_key(id), _live_ids) == self;
        log_warn("shared",
                 "group '{}': another broker took it over; its writes here were refused and it "
                 "is forgotten{}",
                 id, here ? " (placed here: read again from the database)" : "");
        if (here) _groups_reload.insert(id);
    }
    if (_groups_reload.empty()) return;
    int cur = -1;
    _group_load_polls.compare_exchange_strong(cur, 0, std::memory_order_acq_rel);
}

void broker::expect_groups(std::vector<int32_t> settled, int polls,
                           std::chrono::milliseconds grace) {
    // A second move before the first was read: every group placed here is read again.
    if (_groups_loading) settled.clear();
    _settled_ids = std::move(settled);
    const int64_t not_before = group::steady_now_ms() + grace.count();
    _groups_load_not_before =
        _groups_loading ? std::max(_groups_load_not_before, not_before) : not_before;
    _groups_loading = true;
    int cur = _group_load_polls.load(std::memory_order_acquire);
    while ((cur < 0 || cur > polls) &&
           !_group_load_polls.compare_exchange_weak(cur, polls, std::memory_order_acq_rel)) {
    }
}

// Poll thread: the committed offsets, and with the groups' state when groups move here.
// A read that fails leaves with_state false (and the offsets empty); it is tried again at
// the next poll.
broker::group_snapshot broker::read_groups(const std::vector<int32_t>& live) {
    group_snapshot s;
    int polls = _group_load_polls.load(std::memory_order_acquire);
    while (polls > 0 &&
           !_group_load_polls.compare_exchange_weak(polls, polls - 1, std::memory_order_acq_rel)) {
    }
    if (polls != 1 && polls != 0) {  // the offsets only, this poll
        s.offsets = load_committed(_stores, _reload_store).value_or(s.offsets);
        return s;
    }
    read_group_state(s, live);
    return s;
}

void broker::read_group_state(group_snapshot& s, const std::vector<int32_t>& live) {
    const int32_t self = _shared.registry->address().broker_id;
    auto* fence = _stores.group_fence.get();
    if (fence && _shared.registry->member()) {
        // As apply_live_brokers: this broker counts while it holds its lease.
        std::vector<int32_t> ids = live;
        if (std::find(ids.begin(), ids.end(), self) == ids.end()) ids.push_back(self);
        auto taken = fence->take(
            [&](const std::string& g) { return shared::place(shared::group_key(g), ids) == self; });
        if (!taken) {
            // Read at the next poll: without the epochs, the state read could be overtaken.
            log_warn("shared", "cannot take the groups placed here: {}", taken.err().message);
            return;
        }
        s.taken = std::move(*taken);
    }
    // After the epochs were taken: every write of their old coordinators is in it.
    auto offsets = load_committed(_stores, _reload_store);
    auto* store = opened_once(_reload_groups, _stores.open_groups, "the groups' state");
    auto classic = store && offsets ? store->load() : error{errc::io_error, "not read"};
    auto consumer = classic ? store->load_consumer() : classic.err();
    if (!consumer) {
        log_warn("shared", "cannot read the groups' state: {}", consumer.err().message);
        // Taken again (afresh) at the next read, which the caller asks.
        for (const auto& g : s.taken) fence->drop(g);
        s.taken.clear();
        return;
    }
    s.offsets = std::move(*offsets);
    s.classic = std::move(*classic);
    s.consumer = std::move(*consumer);
    s.with_state = true;
}

void broker::take_groups_now() {
    group_snapshot s;
    read_group_state(s, _live_ids);
    take_groups(s);
}

void broker::take_groups(group_snapshot& s) {
    const int32_t self = _shared.registry->address().broker_id;
    auto here = [&](const std::string& g) {
        return shared::place(shared::group_key(g), _live_ids) == self;
    };
    auto arriving = [&](const std::string& g) {
        return _groups_loading && here(g) &&
               shared::place(shared::group_key(g), _settled_ids) != self;
    };
    const bool install =
        s.with_state && _groups_loading && group::steady_now_ms() >= _groups_load_not_before;
    if ((_groups_loading && !install) || (!s.with_state && !_groups_reload.empty())) {
        // Too early (the brokers that held them may not have seen the move yet), or the
        // read failed: read at the next poll.
        int cur = -1;
        _group_load_polls.compare_exchange_strong(cur, 0, std::memory_order_acq_rel);
    }
    // Groups whose epoch the read took, or that are read again after a refused write:
    // taken from the read whenever there is one (this broker holds their epoch now, so
    // what it writes of them must start from what the database has).
    auto refresh = [&](const std::string& g) {
        return s.with_state && here(g) && (s.taken.count(g) || _groups_reload.count(g));
    };
    for (const auto& g : s.taken)
        if (!here(g) && _stores.group_fence) _stores.group_fence->drop(g);  // moved on since
    size_t moved_in = 0;
    if (install || (s.with_state && (!s.taken.empty() || !_groups_reload.empty()))) {
        // What memory holds of them is stale (they were coordinated elsewhere meanwhile).
        std::set<std::string> ids = held_group_ids();
        for (const auto& [g, _] : s.offsets) ids.insert(g);
        for (const auto& g : s.classic) ids.insert(g.group_id);
        for (const auto& g : s.consumer) ids.insert(g.group_id);
        ids.insert(_groups_reload.begin(), _groups_reload.end());
        std::set<std::string> taken;
        for (const auto& id : ids) {
            if (!(install && arriving(id)) && !refresh(id)) continue;
            _consumer_groups.forget(id);
            _groups.forget(id);
            _share_groups.forget(id);
            taken.insert(id);
        }
        // As load(): the offsets first, then the state (an Empty group's age needs both).
        for (const auto& [g, entries] : s.offsets)
            if (taken.count(g)) _groups.restore(g, entries);
        for (const auto& g : s.classic)
            if (taken.count(g.group_id)) _groups.restore_group(g);
        for (const auto& g : s.consumer)
            if (taken.count(g.group_id)) _consumer_groups.restore(g);
        moved_in = taken.size();
        if (install) {
            _settled_ids = _live_ids;
            _groups_loading = false;
        }
        std::erase_if(_groups_reload, [&](const std::string& g) { return s.with_state || !here(g); });
        int zero = 0;
        if (!_groups_loading)
            _group_load_polls.compare_exchange_strong(zero, -1, std::memory_order_acq_rel);
        log_info("shared", "groups placed here read from the database: {} moved here", moved_in);
    }
    // Offsets committed by another broker (a transaction's, by its coordinator) into
    // groups coordinated here: a commit made here since the read is newer.
    size_t n = 0;
    for (const auto& [g, entries] : s.offsets) {
        if (!here(g) || arriving(g)) continue;
        std::vector<group::offset_entry> newer;
        for (const auto& e : entries) {
            auto held = _groups.committed(g, e.tp);
            if (!held || held->commit_ms < e.value.commit_ms) newer.push_back(e);
        }
        _groups.restore(g, newer);
        n += newer.empty() ? 0 : 1;
    }
    if (n) log_info("shared", "took the committed offsets of {} groups placed here", n);
}

// Reads the live brokers, the topics and (when groups move) the groups again, off the
// loop; applies them on it.
void broker::poll_cluster() {
    auto live = _shared.registry->live();
    if (!live) log_warn("shared", "cannot read the live brokers: {}", live.err().message);
    std::optional<group_snapshot> groups;
    if (live) {
        std::vector<int32_t> ids;
        for (const auto& l : *live) ids.push_back(l.address.broker_id);
        std::sort(ids.begin(), ids.end());
        const bool left = std::any_of(_polled_ids.begin(), _polled_ids.end(), [&](int32_t id) {
            return !std::binary_search(ids.begin(), ids.end(), id);
        });
        // A broker that left: its groups fall to the others, which read their state now.
        if (left) {
            int cur = _group_load_polls.load(std::memory_order_acquire);
            while (cur != 0 &&
                   !_group_load_polls.compare_exchange_weak(cur, 0, std::memory_order_acq_rel)) {
            }
        }
        // A transaction's offsets committed by another broker's coordinator, too.
        auto txn_offsets = _shared.log->change_version("txn_offsets");
        const bool moved = txn_offsets && *txn_offsets != _txn_offsets_seen;
        if (left || moved || _rejoined.exchange(false, std::memory_order_acq_rel) ||
            _group_load_polls.load(std::memory_order_acquire) >= 0)
            groups = read_groups(ids);
        if (moved) _txn_offsets_seen = *txn_offsets;
        _polled_ids = std::move(ids);
    }
    auto changed = _shared.topics->refresh();
    if (!changed) log_warn("shared", "cannot read the topics: {}", changed.err().message);
    const bool topics_changed = changed && *changed;
    _loop.post([this, live = live ? std::optional(std::move(*live)) : std::nullopt, topics_changed,
                groups = std::move(groups)]() mutable {
        if (_shutting_down) return;
        if (live) apply_live_brokers(*live);
        if (topics_changed) _topics.sync();
        if (groups) take_groups(*groups);
    });
}

}  // namespace sluice::broker

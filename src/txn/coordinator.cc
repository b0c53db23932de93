#include "txn/coordinator.h"

#include <algorithm>

#include "common/logging.h"

namespace sluice::txn {

std::string_view error_text(txn_error e) {
    switch (e) {
        case txn_error::none:
            return "none";
        case txn_error::invalid_producer_id_mapping:
            return "unknown transactional id or producer id";
        case txn_error::producer_fenced:
            return "the producer epoch is not the current one";
        case txn_error::concurrent_transactions:
            return "the previous transaction is completing";
        case txn_error::invalid_txn_state:
            return "not allowed in the transaction's state";
        case txn_error::not_in_transaction:
            return "not part of the producer's ongoing transaction";
        case txn_error::invalid_transaction_timeout:
            return "transaction timeout out of range";
        case txn_error::not_available:
            return "transaction state could not be stored";
        case txn_error::not_coordinator:
            return "another broker coordinates the group now";
    }
    return "unknown";
}

coordinator::coordinator(settings cfg, services svc) : _cfg(cfg), _svc(std::move(svc)) {}

result<void> coordinator::recover() {
    auto rows = _svc.store->load();
    if (!rows) return rows.err();
    std::vector<std::string> prepared;
    for (auto& t : *rows) {
        // Shared mode: the owner completes it (refresh_all, once the live brokers are known).
        if (is_prepare(t.state) && !_svc.shared_store) prepared.push_back(t.transactional_id);
        _txns[t.transactional_id] = std::move(t);
    }
    log_info("txn", "loaded {} transactional ids; completing {} prepared transactions",
             _txns.size(), prepared.size());
    for (const auto& id : prepared) {
        _completing[id];
        run_completion(id);
    }
    return {};
}

void coordinator::refresh(const std::string& id) {
    if (!_svc.shared_store || _completing.contains(id)) return;
    auto r = _svc.store->load_one(id);
    if (!r) {
        log_warn("txn", "reading transactional id '{}': {}", id, r.err().message);
        return;
    }
    adopt(id, std::move(*r));
}

void coordinator::refresh_all() {
    if (!_svc.shared_store) return;
    auto rows = _svc.store->load();
    if (!rows) {
        log_warn("txn", "reading the transactional ids: {}", rows.err().message);
        return;
    }
    std::map<std::string, txn_metadata> fresh;
    for (auto& t : *rows) fresh[t.transactional_id] = std::move(t);
    std::vector<std::string> gone;
    for (const auto& [id, _] : _txns)
        if (!fresh.contains(id) && !_completing.contains(id)) gone.push_back(id);
    for (const auto& id : gone) _txns.erase(id);
    for (auto& [id, t] : fresh)
        if (!_completing.contains(id)) adopt(id, std::move(t));
}

void coordinator::adopt(const std::string& id, std::optional<txn_metadata> t) {
    if (!t) {
        _txns.erase(id);
        return;
    }
    const bool prepared = is_prepare(t->state);
    _txns[id] = std::move(*t);
    if (prepared && owns(id) && !_completing.contains(id)) {
        // Another coordinator prepared it and went away: complete it, as at start-up.
        log_info("txn", "transactional id '{}': completing the transaction found prepared", id);
        _completing[id];
        run_completion(id);
    }
}

const txn_metadata* coordinator::find(const std::string& id) const {
    auto it = _txns.find(id);
    return it == _txns.end() ? nullptr : &it->second;
}

std::vector<txn_metadata> coordinator::all() const {
    std::vector<txn_metadata> out;
    out.reserve(_txns.size());
    for (const auto& [_, t] : _txns) out.push_back(t);
    return out;
}

coordinator::saved coordinator::save(txn_metadata next, const std::string* by_group) {
    next.update_ms = _svc.wall_ms();
    auto r = by_group ? _svc.store->put_by_group(next, *by_group) : _svc.store->put(next);
    if (!r && r.code() == errc::fenced) {
        log_info("txn", "transactional id '{}': offsets of group '{}' refused: {}",
                 next.transactional_id, *by_group, r.err().message);
        return saved::fenced;
    }
    if (!r) {
        log_error("txn", "storing transactional id '{}': {}", next.transactional_id,
                  r.err().message);
        return saved::failed;
    }
    if (!*r) {
        // Another broker's coordinator (or one serving a request for this id there)
        // changed the record since it was read: read it again; the caller decides again.
        log_info("txn",
                 "transactional id '{}' changed at another broker since version {}: "
                 "reading it again",
                 next.transactional_id, next.version);
        _lost_race = true;
        refresh(next.transactional_id);
        return saved::lost_race;
    }
    ++next.version;
    _txns[next.transactional_id] = std::move(next);
    return saved::stored;
}

txn_error coordinator::decide(const std::function<txn_error()>& op) {
    for (int attempt = 1;; ++attempt) {
        _lost_race = false;
        txn_error e = op();
        if (!_lost_race) return e;
        if (attempt == max_race_attempts) return txn_error::concurrent_transactions;
    }
}

txn_error coordinator::check_producer(const txn_metadata* t, int64_t producer_id,
                                      int16_t epoch) const {
    if (!t || t->producer_id != producer_id) return txn_error::invalid_producer_id_mapping;
    if (t->producer_epoch != epoch) return txn_error::producer_fenced;
    if (_completing.contains(t->transactional_id) || is_prepare(t->state))
        return txn_error::concurrent_transactions;
    return txn_error::none;
}

void coordinator::init_producer_id(const std::string& id, int32_t timeout_ms, int64_t producer_id,
                                   int16_t producer_epoch, const answer_fn& cb) {
    producer_answer out;
    decide([&] {
        out = init_once(id, timeout_ms, producer_id, producer_epoch);
        return out.error;
    });
    if (_lost_race) out = {txn_error::concurrent_transactions};
    cb(out);
}

producer_answer coordinator::init_once(const std::string& id, int32_t timeout_ms,
                                       int64_t producer_id, int16_t producer_epoch) {
    if (timeout_ms <= 0 || timeout_ms > _cfg.max_timeout_ms)
        return {txn_error::invalid_transaction_timeout};
    refresh(id);
    const txn_metadata* cur = find(id);
    txn_metadata next;
    if (!cur) {
        auto pid = _svc.allocate_producer_id();
        if (!pid) return {txn_error::not_available};
        next.transactional_id = id;
        next.producer_id = *pid;
        next.producer_epoch = 0;
    } else {
        if (_completing.contains(id) || is_prepare(cur->state))
            return {txn_error::concurrent_transactions};
        // KIP-360 (Kafka's isValidProducerId): the current id, or the previous one after
        // a rotation that the producer's exhausted epoch caused.
        if (producer_id >= 0 && cur->producer_epoch >= 0 && producer_id != cur->producer_id &&
            !(producer_id == cur->last_producer_id && epoch_exhausted(producer_epoch)))
            return {txn_error::producer_fenced};
        if (cur->state == txn_state::ongoing) {
            // Abort the previous instance's transaction with a bumped epoch (fencing it);
            // the retry bumps again and gets its own epoch.
            begin_end(*cur, false, end_mode::fence, nullptr);
            return {txn_error::concurrent_transactions};
        }
        next = *cur;
        if (producer_id >= 0 && producer_id == cur->last_producer_id &&
            producer_id != cur->producer_id) {
            // A retry after the rotation it caused: the answer it missed.
            return {txn_error::none, cur->producer_id, cur->producer_epoch};
        }
        if (epoch_exhausted(cur->producer_epoch) &&
            (producer_id < 0 || producer_epoch == cur->producer_epoch)) {
            auto pid = _svc.allocate_producer_id();
            if (!pid) return {txn_error::not_available};
            next.last_producer_id = cur->producer_id;
            next.last_producer_epoch = producer_id >= 0 ? cur->producer_epoch : int16_t{-1};
            next.producer_id = *pid;
            next.producer_epoch = 0;
        } else if (producer_id < 0) {
            next.producer_epoch = static_cast<int16_t>(cur->producer_epoch + 1);
            next.last_producer_epoch = -1;
        } else if (producer_epoch == cur->producer_epoch) {
            next.last_producer_id = cur->producer_id;
            next.last_producer_epoch = cur->producer_epoch;
            next.producer_epoch = static_cast<int16_t>(cur->producer_epoch + 1);
        } else if (producer_epoch == cur->last_producer_epoch) {
            // A retry of the bump that already happened (KAFKA-19367: no second bump).
            return {txn_error::none, cur->producer_id, cur->producer_epoch};
        } else {
            return {txn_error::producer_fenced};
        }
        next.state = txn_state::empty;
    }
    next.timeout_ms = timeout_ms;
    next.partitions.clear();
    next.groups.clear();
    next.offsets.clear();
    next.start_ms = -1;
    next.tv2 = false;
    if (save(next) != saved::stored) return {txn_error::not_available};
    const auto& t = _txns[id];
    log_info("txn", "transactional id '{}': producer id {} epoch {}", id, t.producer_id,
             t.producer_epoch);
    return {txn_error::none, t.producer_id, t.producer_epoch};
}

txn_error coordinator::add_partitions(const std::string& id, int64_t producer_id,
                                      int16_t producer_epoch,
                                      const std::vector<topic_partition>& tps, bool tv2) {
    return decide([&] { return add_partitions_once(id, producer_id, producer_epoch, tps, tv2); });
}

txn_error coordinator::add_partitions_once(const std::string& id, int64_t producer_id,
                                           int16_t producer_epoch,
                                           const std::vector<topic_partition>& tps, bool tv2) {
    refresh(id);
    const txn_metadata* cur = find(id);
    if (auto e = check_producer(cur, producer_id, producer_epoch); e != txn_error::none) return e;
    bool ongoing = cur->state == txn_state::ongoing;
    if (ongoing &&
        std::all_of(tps.begin(), tps.end(), [&](const auto& tp) { return cur->has_partition(tp); }))
        return txn_error::none;
    txn_metadata next = *cur;
    if (!ongoing) {
        next.state = txn_state::ongoing;
        next.start_ms = _svc.wall_ms();
        next.tv2 = tv2;
    }
    for (const auto& tp : tps) next.add_partition(tp);
    return save(std::move(next)) == saved::stored ? txn_error::none : txn_error::not_available;
}

txn_error coordinator::verify_partitions(const std::string& id, int64_t producer_id,
                                         int16_t producer_epoch,
                                         const std::vector<topic_partition>& tps) {
    refresh(id);
    const txn_metadata* cur = find(id);
    if (auto e = check_producer(cur, producer_id, producer_epoch); e != txn_error::none) return e;
    // As Kafka's handleVerifyPartitionsInTransaction: a partition outside the ongoing
    // transaction (or with none ongoing) is TRANSACTION_ABORTABLE.
    if (cur->state != txn_state::ongoing) return txn_error::not_in_transaction;
    for (const auto& tp : tps)
        if (!cur->has_partition(tp)) return txn_error::not_in_transaction;
    return txn_error::none;
}

txn_error coordinator::add_group(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                                 const std::string& group_id) {
    return decide([&] { return add_group_once(id, producer_id, producer_epoch, group_id); });
}

txn_error coordinator::add_group_once(const std::string& id, int64_t producer_id,
                                      int16_t producer_epoch, const std::string& group_id) {
    refresh(id);
    const txn_metadata* cur = find(id);
    if (auto e = check_producer(cur, producer_id, producer_epoch); e != txn_error::none) return e;
    if (cur->state == txn_state::ongoing && cur->has_group(group_id)) return txn_error::none;
    txn_metadata next = *cur;
    if (cur->state != txn_state::ongoing) {
        next.state = txn_state::ongoing;
        next.start_ms = _svc.wall_ms();
    }
    next.add_group(group_id);
    return save(std::move(next)) == saved::stored ? txn_error::none : txn_error::not_available;
}

txn_error coordinator::commit_offsets(const std::string& id, int64_t producer_id,
                                      int16_t producer_epoch, const std::string& group_id,
                                      std::vector<pending_offset> offsets, bool add_group) {
    return decide([&] {
        return commit_offsets_once(id, producer_id, producer_epoch, group_id, offsets, add_group);
    });
}

txn_error coordinator::commit_offsets_once(const std::string& id, int64_t producer_id,
                                           int16_t producer_epoch, const std::string& group_id,
                                           const std::vector<pending_offset>& offsets,
                                           bool add_group) {
    refresh(id);
    const txn_metadata* cur = find(id);
    if (auto e = check_producer(cur, producer_id, producer_epoch); e != txn_error::none) return e;
    txn_metadata next = *cur;
    if (cur->state != txn_state::ongoing || !cur->has_group(group_id)) {
        if (!add_group) return txn_error::not_in_transaction;
        if (cur->state != txn_state::ongoing) {
            next.state = txn_state::ongoing;
            next.start_ms = _svc.wall_ms();
            next.tv2 = true;
        }
        next.add_group(group_id);
    }
    for (auto o : offsets) {
        o.group_id = group_id;
        next.put_offset(std::move(o));
    }
    switch (save(std::move(next), &group_id)) {
        case saved::stored:
            return txn_error::none;
        case saved::fenced:
            return txn_error::not_coordinator;
        case saved::lost_race:
        case saved::failed:
            break;
    }
    return txn_error::not_available;
}

bool coordinator::has_pending_offset(const std::string& group_id, const topic_partition& tp) {
    auto pending = [&](const txn_metadata& t) {
        if (t.state != txn_state::ongoing && !is_prepare(t.state)) return false;
        return std::any_of(t.offsets.begin(), t.offsets.end(),
                           [&](const auto& o) { return o.group_id == group_id && o.tp == tp; });
    };
    std::vector<std::string> ids;
    for (const auto& [id, t] : _txns)
        if (pending(t)) ids.push_back(id);
    for (const auto& id : ids) {
        refresh(id);
        if (const txn_metadata* t = find(id); t && pending(*t)) return true;
    }
    return false;
}

size_t coordinator::expire() {
    const int64_t now = _svc.wall_ms();
    std::vector<std::string> timed_out;
    for (const auto& [id, t] : _txns) {
        if (_completing.contains(id) || !owns(id)) continue;
        if (is_prepare(t.state)) {
            // A completion that failed (a marker not written): try again.
            _completing[id];
            run_completion(id);
        } else if (t.state == txn_state::ongoing && t.start_ms >= 0 &&
                   now - t.start_ms > t.timeout_ms) {
            timed_out.push_back(id);
        }
    }
    for (const auto& id : timed_out) {
        const auto& t = _txns[id];
        log_info("txn",
                 "transactional id '{}': transaction open for {} ms, longer than its timeout "
                 "({} ms): aborting it and fencing producer {} epoch {}",
                 id, now - t.start_ms, t.timeout_ms, t.producer_id, t.producer_epoch);
        begin_end(t, false, end_mode::fence, nullptr);
    }
    return timed_out.size();
}

}  // namespace sluice::txn

// Ending transactions: EndTxn, the abort that fences a previous instance or a timed-out
// transaction, and the completion of prepared transactions (markers, then Complete*).

#include "common/logging.h"
#include "txn/coordinator.h"

namespace sluice::txn {
namespace {

txn_state completed(bool commit) {
    return commit ? txn_state::complete_commit : txn_state::complete_abort;
}

}  // namespace

void coordinator::end_txn(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                          bool commit, bool tv2, const answer_fn& cb) {
    // cb is called once: by end_txn_once unless its write lost a race (then it is run
    // again, reading the id afresh), or below when the races go on.
    for (int attempt = 1;; ++attempt) {
        _lost_race = false;
        end_txn_once(id, producer_id, producer_epoch, commit, tv2, cb);
        if (!_lost_race) return;
        if (attempt == max_race_attempts) return cb({txn_error::concurrent_transactions});
    }
}

void coordinator::end_txn_once(const std::string& id, int64_t producer_id, int16_t producer_epoch,
                               bool commit, bool tv2, const answer_fn& cb) {
    refresh(id);
    const txn_metadata* cur = find(id);
    if (!cur) return cb({txn_error::invalid_producer_id_mapping});
    const bool done_state =
        cur->state == txn_state::complete_commit || cur->state == txn_state::complete_abort;
    // TV2: a retry of the EndTxn that bumped the epoch (its answer was lost) gets that
    // answer again. Only while nothing newer happened: a late EndTxn landing on the next
    // transaction is fenced by its old epoch (KAFKA-17754).
    if (tv2 && done_state && !_completing.contains(id) && producer_id == cur->last_producer_id &&
        producer_epoch == cur->last_producer_epoch) {
        if (cur->state != completed(commit)) return cb({txn_error::invalid_txn_state});
        return cb({txn_error::none, cur->producer_id, cur->producer_epoch});
    }
    // TV2: a retry of an EndTxn whose markers are still being written (the epoch is
    // already bumped; e.g. the broker was killed mid-way and is completing it after the
    // restart) waits, as in Kafka, and then gets the answer above. Fencing it would make
    // the client give up on a transaction that commits.
    if (tv2 && producer_id == cur->last_producer_id && producer_epoch == cur->last_producer_epoch &&
        cur->state == (commit ? txn_state::prepare_commit : txn_state::prepare_abort))
        return cb({txn_error::concurrent_transactions});
    if (cur->producer_id != producer_id) return cb({txn_error::invalid_producer_id_mapping});
    if (cur->producer_epoch != producer_epoch) return cb({txn_error::producer_fenced});
    if (_completing.contains(id) || is_prepare(cur->state)) {
        const bool same =
            cur->state == (commit ? txn_state::prepare_commit : txn_state::prepare_abort);
        return cb({same ? txn_error::concurrent_transactions : txn_error::invalid_txn_state});
    }
    if (cur->state == txn_state::ongoing)
        return begin_end(*cur, commit, tv2 ? end_mode::client_tv2 : end_mode::client_tv1, cb);
    // Nothing open. TV2 ends an empty transaction with an epoch bump (KAFKA-18401);
    // TV1 accepts only a retry of the EndTxn that completed it.
    if (tv2) {
        auto answer = bump_empty(*cur, commit);
        if (!_lost_race) cb(answer);
        return;
    }
    if (done_state && cur->state == completed(commit))
        return cb({txn_error::none, cur->producer_id, cur->producer_epoch});
    cb({txn_error::invalid_txn_state});
}

producer_answer coordinator::bump_empty(const txn_metadata& t, bool commit) {
    txn_metadata next = t;
    next.last_producer_id = t.producer_id;
    next.last_producer_epoch = t.producer_epoch;
    if (epoch_exhausted(t.producer_epoch)) {
        auto pid = _svc.allocate_producer_id();
        if (!pid) return {txn_error::not_available};
        next.producer_id = *pid;
        next.producer_epoch = 0;
    } else {
        next.producer_epoch = static_cast<int16_t>(t.producer_epoch + 1);
    }
    next.state = completed(commit);
    next.tv2 = true;
    if (save(next) != saved::stored) return {txn_error::not_available};
    const auto& done = _txns.at(t.transactional_id);
    return {txn_error::none, done.producer_id, done.producer_epoch};
}

void coordinator::begin_end(const txn_metadata& t, bool commit, end_mode mode,
                            const answer_fn& cb) {
    txn_metadata next = t;
    const bool bump = mode == end_mode::client_tv2 || (mode == end_mode::fence && t.tv2);
    if (bump) {
        // TV2: the markers carry the bumped epoch, so the partitions fence the ended
        // transaction's producer; an exhausted epoch moves to a new id afterwards.
        next.last_producer_id = t.producer_id;
        next.last_producer_epoch = t.producer_epoch;
        if (epoch_exhausted(t.producer_epoch)) {
            auto pid = _svc.allocate_producer_id();
            if (!pid) {
                if (cb) cb({txn_error::not_available});
                return;
            }
            next.next_producer_id = *pid;
        }
        next.producer_epoch = static_cast<int16_t>(t.producer_epoch + 1);
        next.tv2 = true;
    } else if (mode == end_mode::fence && !epoch_exhausted(t.producer_epoch)) {
        // TV1 (Kafka's prepareFenceProducerEpoch): the old instance is fenced.
        next.producer_epoch = static_cast<int16_t>(t.producer_epoch + 1);
        next.last_producer_epoch = -1;
    }
    if (mode == end_mode::client_tv1) next.tv2 = false;
    next.state = commit ? txn_state::prepare_commit : txn_state::prepare_abort;
    const std::string id = t.transactional_id;  // t may be the record save replaces
    if (auto s = save(next); s != saved::stored) {
        if (s == saved::failed && cb) cb({txn_error::not_available});
        return;
    }
    auto& waiting = _completing[id];
    if (cb) waiting.push_back(cb);
    run_completion(id);
}

void coordinator::run_completion(const std::string& id) {
    const txn_metadata& t = _txns.at(id);
    const bool commit = t.state == txn_state::prepare_commit;
    log_debug("txn", "transactional id '{}': writing {} markers to {} partitions", id,
              commit ? "COMMIT" : "ABORT", t.partitions.size());
    _svc.parts->complete(t, commit, [this, id](const result<void>& r) { finish(id, r); });
}

void coordinator::finish(const std::string& id, const result<void>& r) {
    auto it = _completing.find(id);
    if (it == _completing.end()) return;
    auto waiting = std::move(it->second);
    _completing.erase(it);
    const txn_metadata& t = _txns.at(id);
    const bool commit = t.state == txn_state::prepare_commit;
    producer_answer answer{txn_error::none, t.producer_id, t.producer_epoch};
    if (!r) {
        // Stays prepared: expire() tries again, a restart does too.
        log_error("txn", "transactional id '{}': {} markers not written: {}", id,
                  commit ? "COMMIT" : "ABORT", r.err().message);
        answer = {txn_error::not_available};
    } else {
        txn_metadata next = t;
        std::vector<pending_offset> offsets = commit ? t.offsets : std::vector<pending_offset>{};
        next.state = completed(commit);
        next.partitions.clear();
        next.groups.clear();
        next.offsets.clear();
        next.start_ms = -1;
        if (next.next_producer_id >= 0) {
            next.producer_id = next.next_producer_id;
            next.producer_epoch = 0;
            next.next_producer_id = -1;
        }
        switch (save(next)) {
            case saved::stored: {
                if (!offsets.empty()) _svc.parts->offsets_committed(offsets);
                const auto& done = _txns.at(id);
                answer = {txn_error::none, done.producer_id, done.producer_epoch};
                log_info("txn", "transactional id '{}': transaction {}", id,
                         commit ? "committed" : "aborted");
                break;
            }
            case saved::lost_race:
                // Another broker changed the record while the markers were written (it
                // completed the transaction too, taking the id over): the client's retry
                // of EndTxn finds what it did.
                _lost_race = false;
                answer = {txn_error::concurrent_transactions};
                break;
            case saved::failed:
            case saved::fenced:
                answer = {txn_error::not_available};
                break;
        }
    }
    for (auto& cb : waiting) cb(answer);
}

}  // namespace sluice::txn

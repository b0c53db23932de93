#include "broker/txn_participants.h"

#include <map>

#include "broker/broker.h"
#include "common/clock.h"
#include "common/logging.h"

namespace sluice::broker {

void txn_participants::complete(const txn::txn_metadata& t, bool commit, done_fn done) {
    // Counts the markers not yet durable, plus one for the loop below; the first
    // failure is what done gets.
    struct waiting {
        size_t left = 1;
        result<void> outcome;
        std::function<void(result<void>)> then;
    };
    auto w = std::make_shared<waiting>();
    // Shared mode's transaction store makes the offsets committed with the state
    // CompleteCommit (offsets_committed follows).
    const bool offsets = commit && !t.offsets.empty() && !_b.shared();
    w->then = [this, t = offsets ? t : txn::txn_metadata{}, offsets,
               done = std::move(done)](result<void> r) mutable {
        if (!r || !offsets) return done(std::move(r));
        commit_offsets(t, std::move(done));
    };
    auto one_done = [w](result<void> r) {
        if (!r && w->outcome) w->outcome = std::move(r);
        if (--w->left == 0) w->then(std::move(w->outcome));
    };
    const int64_t now = now_ms();
    if (_b.shared()) {
        for (const auto& tp : t.partitions) {
            const topic_state* ts = _b.topics().find(tp.topic);
            auto* part = ts ? _b.partition(*ts, tp.partition) : nullptr;
            if (!part) continue;
            ++w->left;
            // The append completes on the shared log's thread; the rest runs on the loop.
            static_cast<shared::shared_partition*>(part)->write_marker(
                t.producer_id, t.producer_epoch, commit, now,
                [this, tp, one_done](result<log::append_info> r) {
                    _b.loop().post([tp, one_done, r = std::move(r)] {
                        if (!r) return one_done(r.err());
                        if (r->verdict != log::sequence_verdict::append)
                            log_info("txn", "{}-{}: marker not written: {}", tp.topic, tp.partition,
                                     r->reason);
                        one_done(result<void>{});
                    });
                });
        }
        return one_done(result<void>{});
    }
    std::vector<topic_partition> written;
    for (const auto& tp : t.partitions) {
        auto* plog = _b.logs().get(tp.topic, tp.partition);
        if (!plog) continue;
        auto r = plog->write_marker(t.producer_id, t.producer_epoch, commit, 0, now);
        if (!r) {
            ++w->left;
            one_done(r.err());
            continue;
        }
        if (r->verdict != log::sequence_verdict::append) {
            // The partition has seen a newer epoch of this producer: a marker written
            // before a restart, or the transaction already ended there.
            log_info("txn", "{}-{}: {} marker of producer {} epoch {} not written: {}", tp.topic,
                     tp.partition, commit ? "COMMIT" : "ABORT", t.producer_id, t.producer_epoch,
                     r->reason);
            continue;
        }
        ++w->left;
        written.push_back(tp);
        _b.when_durable(plog, r->last_offset, one_done);
    }
    if (!written.empty()) _b.notify_data(written);
    one_done(result<void>{});
}

void txn_participants::commit_offsets(const txn::txn_metadata& t, done_fn done) {
    std::vector<catalog::offset_write> writes;
    for (const auto& o : t.offsets) {
        // Not the group coordinator's write: the transaction's record orders it.
        writes.push_back({catalog::offset_write::kind::commit,
                          {o.group_id, o.tp.topic, o.tp.partition, o.offset, o.leader_epoch,
                           o.metadata, o.commit_ms, -1},
                          false});
    }
    _b.store_offsets(std::move(writes), [this, offsets = t.offsets,
                                         done = std::move(done)](const result<void>& r) {
        if (r) remember(offsets);
        done(r);
    });
}

void txn_participants::offsets_committed(const std::vector<txn::pending_offset>& offsets) {
    // The other brokers coordinating these groups read them again (the store announced
    // them in the same write).
    if (_b.shared()) remember(offsets);
}

void txn_participants::remember(const std::vector<txn::pending_offset>& offsets) {
    std::map<std::string, std::vector<group::offset_entry>> by_group;
    for (const auto& o : offsets) {
        // Topics deleted meanwhile were skipped by the store.
        if (!_b.topics().find(o.tp.topic)) continue;
        by_group[o.group_id].push_back(
            {o.tp, group::committed_offset{o.offset, o.leader_epoch, o.metadata, o.commit_ms, -1}});
    }
    for (const auto& [g, entries] : by_group) _b.groups().store_offsets(g, entries);
}

}  // namespace sluice::broker

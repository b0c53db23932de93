// What operators see and what ages out: ListTransactions' filters and the expiration of
// idle transactional ids.

#include <algorithm>

#include "common/logging.h"
#include "txn/coordinator.h"

namespace sluice::txn {
namespace {

template <typename T>
bool passes(const std::vector<T>& filter, const T& v) {
    return filter.empty() || std::find(filter.begin(), filter.end(), v) != filter.end();
}

}  // namespace

std::vector<txn_metadata> coordinator::list(const list_filter& f) const {
    const int64_t now = _svc.wall_ms();
    std::vector<txn_metadata> out;
    for (const auto& [id, t] : _txns) {
        if (!owns(id)) continue;
        if (!passes(f.states, t.state) || !passes(f.producer_ids, t.producer_id)) continue;
        if (f.min_duration_ms >= 0 && (t.start_ms < 0 || now - t.start_ms <= f.min_duration_ms))
            continue;
        out.push_back(t);
    }
    return out;
}

size_t coordinator::remove_expired_ids() {
    const int64_t now = _svc.wall_ms();
    std::vector<std::string> idle;
    for (const auto& [id, t] : _txns) {
        // As Kafka: only ids between transactions (Empty, Complete*) expire.
        const bool between = t.state == txn_state::empty || t.state == txn_state::complete_commit ||
                             t.state == txn_state::complete_abort;
        if (between && owns(id) && !_completing.contains(id) &&
            now - t.update_ms > _cfg.id_expiration_ms)
            idle.push_back(id);
    }
    size_t removed = 0;
    for (const auto& id : idle) {
        const auto& t = _txns.at(id);
        auto r = _svc.store->erase(id, t.version);
        if (!r) {
            log_error("txn", "forgetting expired transactional id '{}': {}", id, r.err().message);
            continue;
        }
        if (!*r) {
            // Used at another broker since it was read: not idle after all.
            refresh(id);
            continue;
        }
        log_info("txn",
                 "transactional id '{}' (producer id {} epoch {}) unused for {} ms, longer than "
                 "--transactional-id-expiration-ms ({} ms): forgotten",
                 id, t.producer_id, t.producer_epoch, now - t.update_ms, _cfg.id_expiration_ms);
        _txns.erase(id);
        ++removed;
    }
    return removed;
}

}  // namespace sluice::txn

// Where the expansions read partitions from (a local log, or the partition-log interface
// in shared mode) and, in shared mode, how each broker's copies of the targets follow the
// shared definitions (docs/expansions.md, "Shared mode").

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "catalog/expansion_store.h"
#include "catalog/metadata_store.h"
#include "common/logging.h"
#include "expansion/running.h"
#include "expansion/service.h"
#include "log/log_manager.h"
#include "sql/partition_source.h"

namespace sluice::expansion {

// Where expansion stops reading a partition: durable events only (the high watermark
// runs ahead of the fsync: rows of events a machine crash then loses would outlive
// them, see catch_up), and committed ones (below the last stable offset: an open
// transaction's records are written when it commits, an aborted one's never).
// In shared mode, committed events are durable (in the object store and the database).
offset_t readable_end(const source_partition& part) {
    if (!part.local) return part.store->last_stable_offset();
    return std::min(part.local->durable_offset(), part.local->last_stable_offset());
}

namespace {

// The rows of the events of a local log, with their broker append times.
result<int64_t> write_local_rows(running& e, const log::partition_log* plog, int32_t p,
                                 offset_t from, offset_t to) {
    int64_t rows = 0;
    // Committed records only: `to` is at or below the last stable offset (readable_end).
    if (auto r = e.cursor.open_committed(plog, from, to); !r)
        return error{r.code(), fmt::format("{}-{}: {}", e.info.topic, p, r.err().message)};
    for (;;) {
        auto more = e.cursor.next();
        if (!more)
            return error{more.code(),
                         fmt::format("{}-{}: {}", e.info.topic, p, more.err().message)};
        if (!*more) break;
        const auto& rec = e.cursor.record();
        const auto source = e.key_source ? rec.key : rec.value;
        auto at = e.cursor.append_time();
        if (!at) return at.err();
        if (auto r = e.target->insert(p, rec.offset, *at, e.rows->build(source), source, rec.key);
            !r)
            return r.err();
        ++rows;
    }
    e.cursor.close();
    return rows;
}

}  // namespace

// Inserts the rows of partition p's events in [from, to) inside e's open transaction;
// returns how many. _timestamp_broker is the batch's append time from the batch index, the
// same on every broker (the record's timestamp for batches committed before the shared
// catalog kept append times, version 10).
result<written_rows> write_rows(running& e, const source_partition& part, int32_t p, offset_t from,
                                offset_t to) {
    if (part.local) {
        auto rows = write_local_rows(e, part.local, p, from, to);
        if (!rows) return rows.err();
        return written_rows{*rows, to};
    }
    int64_t rows = 0;
    if (auto r = e.shared_cursor.open(part.store, from, to); !r)
        return error{r.code(), fmt::format("{}-{}: {}", e.info.topic, p, r.err().message)};
    for (;;) {
        auto more = e.shared_cursor.next();
        if (!more) {
            e.shared_cursor.close();
            return error{more.code(),
                         fmt::format("{}-{}: {}", e.info.topic, p, more.err().message)};
        }
        if (!*more) break;
        const auto& rec = e.shared_cursor.record();
        const auto source = e.key_source ? rec.key : rec.value;
        const int64_t at = e.shared_cursor.append_time().value_or(rec.timestamp);
        if (auto r = e.target->insert(p, rec.offset, at, e.rows->build(source), source, rec.key);
            !r) {
            e.shared_cursor.close();
            return r.err();
        }
        ++rows;
    }
    const offset_t end = std::min(to, e.shared_cursor.read_up_to());
    e.shared_cursor.close();
    return written_rows{rows, end};
}

std::vector<int32_t> service::partitions_of(const std::string& topic) const {
    std::vector<int32_t> out;
    if (_o.partitions) {
        if (auto t = _o.topics->find_topic(topic))
            for (int32_t p = 0; p < t->partitions; ++p) out.push_back(p);
        return out;
    }
    if (auto t = _o.logs->topic(topic))
        for (int32_t p = 0; _o.logs->partition(*t, p); ++p) out.push_back(p);
    return out;
}

bool service::topic_exists(const std::string& topic) const {
    if (_o.partitions) return _o.topics->find_topic(topic).has_value();
    return _o.logs->topic(topic) != nullptr;
}

source_partition service::partition(const std::string& topic, int32_t p) const {
    source_partition out;
    if (_o.partitions) {
        out.store = _o.partitions->partition(topic, p);
        return out;
    }
    auto t = _o.logs->topic(topic);
    if (!t) return out;
    out.local = _o.logs->partition(*t, p);
    out.store = out.local;
    return out;
}

result<void> service::open_copy(running& e) {
    auto t = _targets->open(e.schema_name, e.table, *e.columns, true);
    if (!t) return t.err();
    auto progress = (*t)->load_progress();
    if (!progress) return progress.err();
    if (progress->empty() && !e.info.starts.empty()) {
        progress_map from;
        for (const auto& [p, start] : e.info.starts) {
            partition_progress pp;
            pp.next = pp.backfill_end = start.live_from;
            pp.backfill_start = pp.backfill_next = start.backfill_from;
            from[p] = pp;
        }
        if (auto r = (*t)->reset_progress(from); !r) return r;
        log_info("expansion", "{}: expanding topic '{}' into this broker's copy of the target",
                 e.info.target, e.info.topic);
    }
    e.target = std::move(*t);
    return {};
}

void service::definitions_changed() {
    {
        std::lock_guard lock(_mu);
        _definitions_changed = true;
    }
    _cv.notify_one();
}

void service::sync_definitions() {
    std::lock_guard create(_create_mu);
    std::set<std::string> defined;
    for (const auto& info : _o.expansions->list_expansions()) {
        const auto key = target_key(info.target);
        defined.insert(key);
        {
            std::lock_guard lock(_mu);
            if (_by_target.count(key)) continue;
        }
        if (!load(info)) continue;
        log_info("expansion", "{}: created at another broker; expanding topic '{}' here too",
                 info.target, info.topic);
    }
    std::vector<std::shared_ptr<running>> gone;
    {
        std::lock_guard lock(_mu);
        for (const auto& [key, e] : _by_target)
            if (!defined.count(key)) gone.push_back(e);
    }
    for (auto& e : gone) {
        std::lock_guard work(e->work_mu);
        e->dropped = true;
        {
            std::lock_guard lock(_mu);
            forget(*e);
        }
        publish(*e);
        // The table stays: whether to drop it was the other broker's request's to say,
        // and it did so there only (docs/expansions.md, "Shared mode").
        if (e->target) {
            if (auto r = e->target->remove(false); !r)
                log_warn("expansion", "{}: dropped, but cleaning its progress up failed: {}",
                         e->info.target, r.err().message);
            e->target.reset();
        }
        log_info("expansion", "{}: dropped at another broker; its table here stays",
                 e->info.target);
    }
}

}  // namespace sluice::expansion

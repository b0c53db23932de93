// shared_partition (shared_log.h): reads through the batch index and the object cache.

#include <algorithm>
#include <cstdint>
#include <utility>

#include <fmt/format.h>

#include "protocol/control_batch.h"
#include "protocol/record_batch.h"
#include "shared/batch_index.h"
#include "shared/maintenance/maintenance.h"
#include "shared/shared_log.h"

namespace sluice::shared {

namespace {

struct batch_row {
    offset_t base = 0;
    offset_t last = 0;
    std::string object;
    uint64_t position = 0;
    uint64_t size = 0;
    int64_t max_timestamp = 0;
    int64_t append_time = -1;
};

}  // namespace

void shared_partition::submit_append(std::span<uint8_t> payload,
                                     const std::vector<protocol::validated_batch>& batches,
                                     timestamp_ms /*now*/, append_done done) {
    submit(payload, batches, false, std::move(done));
}

void shared_partition::submit(std::span<uint8_t> payload,
                              const std::vector<protocol::validated_batch>& batches,
                              bool log_append_time, append_done done) {
    if (batches.empty()) return done(error{errc::invalid_argument, "append of no batches"});
    _owner.enqueue({this, std::string(payload.begin(), payload.end()), batches, std::move(done), -1,
                    log_append_time});
}

namespace {

// The partition's log start, high watermark and last stable offset (the first offset of
// its oldest open transaction, or the high watermark), in one statement.
constexpr const char* bounds_sql =
    "SELECT p.log_start_offset, p.high_watermark, (SELECT MIN(o.first_offset) FROM "
    "sluice_txn_open o WHERE o.topic_id = p.topic_id AND o.partition_id = p.partition_id) "
    "FROM sluice_partitions p WHERE p.topic_id = $1 AND p.partition_id = $2";

}  // namespace

result<shared_partition::bounds> shared_partition::load_bounds() const {
    auto r = _owner.read_db().exec(bounds_sql, {_topic_id, std::to_string(_name.partition)});
    if (!r) return r.err();
    if (r->size() != 1) {
        return error{errc::not_found,
                     fmt::format("{}-{}: no such partition in the shared catalog (topic id {})",
                                 _name.topic, _name.partition, _topic_id)};
    }
    bounds b{r->int64(0, 0), r->int64(0, 1), r->int64(0, 1)};
    if (!r->is_null(0, 2)) b.last_stable = std::min(b.high_watermark, r->int64(0, 2));
    _start.store(b.log_start, std::memory_order_release);
    _hw.store(std::max(_hw.load(std::memory_order_acquire), b.high_watermark),
              std::memory_order_release);
    return b;
}

offset_t shared_partition::high_watermark() const {
    if (auto b = load_bounds(); b) return b->high_watermark;
    return _hw.load(std::memory_order_acquire);
}

offset_t shared_partition::last_stable_offset() const {
    if (auto b = load_bounds(); b) return b->last_stable;
    return _start.load(std::memory_order_acquire);  // unknown: nothing is surely stable
}

offset_t shared_partition::log_start_offset() const {
    if (auto b = load_bounds(); b) return b->log_start;
    return _start.load(std::memory_order_acquire);
}

result<log::read_result> shared_partition::read(offset_t offset, size_t max_bytes, bool min_one,
                                                bool committed) const {
    log::read_result out;
    std::vector<batch_row> rows;
    // One snapshot: the bounds and the batch rows agree.
    auto r = _owner.read_db().transact(
        isolation_level::repeatable_read, [&](pg_transaction& tx) -> result<void> {
            rows.clear();
            auto b = tx.exec(bounds_sql, {_topic_id, std::to_string(_name.partition)});
            if (!b) return b.err();
            if (b->size() != 1)
                return error{errc::not_found, fmt::format("{}-{}: no such partition in the "
                                                          "shared catalog",
                                                          _name.topic, _name.partition)};
            out.log_start_offset = b->int64(0, 0);
            out.high_watermark = out.last_stable_offset = out.log_end_offset = b->int64(0, 1);
            if (!b->is_null(0, 2))
                out.last_stable_offset = std::min(out.high_watermark, b->int64(0, 2));
            const offset_t bound = committed ? out.last_stable_offset : out.high_watermark;
            if (offset < out.log_start_offset || offset > out.high_watermark) {
                return error{errc::out_of_range,
                             fmt::format("offset {} outside [{}, {}]", offset, out.log_start_offset,
                                         out.high_watermark)};
            }
            if (offset >= bound) return {};
            auto q = tx.exec(
                "SELECT base_offset, last_offset, object_key, byte_position, byte_size, "
                "max_timestamp_ms, append_time_ms FROM sluice_batches WHERE topic_id = $1 AND "
                "partition_id = $2 AND last_offset >= $3 AND base_offset < $4 ORDER BY "
                "base_offset LIMIT 1000",
                {_topic_id, std::to_string(_name.partition), std::to_string(offset),
                 std::to_string(bound)});
            if (!q) return q.err();
            size_t total = 0;
            for (size_t i = 0; i < q->size(); ++i) {
                const auto size = static_cast<uint64_t>(q->int64(i, 4));
                if (total + size > max_bytes && !(rows.empty() && min_one)) break;
                rows.push_back({q->int64(i, 0), q->int64(i, 1), q->text(i, 2),
                                static_cast<uint64_t>(q->int64(i, 3)), size, q->int64(i, 5),
                                q->int64(i, 6)});
                total += size;
            }
            return {};
        });
    if (!r) return r.err();
    _start.store(out.log_start_offset, std::memory_order_release);
    _hw.store(std::max(_hw.load(std::memory_order_acquire), out.high_watermark),
              std::memory_order_release);
    // Adjacent batches of one object in one range read.
    std::string data;
    for (size_t i = 0; i < rows.size();) {
        size_t j = i + 1;
        uint64_t length = rows[i].size;
        while (j < rows.size() && rows[j].object == rows[i].object &&
               rows[j].position == rows[i].position + length) {
            length += rows[j].size;
            ++j;
        }
        if (auto got = _owner._cache.read(rows[i].object, rows[i].position, length, data); !got)
            return error{got.code(),
                         fmt::format("{}-{}: {}", _name.topic, _name.partition, got.err().message)};
        i = j;
    }
    out.data.assign(data.begin(), data.end());
    size_t at = 0;
    out.append_times.reserve(rows.size());
    for (const auto& row : rows) {
        restore_batch(out.data.data() + at, row.size, row.base, row.max_timestamp);
        out.append_times.push_back(row.append_time);
        at += row.size;
    }
    return out;
}

result<std::vector<log::aborted_txn>> shared_partition::aborted_transactions(offset_t from,
                                                                             offset_t to) const {
    auto q = _owner.read_db().exec(
        "SELECT producer_id, first_offset, last_offset FROM sluice_txn_aborted "
        "WHERE topic_id = $1 AND partition_id = $2 AND last_offset >= $3 AND first_offset < $4 "
        "ORDER BY last_offset",
        {_topic_id, std::to_string(_name.partition), std::to_string(from), std::to_string(to)});
    if (!q) return q.err();
    std::vector<log::aborted_txn> out;
    for (size_t i = 0; i < q->size(); ++i)
        out.push_back({q->int64(i, 0), q->int64(i, 1), q->int64(i, 2)});
    return out;
}

void shared_partition::write_marker(int64_t producer_id, int16_t producer_epoch, bool commit,
                                    timestamp_ms now, append_done done) {
    bytes batch = protocol::encode_control_batch(
        producer_id, producer_epoch,
        commit ? protocol::control_type::commit : protocol::control_type::abort, 0, now);
    auto h = protocol::read_batch_header(batch);
    if (!h) return done(error{errc::corrupt, "a marker batch without its header"});
    std::vector<protocol::validated_batch> batches{{0, *h, now}};
    _owner.enqueue({this, std::string(batch.begin(), batch.end()), std::move(batches),
                    std::move(done), static_cast<int8_t>(commit ? 1 : 0)});
}

result<std::vector<shared_partition::producer_row>> shared_partition::producers() const {
    auto q = _owner.read_db().exec(
        "SELECT s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp_ms, "
        "o.first_offset FROM sluice_producer_state s LEFT JOIN sluice_txn_open o "
        "ON o.topic_id = s.topic_id AND o.partition_id = s.partition_id "
        "AND o.producer_id = s.producer_id "
        "WHERE s.topic_id = $1 AND s.partition_id = $2 ORDER BY s.producer_id",
        {_topic_id, std::to_string(_name.partition)});
    if (!q) return q.err();
    std::vector<producer_row> out;
    for (size_t i = 0; i < q->size(); ++i) {
        out.push_back({q->int64(i, 0), static_cast<int16_t>(q->int64(i, 1)),
                       static_cast<int32_t>(q->int64(i, 2)), q->int64(i, 3),
                       q->is_null(i, 4) ? -1 : q->int64(i, 4)});
    }
    return out;
}

result<std::optional<log::offset_and_time>> shared_partition::find_in_batch(offset_t base,
                                                                            timestamp_ms ts,
                                                                            bool largest) const {
    auto got = read(base, 1, true);
    if (!got) return got.err();
    if (got->data.empty()) return std::optional<log::offset_and_time>{};
    auto h = protocol::read_batch_header(got->data);
    if (!h) return error{errc::corrupt, "a batch shorter than its header"};
    bytes_view batch(got->data.data(), std::min(got->data.size(), h->size_bytes()));
    std::optional<log::offset_and_time> found;
    const offset_t start = got->log_start_offset;
    bool ok = protocol::for_each_record(batch, [&](const protocol::record_view& rec) {
        if (rec.offset < start) return true;
        if (largest) {
            if (!found || rec.timestamp > found->timestamp)
                found = log::offset_and_time{rec.offset, rec.timestamp};
            return true;
        }
        if (rec.timestamp >= ts) {
            found = log::offset_and_time{rec.offset, rec.timestamp};
            return false;
        }
        return true;
    });
    if (!ok) return error{errc::corrupt, fmt::format("the batch at {} does not decode", base)};
    return found;
}

result<std::optional<log::offset_and_time>> shared_partition::offset_for_timestamp(
    timestamp_ms ts) const {
    offset_t after = -1;
    for (;;) {
        auto start = log_start_offset();
        auto q = _owner.read_db().exec(
            "SELECT base_offset FROM sluice_batches WHERE topic_id = $1 AND partition_id = $2 "
            "AND max_timestamp_ms >= $3 AND last_offset >= $4 AND base_offset > $5 "
            "ORDER BY base_offset LIMIT 1",
            {_topic_id, std::to_string(_name.partition), std::to_string(ts), std::to_string(start),
             std::to_string(after)});
        if (!q) return q.err();
        if (q->size() == 0) return std::optional<log::offset_and_time>{};
        const offset_t base = q->int64(0, 0);
        auto found = find_in_batch(std::max(base, start), ts, false);
        if (!found || *found) return found;
        after = base;  // its records below the log start were the only ones at ts or later
    }
}

result<std::optional<log::offset_and_time>> shared_partition::max_timestamp_offset() const {
    auto start = log_start_offset();
    auto q = _owner.read_db().exec(
        "SELECT base_offset FROM sluice_batches WHERE topic_id = $1 AND partition_id = $2 "
        "AND last_offset >= $3 ORDER BY max_timestamp_ms DESC, base_offset LIMIT 1",
        {_topic_id, std::to_string(_name.partition), std::to_string(start)});
    if (!q) return q.err();
    if (q->size() == 0) return std::optional<log::offset_and_time>{};
    return find_in_batch(std::max(q->int64(0, 0), start), 0, true);
}

offset_t shared_partition::wait_for_data(offset_t offset, std::chrono::milliseconds timeout) const {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    uint64_t refreshed = UINT64_MAX;  // the refresh generation last read from the database
    std::unique_lock lk(_owner._data_mu);
    for (;;) {
        if (refreshed != _owner._refresh_gen) {
            refreshed = _owner._refresh_gen;
            lk.unlock();
            (void)load_bounds();
            lk.lock();
        }
        if (_hw.load(std::memory_order_acquire) > offset) break;
        const uint64_t gen = _owner._data_gen;
        if (!_owner._data_cv.wait_until(lk, deadline, [&] { return _owner._data_gen != gen; }))
            break;
    }
    return _hw.load(std::memory_order_acquire);
}

result<offset_t> shared_partition::delete_records(offset_t offset) {
    auto r = maintenance::advance_log_start(_owner.read_db(), _topic_id, _name.partition, offset);
    if (!r) return r.err();
    _start.store(*r, std::memory_order_release);
    return *r;
}

}  // namespace sluice::shared

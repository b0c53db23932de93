#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>

#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "broker/fetch_session.h"
#include "broker/handlers/handlers.h"
#include "broker/session.h"
#include "common/clock.h"
#include "log/file_io.h"
#include "protocol/legacy_records.h"
#include "protocol/messages/fetch.h"
#include "shared/shared_log.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::fetch_request;
using protocol::fetch_response;

// Fetch v0-v1 read message format v0, v2-v3 v1 (Kafka down-converts for them).
std::optional<int8_t> fetch_magic(int16_t version) {
    if (version <= 1) return int8_t{0};
    if (version <= 3) return int8_t{1};
    return std::nullopt;
}

// The slice's batches as messages of `magic`; a read error leaves them out (logged).
bytes downconvert(const log::read_slice& s, int8_t magic, int64_t from_offset) {
    bytes raw(s.size);
    if (auto r = log::read_exact(*s.data_file, raw.data(), raw.size(), s.position); !r) {
        log_warn("fetch", "down-conversion read failed: {}", r.err().message);
        return {};
    }
    return protocol::downconvert_batches(raw, magic, from_offset);
}

// READ_COMMITTED: the aborted transactions with records from the fetch offset up to the
// last stable offset, which the client drops (as Kafka, the list may name transactions
// past the records returned). False (the partition answered in error) when the log
// fails.
bool add_aborted(const log::partition_store& plog, int64_t from, offset_t last_stable_offset,
                 fetch_response::partition& op) {
    auto aborted = plog.aborted_transactions(from, last_stable_offset);
    if (!aborted) {
        op.error_code = code(error_code::kafka_storage_error);
        op.high_watermark = op.last_stable_offset = op.log_start_offset = -1;
        op.records.data = bytes{};
        return false;
    }
    for (const auto& a : *aborted)
        op.aborted_transactions->push_back({a.producer_id, a.first_offset});
    return true;
}

// Shared mode: a partition read_all leaves to the shared log's reader threads.
struct shared_read {
    size_t topic = 0, partition = 0;  // in the response
    log::partition_store* plog = nullptr;
    int64_t offset = 0;
    size_t max_bytes = 0;  // the partition's
    bool committed = false;
};

struct fetch_outcome {
    fetch_response resp;
    size_t bytes = 0;
    bool error = false;
    std::vector<std::pair<const topic_state*, size_t>> sent;  // for metrics, when answered
    std::vector<shared_read> shared_reads;                    // shared mode, still to read
    std::vector<std::pair<std::string, size_t>> shared_sent;  // shared mode, by topic name
};

// Answers a partition in error as Kafka does: no offsets (-1), no records; a client
// out of range looks them up with ListOffsets.
void partition_error(fetch_response::partition& op, error_code e) {
    op.error_code = code(e);
    op.high_watermark = -1;
    op.last_stable_offset = -1;
    op.log_start_offset = -1;
    op.records.data = bytes{};
}

// Shared mode: the batches come as bytes, read through the shared log's cache from the
// object store (range GETs), and are sent from memory.
void read_shared(const log::partition_store& plog, int64_t offset, size_t limit, bool min_one,
                 bool committed, std::optional<int8_t> legacy_magic, fetch_response::partition& op,
                 fetch_outcome& o) {
    auto r = plog.read(offset, limit, min_one, committed);
    if (!r) {
        if (r.code() != errc::out_of_range)
            log_warn("fetch", "{}-{}: {}", plog.id().topic, plog.id().partition, r.err().message);
        partition_error(op, r.code() == errc::out_of_range ? error_code::offset_out_of_range
                                                           : error_code::kafka_storage_error);
        o.error = true;
        return;
    }
    op.high_watermark = r->high_watermark;
    op.last_stable_offset = r->last_stable_offset;
    op.log_start_offset = r->log_start_offset;
    if (committed && !r->data.empty() && !add_aborted(plog, offset, r->last_stable_offset, op)) {
        o.error = true;
        return;
    }
    o.bytes += r->data.size();
    if (legacy_magic && !r->data.empty())
        op.records.data = protocol::downconvert_batches(r->data, *legacy_magic, offset);
    else
        op.records.data = std::move(r->data);
}

// Reads every requested partition once. KIP-74: the first batch found is returned
// whole even above max_bytes or partition_max_bytes, so a consumer always progresses.
// denied[i]: the principal may not read the request's i-th topic.
fetch_outcome read_all(broker& b, const fetch_request& req, int16_t version,
                       const std::vector<bool>& denied) {
    const bool by_id = version >= 13;
    const bool hard_limit = version <= 2;
    const auto legacy_magic = fetch_magic(version);
    fetch_outcome o;
    o.resp.responses.reserve(req.topics.size());
    auto budget = static_cast<size_t>(std::max(req.max_bytes, 0));
    for (size_t i = 0; i < req.topics.size(); ++i) {
        const auto& rt = req.topics[i];
        auto& ot = o.resp.responses.emplace_back();
        ot.name = rt.name;
        ot.topic_id = rt.topic_id;
        const topic_state* t = by_id ? b.topics().find(rt.topic_id) : b.topics().find(rt.name);
        for (const auto& rp : rt.partitions) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = rp.partition;
            log::partition_store* plog = t && !denied[i] ? b.partition(*t, rp.partition) : nullptr;
            if (!plog) {
                op.error_code = code(denied[i]     ? error_code::topic_authorization_failed
                                     : by_id && !t ? error_code::unknown_topic_id
                                                   : error_code::unknown_topic_or_partition);
                op.records.data = bytes{};
                op.aborted_transactions.emplace();  // as Kafka answers an unknown partition
                o.error = true;
                continue;
            }
            // Kafka answers null at read_uncommitted and a list at read_committed.
            const bool committed = req.isolation_level == 1;
            if (committed) op.aborted_transactions.emplace();
            size_t limit = std::min(budget - std::min(budget, o.bytes),
                                    static_cast<size_t>(std::max(rp.partition_max_bytes, 0)));
            // Fetch v0-v2 have a hard limit (KIP-74 came with v3): a first batch above
            // it returns nothing, as in Kafka. READ_COMMITTED stops at the last stable
            // offset.
            if (b.shared() && !b.member()) {
                // Its lease passed (broker::member): retriable; the client looks again.
                partition_error(op, error_code::not_leader_or_follower);
                o.error = true;
                continue;
            }
            if (b.shared()) {
                o.shared_reads.push_back(
                    {o.resp.responses.size() - 1, ot.partitions.size() - 1, plog, rp.fetch_offset,
                     static_cast<size_t>(std::max(rp.partition_max_bytes, 0)), committed});
                continue;
            }
            auto* local = static_cast<log::partition_log*>(plog);
            auto r = local->read_slice_at(rp.fetch_offset, limit, o.bytes == 0 && !hard_limit,
                                          committed);
            if (!r) {
                op.error_code =
                    code(r.code() == errc::out_of_range ? error_code::offset_out_of_range
                                                        : error_code::kafka_storage_error);
                // Kafka's answer for a partition in error carries no offsets (-1): a
                // client that is out of range looks them up with ListOffsets.
                op.high_watermark = -1;
                op.last_stable_offset = -1;
                op.log_start_offset = -1;
                op.records.data = bytes{};
                o.error = true;
                continue;
            }
            op.high_watermark = r->high_watermark;
            op.last_stable_offset = r->last_stable_offset;
            op.log_start_offset = r->log_start_offset;
            if (committed && r->size > 0 &&
                !add_aborted(*plog, rp.fetch_offset, r->last_stable_offset, op)) {
                o.error = true;
                continue;
            }
            o.bytes += r->size;
            if (r->size > 0) o.sent.emplace_back(t, r->size);
            op.records.data = bytes{};
            if (r->size > 0 && legacy_magic)
                op.records.data = downconvert(*r, *legacy_magic, rp.fetch_offset);
            else if (r->size > 0)
                op.records.slice = {r->data_file, r->data_file->fd(), r->position, r->size};
        }
    }
    return o;
}

// Shared mode: the reads read_all left run on one of the shared log's reader threads
// (they wait on the database and the object store, which the event loop must not), in
// the request's order with its byte budget; then `done` runs on the loop thread.
void read_shared_all(broker& b, const fetch_request& req, int16_t version,
                     const std::shared_ptr<fetch_outcome>& o,
                     std::function<void(fetch_outcome&)> done) {
    if (o->shared_reads.empty()) return done(*o);
    const bool hard_limit = version <= 2;
    const auto legacy_magic = fetch_magic(version);
    const auto budget = static_cast<size_t>(std::max(req.max_bytes, 0));
    auto& loop = b.loop();
    b.shared_log()->run_read(
        [&loop, o, done = std::move(done), hard_limit, legacy_magic, budget]() mutable {
            for (const auto& r : o->shared_reads) {
                auto& ot = o->resp.responses[r.topic];
                auto& op = ot.partitions[r.partition];
                const size_t limit = std::min(budget - std::min(budget, o->bytes), r.max_bytes);
                read_shared(*r.plog, r.offset, limit, o->bytes == 0 && !hard_limit, r.committed,
                            legacy_magic, op, *o);
                if (op.records.size() > 0)
                    o->shared_sent.emplace_back(r.plog->id().topic, op.records.size());
            }
            // `done` holds the request: let go on the loop, not here.
            loop.post([o, done = std::move(done)] { done(*o); });
        });
}

struct parked_fetch {
    request_context ctx;
    fetch_request req;
    fetch_context session;
    std::vector<bool> denied;
};

// Answers what was read, as the request's fetch session makes it (KIP-227).
void answer(const request_context& ctx, const fetch_request& req, const fetch_context& session,
            fetch_response& resp) {
    finish_fetch(ctx.b.fetch_sessions(), session, req, resp, steady_ms());
    ctx.respond(resp);
}

std::vector<topic_partition> requested(broker& b, const fetch_request& req, bool by_id) {
    std::vector<topic_partition> tps;
    for (const auto& rt : req.topics) {
        const topic_state* t = by_id ? b.topics().find(rt.topic_id) : b.topics().find(rt.name);
        for (const auto& rp : rt.partitions)
            tps.push_back({t ? t->info.name : rt.name, rp.partition});
    }
    return tps;
}

void fetch_shared(const std::shared_ptr<parked_fetch>& p,
                  std::chrono::steady_clock::time_point deadline, bool last);

// Shared mode, on the loop thread once a read is done: answers, or parks until a
// requested partition moves or the deadline passes. A commit noticed while the read ran
// (broker::data_version moved from `version`) reads again at once.
void after_shared_read(const std::shared_ptr<parked_fetch>& p, fetch_outcome& got,
                       std::chrono::steady_clock::time_point deadline, bool last,
                       const std::vector<topic_partition>& tps, uint64_t version) {
    auto& b = p->ctx.b;
    if (p->ctx.sess->closed()) return;
    for (auto& [name, size] : got.shared_sent)
        if (const topic_state* t = b.topics().find(name)) got.sent.emplace_back(t, size);
    const auto min_bytes = static_cast<size_t>(std::max(p->req.min_bytes, 0));
    const auto now = std::chrono::steady_clock::now();
    if (last || got.bytes >= min_bytes || got.error || p->req.topics.empty() || b.shutting_down() ||
        now >= deadline) {
        count_fetched(got.sent);
        answer(p->ctx, p->req, p->session, got.resp);
        return;
    }
    if (b.data_version(tps) != version) return fetch_shared(p, deadline, false);
    b.wait_for_data(tps, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now),
                    [p, deadline](bool timed_out) {
                        if (!p->ctx.sess->closed()) fetch_shared(p, deadline, timed_out);
                        return true;
                    });
}

// Shared mode: reads off the loop (read_shared_all), then after_shared_read; `last`:
// answer whatever is read.
void fetch_shared(const std::shared_ptr<parked_fetch>& p,
                  std::chrono::steady_clock::time_point deadline, bool last) {
    auto& b = p->ctx.b;
    auto tps = requested(b, p->req, p->ctx.version() >= 13);
    const uint64_t version = b.data_version(tps);
    auto o = std::make_shared<fetch_outcome>(read_all(b, p->req, p->ctx.version(), p->denied));
    read_shared_all(b, p->req, p->ctx.version(), o,
                    [p, deadline, last, tps = std::move(tps), version](fetch_outcome& got) {
                        after_shared_read(p, got, deadline, last, tps, version);
                    });
}

}  // namespace

void handle_fetch(const request_context& ctx, request_body body) {
    fetch_request req;
    if (!decode_request(ctx, body, req)) return;
    bool by_id = ctx.version() >= 13;
    auto& b = ctx.b;
    // An incremental fetch's topics become every partition of its session.
    auto session = begin_fetch(b.fetch_sessions(), req, ctx.version(), steady_ms());
    if (session.k == fetch_context::kind::error) {
        fetch_response resp;
        answer(ctx, req, session, resp);
        return;
    }
    std::vector<bool> denied(req.topics.size());
    for (size_t i = 0; i < req.topics.size(); ++i) {
        const topic_state* t =
            by_id ? b.topics().find(req.topics[i].topic_id) : b.topics().find(req.topics[i].name);
        denied[i] =
            !ctx.allowed(security::resource_kind::topic, t ? t->info.name : req.topics[i].name);
    }
    if (b.shared()) {
        const bool no_wait = req.max_wait_ms <= 0;
        const auto deadline = std::chrono::steady_clock::now() +
                              std::chrono::milliseconds(std::max(req.max_wait_ms, 0));
        fetch_shared(std::make_shared<parked_fetch>(
                         parked_fetch{ctx, std::move(req), std::move(session), std::move(denied)}),
                     deadline, no_wait);
        return;
    }
    auto o = read_all(b, req, ctx.version(), denied);
    auto min_bytes = static_cast<size_t>(std::max(req.min_bytes, 0));
    if (req.max_wait_ms <= 0 || o.bytes >= min_bytes || o.error || req.topics.empty() ||
        b.shutting_down()) {
        count_fetched(o.sent);
        answer(ctx, req, session, o.resp);
        return;
    }
    // Long poll: park until a requested partition's high watermark moves or max_wait
    // passes. A parked fetch costs a timer and a map entry, no CPU.
    std::vector<topic_partition> tps;
    for (const auto& rt : req.topics) {
        const topic_state* t = by_id ? b.topics().find(rt.topic_id) : b.topics().find(rt.name);
        for (const auto& rp : rt.partitions)
            tps.push_back({t ? t->info.name : rt.name, rp.partition});
    }
    auto p = std::make_shared<parked_fetch>(
        parked_fetch{ctx, std::move(req), std::move(session), std::move(denied)});
    b.wait_for_data(tps, std::chrono::milliseconds(p->req.max_wait_ms),
                    [p, min_bytes](bool timed_out) {
                        if (p->ctx.sess->closed()) return true;
                        auto again = read_all(p->ctx.b, p->req, p->ctx.version(), p->denied);
                        if (!timed_out && again.bytes < min_bytes && !again.error) return false;
                        count_fetched(again.sent);
                        answer(p->ctx, p->req, p->session, again.resp);
                        return true;
                    });
}

}  // namespace sluice::broker

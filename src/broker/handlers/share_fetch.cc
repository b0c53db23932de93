#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "broker/broker_metrics.h"
#include "broker/handlers/handlers.h"
#include "broker/handlers/share_common.h"
#include "broker/session.h"
#include "log/producer_state.h"
#include "protocol/record_batch.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::share_fetch_request;
using protocol::share_fetch_response;

// Kafka's share consumer asks for up to 500 records (max.poll.records) and 50 MiB; one
// partition's read is kept to this much memory, the first batch whole.
constexpr size_t max_read_bytes = size_t{1} << 20;
constexpr int32_t default_max_records = 500;

struct share_read {
    share_key key;
    error_code error = error_code::none;
    bytes records;
    std::vector<group::share::acquired_range> acquired;
};

// The headers of the whole batches in `data`.
std::vector<protocol::batch_header> whole_batches(const bytes& data) {
    std::vector<protocol::batch_header> out;
    size_t pos = 0;
    while (pos < data.size()) {
        auto h = protocol::read_batch_header(bytes_view(data).subspan(pos));
        if (!h || h->batch_length <= 0 || data.size() - pos < h->size_bytes()) break;
        pos += h->size_bytes();
        out.push_back(*h);
    }
    return out;
}

// read_committed: what a share consumer must never get, control records and the records
// of aborted transactions (the log's aborted-transaction index, as Fetch uses it).
result<std::vector<group::share::offset_range>> not_committed(
    const log::partition_store& plog, const std::vector<protocol::batch_header>& batches) {
    std::vector<group::share::offset_range> out;
    if (batches.empty()) return out;
    auto aborted =
        plog.aborted_transactions(batches.front().base_offset, batches.back().last_offset() + 1);
    if (!aborted) return aborted.err();
    for (const auto& h : batches)
        if (h.is_control() || log::in_aborted(*aborted, h))
            out.push_back({h.base_offset, h.last_offset()});
    return out;
}

// A partition of the member's share session, looked up on the loop thread.
struct share_target {
    group::share::tp partition;
    share_key key;
    log::partition_store* plog = nullptr;  // nullptr: no such partition
};

// One ShareFetch's work for share_work_queue, made on the loop thread with what it needs
// of the broker (it may run off the loop), and what it found.
struct fetch_work {
    group::share::partition_work work;
    std::string member;
    std::vector<share_ack> acks;  // applied by the first job only
    std::vector<share_target> parts;
    bool read_committed = false;
    int32_t max_records = 0;
    int32_t max_bytes = 0;
    std::map<share_key, error_code> acked;
    std::vector<share_read> reads;
};

// Applies the request's acknowledgements; only the partitions that carried some get an
// answer for them.
void apply_fetch_acks(fetch_work& w) {
    w.acked = apply_acks(w.work, w.member, w.acks);
    for (const auto& a : w.acks)
        if (auto it = w.acked.find(a.key);
            a.batches.empty() && it != w.acked.end() && it->second == error_code::none)
            w.acked.erase(it);
}

// Reads every partition of the member's share session from where the group's window
// says and acquires what was read, up to max_records in all.
std::vector<share_read> acquire_all(fetch_work& w) {
    std::vector<share_read> out;
    int32_t budget = w.max_records > 0 ? w.max_records : default_max_records;
    auto bytes_left = static_cast<size_t>(std::max(w.max_bytes, 0));
    const bool committed = w.read_committed;
    for (const auto& [p, key, plog] : w.parts) {
        if (budget <= 0 || bytes_left == 0) break;
        if (!plog) {
            out.push_back({key, error_code::unknown_topic_or_partition, {}, {}});
            continue;
        }
        // Reads again while what was read was all skipped (read_committed) and the
        // window moved past it.
        for (int tries = 0; tries < 8; ++tries) {
            const int64_t bound = committed ? plog->last_stable_offset() : plog->high_watermark();
            const int64_t at = w.work.fetch_position(p, plog->log_start_offset(), bound);
            if (at < 0) break;
            auto r = plog->read(at, std::min(bytes_left, max_read_bytes), true, committed);
            if (!r) {
                out.push_back(
                    {key, storage_error_or(r.code(), error_code::offset_out_of_range), {}, {}});
                break;
            }
            const auto batches = whole_batches(r->data);
            if (batches.empty() || batches.back().last_offset() < at) break;
            auto skip = committed ? not_committed(*plog, batches)
                                  : result<std::vector<group::share::offset_range>>(
                                        std::vector<group::share::offset_range>{});
            auto got =
                skip ? w.work.acquire(w.member, p, at, batches.back().last_offset(), budget, *skip)
                     : result<std::vector<group::share::acquired_range>>(skip.err());
            if (!got) {
                out.push_back({key, error_code::kafka_storage_error, {}, {}});
                break;
            }
            if (got->empty()) {
                if (skip->empty()) break;
                continue;
            }
            for (const auto& a : *got) budget -= static_cast<int32_t>(a.last - a.first + 1);
            bytes_left -= std::min(bytes_left, r->data.size());
            out.push_back({key, error_code::none, std::move(r->data), std::move(*got)});
            break;
        }
    }
    return out;
}

share_fetch_response respond_with(broker& b, const std::string& group,
                                  const std::map<share_key, error_code>& acks,
                                  std::vector<share_read> reads) {
    share_fetch_response resp;
    resp.acquisition_lock_timeout_ms = b.share_groups().settings(group).record_lock_duration_ms;
    std::map<share_key, share_fetch_response::partition> parts;
    auto entry = [&](const share_key& k) -> share_fetch_response::partition& {
        auto& p = parts[k];
        p.partition_index = k.second;
        const topic_state* ts = b.topics().find(catalog::uuid(k.first));
        p.current_leader = {ts ? b.leader_for(*ts, k.second) : b.leader_for(k.second), 0};
        p.records.data = bytes{};
        return p;
    };
    for (const auto& [k, e] : acks) entry(k).acknowledge_error_code = code(e);
    for (auto& r : reads) {
        // As Kafka: a partition with nothing acquired, no error and no acknowledgement
        // answer is left out.
        if (r.acquired.empty() && r.error == error_code::none && !acks.count(r.key)) continue;
        auto& p = entry(r.key);
        p.error_code = code(r.error);
        p.records.data = std::move(r.records);
        for (const auto& a : r.acquired) p.acquired.push_back({a.first, a.last, a.delivery_count});
    }
    for (auto& [k, p] : parts) {
        if (resp.responses.empty() || resp.responses.back().topic_id != k.first)
            resp.responses.push_back({k.first, {}});
        resp.responses.back().partitions.push_back(std::move(p));
    }
    return resp;
}

bool acquired_any(const std::vector<share_read>& reads) {
    return std::any_of(reads.begin(), reads.end(), [](const auto& r) {
        return !r.acquired.empty() || r.error != error_code::none;
    });
}

// Loop thread: the session's partitions as the work reads them.
std::vector<share_target> targets(broker& b, const std::vector<group::share::tp>& parts) {
    std::vector<share_target> out;
    for (const auto& p : parts) {
        const topic_state* ts = b.topics().find(p.first);
        // Shared mode: the shared log's partition, read on a reader thread.
        log::partition_store* plog = ts ? b.partition(*ts, p.second) : nullptr;
        out.push_back({p, plog ? share_key{ts->info.id, p.second} : share_key{{}, p.second}, plog});
    }
    return out;
}

struct parked_share_fetch {
    request_context ctx;
    std::string group;
    std::chrono::steady_clock::time_point deadline;
    std::vector<topic_partition> tps;
    std::shared_ptr<fetch_work> w;
};

void read_share(const std::shared_ptr<parked_share_fetch>& p, bool first, bool last);

// Loop thread, after a read: answers, or waits until a session partition's high
// watermark moves or the deadline passes. A commit noticed while the read ran
// (broker::data_version moved from `version`) reads again at once.
void after_read(const std::shared_ptr<parked_share_fetch>& p, bool last, uint64_t version) {
    auto& b = p->ctx.b;
    if (p->ctx.sess->closed()) return;
    const auto now = std::chrono::steady_clock::now();
    if (last || acquired_any(p->w->reads) || p->tps.empty() || b.shutting_down() ||
        now >= p->deadline) {
        p->ctx.respond(respond_with(b, p->group, p->w->acked, std::move(p->w->reads)));
        return;
    }
    if (b.data_version(p->tps) != version) return read_share(p, false, false);
    b.wait_for_data(p->tps,
                    std::chrono::duration_cast<std::chrono::milliseconds>(p->deadline - now),
                    [p](bool timed_out) {
                        if (!p->ctx.sess->closed()) read_share(p, false, timed_out);
                        return true;
                    });
}

// Applies the acknowledgements (the first time) and acquires, through the broker's
// share_work_queue, then after_read; `last`: answer whatever is read.
void read_share(const std::shared_ptr<parked_share_fetch>& p, bool first, bool last) {
    auto& b = p->ctx.b;
    const uint64_t version = b.data_version(p->tps);
    b.share_work().run(
        p->group, p->w->member,
        [w = p->w, first] {
            if (first) apply_fetch_acks(*w);
            w->reads = acquire_all(*w);
        },
        [p, last, version] { after_read(p, last, version); });
}

// The last request of a closing consumer (epoch -1): acknowledgements only, then what the
// member still holds goes back.
void close_session(const request_context& ctx, const std::string& group,
                   const std::shared_ptr<fetch_work>& w) {
    auto release = ctx.b.share_groups().end_session(group, w->member);
    ctx.b.share_work().run(
        group, w->member,
        [w, release = std::move(release)] {
            apply_fetch_acks(*w);
            w->work.release(w->member, release);
        },
        [ctx, group, w] { ctx.respond(respond_with(ctx.b, group, w->acked, {})); });
}

}  // namespace

void handle_share_fetch(const request_context& ctx, request_body body) {
    share_fetch_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    const std::string group = req.group_id.value_or("");
    const std::string member = req.member_id.value_or("");
    if (!ctx.allowed(security::resource_kind::group, group)) {
        share_fetch_response resp;
        resp.error_code = code(error_code::group_authorization_failed);
        ctx.respond(resp);
        return;
    }
    std::vector<group::share::tp> added, forgotten;
    for (const auto& t : req.topics)
        if (const topic_state* ts = b.topics().find(catalog::uuid(t.topic_id)))
            if (ctx.allowed(security::resource_kind::topic, ts->info.name))
                for (const auto& p : t.partitions)
                    added.emplace_back(ts->info.name, p.partition_index);
    for (const auto& t : req.forgotten_topics_data)
        if (const topic_state* ts = b.topics().find(catalog::uuid(t.topic_id)))
            for (int32_t p : t.partitions) forgotten.emplace_back(ts->info.name, p);
    auto s = b.share_groups().use_session(group, member, req.share_session_epoch, added, forgotten);
    if (s.error != error_code::none) {
        share_fetch_response resp;
        resp.error_code = code(s.error);
        ctx.respond(resp);
        return;
    }
    auto& sg = b.share_groups();
    auto w = std::make_shared<fetch_work>(fetch_work{sg.work(group),
                                                     member,
                                                     resolve_acks(b, req.topics),
                                                     {},
                                                     sg.settings(group).read_committed,
                                                     req.max_records,
                                                     req.max_bytes,
                                                     {},
                                                     {}});
    if (req.share_session_epoch == -1) return close_session(ctx, group, w);
    w->parts = targets(b, s.partitions);
    std::vector<topic_partition> tps;
    for (const auto& p : s.partitions) tps.push_back({p.first, p.second});
    const bool no_wait = req.max_wait_ms <= 0 || s.partitions.empty();
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(req.max_wait_ms, 0));
    read_share(std::make_shared<parked_share_fetch>(
                   parked_share_fetch{ctx, group, deadline, std::move(tps), std::move(w)}),
               true, no_wait);
}

}  // namespace sluice::broker

#include <algorithm>

#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "broker/handlers/handlers.h"
#include "common/clock.h"
#include "protocol/legacy_records.h"
#include "protocol/messages/produce.h"
#include "protocol/record_batch.h"
#include "shared/shared_log.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::produce_response;

error_code to_error(errc e) {
    switch (e) {
        case errc::too_large:
            return error_code::message_too_large;
        case errc::invalid_record:
            return error_code::invalid_record;
        case errc::invalid_timestamp:
            return error_code::invalid_timestamp;
        case errc::corrupt:
            return error_code::corrupt_message;
        case errc::unsupported:
            return error_code::unsupported_compression_type;
        case errc::io_error:
            return error_code::kafka_storage_error;
        default:
            return error_code::unknown_server_error;
    }
}

// A topic whose compression.type names a codec stores every batch with it: true when
// one of `batches` has another (Kafka recompresses those on append).
bool needs_codec(const std::vector<protocol::validated_batch>& batches, protocol::compression c) {
    return std::any_of(batches.begin(), batches.end(),
                       [&](const auto& vb) { return vb.header.codec() != c; });
}

error_code sequence_error(log::sequence_verdict v) {
    switch (v) {
        case log::sequence_verdict::out_of_order:
            return error_code::out_of_order_sequence_number;
        case log::sequence_verdict::invalid_epoch:
            return error_code::invalid_producer_epoch;
        case log::sequence_verdict::unknown_producer:
            return error_code::unknown_producer_id;
        default:
            return error_code::unknown_server_error;
    }
}

// Why an idempotent batch is malformed (nullopt: it is not, or is not idempotent). As
// Kafka, such a request carries exactly one batch per partition, so that a retry is
// recognized batch for batch.
std::optional<std::string> idempotence_error(const protocol::batch_header& h, size_t batches) {
    if (h.producer_id < 0) return std::nullopt;
    if (batches != 1)
        return fmt::format(
            "a produce from idempotent producer {} carries {} batches for one "
            "partition; exactly one is allowed",
            h.producer_id, batches);
    if (h.producer_epoch < 0 || h.base_sequence < 0)
        return fmt::format(
            "idempotent batch of producer {} has epoch {} and sequence {}; "
            "neither may be negative",
            h.producer_id, h.producer_epoch, h.base_sequence);
    return std::nullopt;
}

// A transactional batch may go only to a partition of its producer's ongoing
// transaction: Produce v12 (transaction version 2) adds the partition itself, older
// versions must have added it with AddPartitionsToTxn (KIP-890 part 1's verification:
// TRANSACTION_ABORTABLE from v11, INVALID_TXN_STATE before). Returns the refusal, if any.
std::optional<std::pair<error_code, std::string>> check_transactional(
    const request_context& ctx, const std::optional<std::string>& txn_id, const topic_partition& tp,
    const protocol::batch_header& h) {
    // As Kafka: transactional records need a transactional id the producer may write as.
    if (!txn_id || txn_id->empty())
        return std::pair{error_code::transactional_id_authorization_failed,
                         fmt::format("a transactional batch of producer {} in a produce request "
                                     "without a transactional id",
                                     h.producer_id)};
    if (!ctx.allowed(security::resource_kind::transactional_id, *txn_id))
        return std::pair{
            error_code::transactional_id_authorization_failed,
            fmt::format("KafkaWrite on sluice:transactional-id:{} is needed", *txn_id)};
    auto& txns = ctx.b.txns();
    auto e = ctx.version() >= 12
                 ? txns.add_partitions(*txn_id, h.producer_id, h.producer_epoch, {tp}, true)
                 : txns.verify_partitions(*txn_id, h.producer_id, h.producer_epoch, {tp});
    if (e == txn::txn_error::none) return std::nullopt;
    error_code c = error_code::invalid_txn_state;
    switch (e) {
        case txn::txn_error::producer_fenced:
            c = error_code::invalid_producer_epoch;
            break;
        case txn::txn_error::invalid_producer_id_mapping:
            c = error_code::invalid_producer_id_mapping;
            break;
        // KIP-890: Produce v11 clients abort the transaction on TRANSACTION_ABORTABLE.
        case txn::txn_error::not_in_transaction:
            if (ctx.version() >= 11) c = error_code::transaction_abortable;
            break;
        // Retriable for every client, as Kafka answers while the coordinator is busy.
        case txn::txn_error::concurrent_transactions:
        case txn::txn_error::not_available:
            c = error_code::not_enough_replicas;
            break;
        default:
            break;
    }
    return std::pair{c, fmt::format("transactional id '{}', producer {} epoch {}: {}", *txn_id,
                                    h.producer_id, h.producer_epoch, txn::error_text(e))};
}

// Transaction version 2 (Produce v12): the request's partitions with transactional
// batches join the transaction in one durable write of its state, as Kafka's
// ReplicaManager adds a request's partitions in one AddPartitionsToTxn, rather than one
// write per partition; check_transactional then finds each one there. Nothing is added
// when anything about it would be refused: the per-partition checks answer those.
void add_request_partitions(const request_context& ctx, const protocol::produce_request& req) {
    const auto& id = req.transactional_id;
    if (ctx.version() < 12 || !id || id->empty() ||
        !ctx.allowed(security::resource_kind::transactional_id, *id))
        return;
    std::vector<topic_partition> tps;
    std::optional<protocol::batch_header> first;
    for (const auto& td : req.topics) {
        const topic_state* t = ctx.b.topics().find(td.name);
        if (!t || !ctx.allowed(security::resource_kind::topic, td.name)) continue;
        for (const auto& pd : td.partitions) {
            if (!pd.records || pd.index < 0 || pd.index >= t->info.partitions) continue;
            auto h = protocol::read_batch_header(*pd.records);
            if (!h || h->magic != 2 || !h->is_transactional() || h->is_control()) continue;
            if (first && (h->producer_id != first->producer_id ||
                          h->producer_epoch != first->producer_epoch))
                return;
            first = *h;
            tps.push_back({td.name, pd.index});
        }
    }
    if (tps.size() > 1)
        ctx.b.txns().add_partitions(*id, first->producer_id, first->producer_epoch, tps, true);
}

// Shared by the durability and expansion callbacks and the timeout of one request.
struct pending_produce {
    request_context ctx;
    produce_response resp;
    size_t waiting = 0;
    std::vector<produce_response::partition*> not_durable;  // until its callback runs
    bool answered = false;
    net::event_loop::timer_id timer = 0;

    void answer() {
        if (answered) return;
        answered = true;
        ctx.b.loop().cancel_timer(timer);
        ctx.respond(resp);
    }
};

// A refused partition: the code, and the reason in the answer (Produce v8+ sends it,
// older versions drop it) and in the log; a fault of one record also names the record
// (record_errors, v8+), as Kafka's answers do.
void refuse(const request_context& ctx, const std::string& topic, int32_t partition,
            produce_response::partition& out, error_code e, const std::string& why,
            std::optional<int32_t> record = std::nullopt) {
    out.error_code = code(e);
    out.error_message = why;
    if (record) out.record_errors.push_back({*record, why});
    log_warn("produce", "{}: {}-{}: {}: {}", ctx.client(), topic, partition,
             protocol::error_name(e), why);
}

// Shared mode: an append goes into the shared log's produce window; `out` is filled on
// the loop thread once the window's object is stored and its database transaction
// committed (or failed).
using shared_submit = std::function<void(
    log::partition_store&, const topic_state&, std::span<uint8_t>,
    const std::vector<protocol::validated_batch>&, timestamp_ms, produce_response::partition&)>;

// Validates and appends one partition's batches; fills `out` (shared mode: hands them to
// `submit`, which fills it later). Returns the partition log when something was appended.
log::partition_store* append_one(const request_context& ctx, request_body body,
                                 const std::optional<std::string>& txn_id, const std::string& topic,
                                 const protocol::produce_request::partition_data& pd,
                                 produce_response::partition& out, offset_t& last_offset,
                                 const shared_submit& submit) {
    auto& b = ctx.b;
    const topic_state* t = b.topics().find(topic);
    log::partition_store* plog = t ? b.partition(*t, pd.index) : nullptr;
    auto fail = [&](error_code e, const std::string& why,
                    std::optional<int32_t> record = std::nullopt) -> log::partition_store* {
        refuse(ctx, topic, pd.index, out, e, why, record);
        // Kafka's refusals of records carry the log start, except for a batch too large,
        // corrupt or not written (its UNKNOWN_LOG_APPEND_INFO).
        if (plog && e != error_code::message_too_large && e != error_code::record_list_too_large &&
            e != error_code::corrupt_message && e != error_code::kafka_storage_error &&
            e != error_code::invalid_required_acks && e != error_code::not_enough_replicas &&
            e != error_code::not_leader_or_follower &&
            e != error_code::transactional_id_authorization_failed)
            // Shared mode: the value last read, as the event loop must not wait on the database.
            out.log_start_offset =
                b.shared() ? static_cast<shared::shared_partition*>(plog)->cached_log_start()
                           : plog->log_start_offset();
        return nullptr;
    };
    if (!t) log_unknown_topic(ctx, "Produce", topic);
    if (!plog)
        return fail(error_code::unknown_topic_or_partition,
                    t ? fmt::format("topic {} has no partition {}", topic, pd.index)
                      : fmt::format("topic {} does not exist", topic));
    if (!b.member())
        return fail(error_code::not_leader_or_follower,
                    "this broker's lease in the shared catalog has passed (the database is out "
                    "of reach); it serves again once renewed");
    if (!pd.records) return fail(error_code::invalid_record, "partition data holds no records");
    protocol::batch_limits lim;
    lim.max_batch_bytes = t->log_cfg.max_message_bytes;
    lim.require_keys = t->log_cfg.compact;
    lim.max_decompressed_bytes = protocol::decompressed_limit(lim.max_batch_bytes);
    lim.allow_zstd = ctx.version() >= 7;
    const int64_t now = now_ms();
    if (t->log_cfg.timestamp_type == protocol::timestamp_type::create_time) {
        constexpr int64_t top = std::numeric_limits<int64_t>::max();
        const auto& c = t->log_cfg;
        lim.min_timestamp = now - std::min(c.timestamp_before_max_ms, top);
        lim.max_timestamp =
            c.timestamp_after_max_ms > top - now ? top : now + c.timestamp_after_max_ms;
    }
    // Produce v0-v2 may carry message formats v0/v1: stored as v2 batches (Kafka's
    // up-conversion), which the append then patches in this buffer.
    bytes converted;
    bytes_view records = *pd.records;
    if (auto m = protocol::first_magic(records); ctx.version() < 3 && m && *m < 2) {
        auto c = protocol::upconvert_message_set(records, lim.max_decompressed_bytes);
        if (!c)
            return fail(to_error(c.code()),
                        fmt::format("message set v{}: {}", *m, c.err().message));
        converted = std::move(*c);
        records = converted;
    }
    protocol::batch_fault fault;
    auto batches = protocol::validate_batches(records, lim, &fault);
    if (!batches) return fail(to_error(batches.code()), batches.err().message, fault.record_index);
    for (const auto& vb : *batches) {
        // As Kafka: a batch must fit in one segment.
        if (static_cast<int64_t>(vb.header.size_bytes()) > t->log_cfg.segment_bytes)
            return fail(error_code::record_list_too_large,
                        fmt::format("batch of {} bytes is larger than the topic's segment.bytes "
                                    "({})",
                                    vb.header.size_bytes(), t->log_cfg.segment_bytes));
        if (vb.header.is_transactional()) {
            if (auto refusal = check_transactional(ctx, txn_id, {topic, pd.index}, vb.header))
                return fail(refusal->first, refusal->second);
        }
        if (auto why = idempotence_error(vb.header, batches->size()))
            return fail(error_code::invalid_record, *why);
    }
    // The batches as they sit in the request, which append patches (offsets, times):
    // decoding gave a view into `body`, and the request's bytes are the handler's.
    const auto at = static_cast<size_t>(pd.records->data() - body.data());
    std::span<uint8_t> payload =
        converted.empty() ? body.subspan(at, pd.records->size()) : std::span<uint8_t>(converted);
    bytes recompressed;
    if (const auto& target = t->log_cfg.compression; target && needs_codec(*batches, *target)) {
        auto r = protocol::recompress_batches(payload, *batches, *target,
                                              t->log_cfg.compression_level, lim.max_batch_bytes);
        if (!r) return fail(to_error(r.code()), r.err().message);
        recompressed = std::move(*r);
        payload = recompressed;
    }
    if (b.shared()) {
        submit(*plog, *t, payload, *batches, now, out);
        return plog;
    }
    auto info = static_cast<log::partition_log*>(plog)->append(payload, *batches, now);
    if (!info) return fail(to_error(info.code()), info.err().message);
    if (info->verdict == log::sequence_verdict::duplicate) {
        // A retry of a batch already appended: its first answer, and nothing appended
        // (Kafka answers NONE with the original offsets).
        log_info("produce",
                 "{}: {}-{}: duplicate batch from producer {}; answered with its offsets {}..{}",
                 ctx.client(), topic, pd.index, batches->front().header.producer_id,
                 info->base_offset, info->last_offset);
        out.base_offset = info->base_offset;
        out.log_start_offset = info->log_start_offset;
        // The first append may not be durable yet: acks=-1 waits for it all the same.
        last_offset = info->last_offset;
        return plog;
    }
    if (info->verdict != log::sequence_verdict::append)
        return fail(sequence_error(info->verdict), info->reason);
    count_produced(*t, payload.size(), info->last_offset - info->base_offset + 1);
    out.base_offset = info->base_offset;
    out.log_append_time_ms = info->log_append_time;
    out.log_start_offset = info->log_start_offset;
    last_offset = info->last_offset;
    return plog;
}

// Shared mode: a partition's append committed (or refused, or failed), on the loop
// thread. An answer already sent (timed out) is not touched.
void shared_appended(const std::shared_ptr<pending_produce>& p, produce_response::partition& out,
                     const topic_partition& tp, size_t bytes, const result<log::append_info>& r) {
    if (p->answered) {
        if (!r)
            log_warn("produce", "{}-{}: after the answer: {}", tp.topic, tp.partition,
                     r.err().message);
        return;
    }
    if (!r) {
        // Nothing was committed (or the outcome is unknown, which an idempotent
        // producer's retry resolves): retriable for the client.
        refuse(p->ctx, tp.topic, tp.partition, out, error_code::kafka_storage_error,
               r.err().message);
        return;
    }
    const auto& info = r.value();
    if (info.verdict != log::sequence_verdict::append &&
        info.verdict != log::sequence_verdict::duplicate) {
        refuse(p->ctx, tp.topic, tp.partition, out, sequence_error(info.verdict), info.reason);
        return;
    }
    const topic_state* t = p->ctx.b.topics().find(tp.topic);
    if (t && info.verdict == log::sequence_verdict::append)
        count_produced(*t, bytes, info.last_offset - info.base_offset + 1);
    out.base_offset = info.base_offset;
    out.log_append_time_ms = info.log_append_time;
    out.log_start_offset = info.log_start_offset;
}

void shared_timed_out(const std::shared_ptr<pending_produce>& p, int32_t timeout_ms) {
    log_warn("produce", "{}: request timed out after {} ms", p->ctx.client(), timeout_ms);
    for (auto& t : p->resp.responses)
        for (auto& part : t.partitions)
            if (part.error_code == 0 && part.base_offset < 0) {
                part.error_code = code(error_code::request_timed_out);
                part.error_message =
                    "the records were not stored and committed within the request's timeout";
            }
    p->answer();
}

// What an answer waits for: the append on stable storage (acks=-1), the events
// expanded (a topic with expansions, acks -1 or 1), or both.
struct ack_wait {
    log::partition_log* plog;
    offset_t last;
    produce_response::partition* out;
    topic_partition tp;
    bool durable;
    bool expanded;
};

// Answers once every partition's wait is over, or with REQUEST_TIMED_OUT for those
// still waiting when timeout_ms passes.
void answer_when_ready(const std::shared_ptr<pending_produce>& p,
                       const std::vector<ack_wait>& waits, int32_t timeout_ms) {
    auto& b = p->ctx.b;
    p->waiting = waits.size();
    for (auto& w : waits) p->not_durable.push_back(w.out);
    auto on_timeout = [p, timeout_ms] {
        log_warn("produce", "{}: request timed out after {} ms", p->ctx.client(), timeout_ms);
        for (auto* part : p->not_durable) {
            if (!part) continue;
            part->error_code = code(error_code::request_timed_out);
            part->error_message =
                "the records were appended but not yet durable (acks=-1) or "
                "expanded within the request's timeout";
        }
        p->answer();
    };
    p->timer = b.loop().add_timer(std::chrono::milliseconds(std::max(timeout_ms, 0)), on_timeout);
    for (size_t i = 0; i < waits.size(); ++i) {
        auto done = [p, i](const result<void>& r) {
            auto* out = p->not_durable[i];
            p->not_durable[i] = nullptr;
            if (!r) {
                out->error_code = code(error_code::kafka_storage_error);
                out->error_message = r.err().message;
            }
            if (--p->waiting == 0) p->answer();
        };
        auto& w = waits[i];
        auto expand = [&b, tp = w.tp, last = w.last, done](const result<void>& r) {
            if (!r) return done(r);
            b.when_expanded(tp, last, [done] { done(result<void>{}); });
        };
        if (w.durable && w.expanded)
            b.when_durable(w.plog, w.last, expand);
        else if (w.durable)
            b.when_durable(w.plog, w.last, done);
        else
            expand(result<void>{});
    }
}

}  // namespace

void handle_produce(const request_context& ctx, request_body body) {
    protocol::produce_request req;
    if (!decode_request(ctx, body, req)) return;
    auto& b = ctx.b;
    auto p = std::make_shared<pending_produce>(pending_produce{ctx, {}});
    bool bad_acks = req.acks != -1 && req.acks != 0 && req.acks != 1;
    if (bad_acks) log_warn("produce", "{}: acks={} is not -1, 0 or 1", ctx.client(), req.acks);

    if (!bad_acks) add_request_partitions(ctx, req);
    std::vector<ack_wait> waits;
    std::vector<topic_partition> appended;
    // Shared mode: every partition answers after its window's commit, acks 1 and -1 alike
    // (its offsets are assigned there); acks=0 answers nothing.
    const bool answers = req.acks != 0;
    shared_submit submit = [&b, p, answers](log::partition_store& plog, const topic_state& t,
                                            std::span<uint8_t> payload,
                                            const std::vector<protocol::validated_batch>& batches,
                                            timestamp_ms, produce_response::partition& out) {
        ++p->waiting;
        static_cast<shared::shared_partition&>(plog).submit(
            payload, batches, t.log_cfg.timestamp_type == protocol::timestamp_type::log_append_time,
            [&b, p, answers, &out, tp = plog.id(),
             bytes = payload.size()](result<log::append_info> r) {
                b.loop().post([p, answers, &out, tp, bytes, r = std::move(r)] {
                    shared_appended(p, out, tp, bytes, r);
                    if (--p->waiting == 0 && answers) p->answer();
                });
            });
    };
    p->resp.responses.reserve(req.topics.size());
    for (auto& td : req.topics) {
        auto& rt = p->resp.responses.emplace_back();
        rt.name = td.name;
        rt.partitions.reserve(td.partitions.size());
        const bool expanded = req.acks != 0 && b.expands(td.name);
        const bool denied = !ctx.allowed(security::resource_kind::topic, td.name);
        for (auto& pd : td.partitions) {
            auto& out = rt.partitions.emplace_back();
            out.index = pd.index;
            if (denied) {
                refuse(ctx, td.name, pd.index, out, error_code::topic_authorization_failed,
                       fmt::format("{} may not write to topic {}", ctx.principal().to_string(),
                                   td.name));
                continue;
            }
            if (bad_acks) {
                refuse(ctx, td.name, pd.index, out, error_code::invalid_required_acks,
                       fmt::format("acks={} is not -1, 0 or 1", req.acks));
                continue;
            }
            offset_t last = -1;
            auto* plog =
                append_one(ctx, body, req.transactional_id, td.name, pd, out, last, submit);
            if (b.shared()) continue;
            if (plog) appended.push_back({td.name, pd.index});
            // Expansions read committed data only (up to the last stable offset): records
            // of a transaction, or behind another producer's open one, are expanded when it
            // ends, which this answer cannot wait for (EndTxn comes after it).
            const bool wait_expanded =
                expanded && plog && !req.transactional_id && plog->last_stable_offset() > last;
            if (plog && (req.acks == -1 || wait_expanded))
                waits.push_back({static_cast<log::partition_log*>(plog),
                                 last,
                                 &out,
                                 {td.name, pd.index},
                                 req.acks == -1,
                                 wait_expanded});
        }
    }
    // Readable from the append on (partition_log.h): parked fetches need not wait for the
    // fsync, and wake before any answer goes out.
    if (!appended.empty()) b.notify_data(appended);
    if (req.acks == 0) {
        ctx.respond_none();
        return;
    }
    if (b.shared()) {
        if (p->waiting == 0) {
            p->answer();
            return;
        }
        p->timer = b.loop().add_timer(
            std::chrono::milliseconds(std::max(req.timeout_ms, 0)),
            [p, timeout_ms = req.timeout_ms] { shared_timed_out(p, timeout_ms); });
        return;
    }
    if (waits.empty()) {
        p->answer();
        return;
    }
    answer_when_ready(p, waits, req.timeout_ms);
}

}  // namespace sluice::broker

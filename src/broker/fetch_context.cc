// How a Fetch request meets the session cache: Kafka's FetchManager (which session a
// request opens, uses or closes) and its fetch contexts (what the answer carries).

#include <algorithm>

#include "broker/fetch_session.h"
#include "common/logging.h"

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::fetch_request;
using protocol::fetch_response;

template <typename T>
fetch_partition_key key_of(const protocol::fetch_topic<T>& t, int32_t partition, bool by_id) {
    return by_id ? fetch_partition_key{{}, t.topic_id, partition}
                 : fetch_partition_key{t.name, {}, partition};
}

fetch_context failed(error_code e, int32_t id, int32_t epoch, const char* why) {
    log_debug("fetch", "fetch session {} at epoch {}: {}", id, epoch, why);
    fetch_context c;
    c.k = fetch_context::kind::error;
    c.error = e;
    return c;
}

// The session's partitions as request topics (consecutive partitions of one topic
// grouped), in the session's order; `cached` gets each one's entry in the same order.
std::vector<fetch_request::topic> session_topics(fetch_session& s,
                                                 std::vector<cached_partition*>& cached) {
    std::vector<fetch_request::topic> out;
    cached.reserve(s.size());
    for (auto& c : s.partitions()) {
        if (out.empty() || out.back().name != c.key.topic || out.back().topic_id != c.key.topic_id)
            out.push_back({c.key.topic, c.key.topic_id, {}});
        out.back().partitions.push_back(c.request);
        out.back().partitions.back().partition = c.key.partition;
        cached.push_back(&c);
    }
    return out;
}

// Whether an incremental answer must carry the partition (KIP-227: records, a changed
// high watermark, last stable offset or log start offset, an error, or a preferred
// read replica); remembers what it carries.
bool changed(cached_partition& c, const fetch_response::partition& p) {
    bool answer = p.records.size() > 0 || p.error_code != 0 || p.preferred_read_replica >= 0;
    answer |= c.high_watermark != p.high_watermark;
    answer |= c.last_stable_offset != p.last_stable_offset;
    answer |= c.log_start_offset != p.log_start_offset;
    c.high_watermark = p.error_code != 0 ? -1 : p.high_watermark;
    c.last_stable_offset = p.last_stable_offset;
    c.log_start_offset = p.log_start_offset;
    return answer;
}

}  // namespace

fetch_context begin_fetch(fetch_session_cache& cache, fetch_request& req, int16_t version,
                          int64_t now_ms) {
    const bool by_id = version >= 13;
    const int32_t id = req.session_id;
    const int32_t epoch = req.session_epoch;
    if (epoch == 0 || epoch == -1) {
        // A full fetch closes the session it names, if any.
        if (id != 0 && cache.remove(id)) log_debug("fetch", "fetch session {} closed", id);
        fetch_context c;
        c.k = epoch == 0 ? fetch_context::kind::full : fetch_context::kind::sessionless;
        c.by_id = by_id;
        return c;
    }
    auto s = cache.get(id);
    if (!s) return failed(error_code::fetch_session_id_not_found, id, epoch, "no such session");
    if (s->epoch() != epoch)
        return failed(error_code::invalid_fetch_session_epoch, id, epoch, "not the next epoch");
    if (s->by_id() != by_id)
        return failed(error_code::fetch_session_topic_id_error, id, epoch,
                      "topic names and ids mixed");
    size_t added = 0, changed_params = 0, removed = 0;
    for (const auto& t : req.topics)
        for (const auto& p : t.partitions)
            ++(s->upsert(key_of(t, p.partition, by_id), p).second ? added : changed_params);
    for (const auto& t : req.forgotten_topics)
        for (int32_t p : t.partitions) removed += s->forget(key_of(t, p, by_id)) ? 1 : 0;
    fetch_context c;
    c.by_id = by_id;
    if (s->size() == 0) {
        // Nothing left to fetch: the session ends, and this fetch is answered alone. The
        // epoch moves on all the same, so that a fetch of the session still waiting for
        // data answers INVALID_FETCH_SESSION_EPOCH instead of reading what was removed.
        s->advance_epoch();
        cache.remove(id);
        log_debug("fetch", "fetch session {} closed: every partition forgotten", id);
        return c;
    }
    cache.touch(*s, now_ms);
    s->advance_epoch();
    log_debug("fetch", "incremental fetch of session {} at epoch {}: {} added, {} updated, {} "
              "forgotten, {} in the session", id, epoch, added, changed_params, removed, s->size());
    c.k = fetch_context::kind::incremental;
    c.epoch = s->epoch();
    req.topics = session_topics(*s, c.cached);
    c.session = std::move(s);
    return c;
}

void finish_fetch(fetch_session_cache& cache, const fetch_context& ctx, const fetch_request& req,
                  fetch_response& resp, int64_t now_ms) {
    resp.session_id = 0;
    switch (ctx.k) {
        case fetch_context::kind::sessionless: return;
        case fetch_context::kind::error:
            resp.error_code = static_cast<int16_t>(ctx.error);
            resp.responses.clear();
            return;
        case fetch_context::kind::full: {
            std::vector<cached_partition> parts;
            for (size_t i = 0; i < req.topics.size() && i < resp.responses.size(); ++i) {
                const auto& rt = req.topics[i];
                const auto& ot = resp.responses[i].partitions;
                for (size_t j = 0; j < rt.partitions.size() && j < ot.size(); ++j) {
                    const auto& p = rt.partitions[j];
                    parts.push_back({key_of(rt, p.partition, ctx.by_id), p, ot[j].high_watermark,
                                     ot[j].last_stable_offset, ot[j].log_start_offset});
                }
            }
            const size_t n = parts.size();
            if (auto s = cache.create(now_ms, ctx.by_id, std::move(parts))) {
                resp.session_id = s->id();
                log_debug("fetch", "fetch session {} opened with {} partitions", s->id(), n);
            }
            return;
        }
        case fetch_context::kind::incremental: break;
    }
    auto& s = *ctx.session;
    resp.session_id = s.id();
    if (s.epoch() != ctx.epoch) {
        // Another fetch of the session came while this one waited for data.
        resp.error_code = static_cast<int16_t>(error_code::invalid_fetch_session_epoch);
        resp.responses.clear();
        return;
    }
    size_t i = 0;
    for (auto& t : resp.responses) {
        std::vector<fetch_response::partition> kept;
        for (auto& p : t.partitions) {
            // Invariant: resp has one partition per entry of ctx.cached, in order.
            cached_partition* c = ctx.cached.at(i++);
            if (!changed(*c, p)) continue;
            if (p.records.size() > 0) s.move_to_back(c);
            kept.push_back(std::move(p));
        }
        t.partitions = std::move(kept);
    }
    std::erase_if(resp.responses, [](const auto& t) { return t.partitions.empty(); });
}

}  // namespace sluice::broker

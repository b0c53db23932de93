#include "broker/fetch_session.h"

#include <gtest/gtest.h>

#include <set>
#include <vector>

namespace sluice::broker {
namespace {

using protocol::error_code;
using protocol::fetch_request;
using protocol::fetch_response;

constexpr int64_t eviction_ms = 120'000;

fetch_partition_key key(const std::string& topic, int32_t p) { return {topic, {}, p}; }

std::vector<cached_partition> parts(size_t n, const std::string& topic = "t") {
    std::vector<cached_partition> out;
    for (size_t i = 0; i < n; ++i) out.push_back({key(topic, static_cast<int32_t>(i)), {}});
    return out;
}

std::vector<int32_t> order(const fetch_session& s) {
    std::vector<int32_t> out;
    for (const auto& c : s.partitions()) out.push_back(c.key.partition);
    return out;
}

TEST(FetchSession, AddsUpdatesForgetsAndRotates) {
    fetch_session s(7, false, 0);
    fetch_request::partition p;
    for (int32_t i = 0; i < 3; ++i) EXPECT_TRUE(s.upsert(key("t", i), p).second);
    p.fetch_offset = 42;
    auto [c, added] = s.upsert(key("t", 1), p);
    EXPECT_FALSE(added);
    EXPECT_EQ(c->request.fetch_offset, 42);
    EXPECT_EQ(order(s), (std::vector<int32_t>{0, 1, 2}));  // an update keeps its place
    s.move_to_back(s.find(key("t", 0)));
    EXPECT_EQ(order(s), (std::vector<int32_t>{1, 2, 0}));
    EXPECT_TRUE(s.forget(key("t", 2)));
    EXPECT_FALSE(s.forget(key("t", 2)));
    EXPECT_FALSE(s.forget(key("u", 1)));  // another topic's partition 1
    EXPECT_EQ(order(s), (std::vector<int32_t>{1, 0}));
    EXPECT_EQ(s.find(key("t", 1))->request.fetch_offset, 42);
    EXPECT_EQ(s.epoch(), 1);
    EXPECT_EQ(fetch_session::next_epoch(INT32_MAX), 1);
}

TEST(FetchSessionCache, CreatesDistinctSessionsAndRemovesThem) {
    fetch_session_cache cache(10, eviction_ms);
    auto a = cache.create(0, false, parts(3));
    auto b = cache.create(0, true, parts(2));
    ASSERT_TRUE(a && b);
    EXPECT_GT(a->id(), 0);
    EXPECT_NE(a->id(), b->id());
    EXPECT_EQ(cache.get(a->id()), a);
    EXPECT_EQ(cache.size(), 2U);
    EXPECT_EQ(cache.total_partitions(), 5U);
    EXPECT_TRUE(cache.remove(a->id()));
    EXPECT_FALSE(cache.remove(a->id()));
    EXPECT_EQ(cache.get(a->id()), nullptr);
    EXPECT_EQ(cache.total_partitions(), 2U);
}

TEST(FetchSessionCache, DuplicatePartitionsMerge) {
    fetch_session_cache cache(10, eviction_ms);
    auto p = parts(2);
    p.push_back(p[0]);
    auto s = cache.create(0, false, p);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->size(), 2U);
}

TEST(FetchSessionCache, FullCacheKeepsRecentSessions) {
    fetch_session_cache cache(2, eviction_ms);
    ASSERT_TRUE(cache.create(0, false, parts(1)));
    ASSERT_TRUE(cache.create(0, false, parts(1)));
    // Both used within the eviction time and both younger than it: no room, even for a
    // larger session.
    EXPECT_EQ(cache.create(10'000, false, parts(100)), nullptr);
    EXPECT_EQ(cache.size(), 2U);
    EXPECT_EQ(cache.evictions(), 0U);
}

TEST(FetchSessionCache, StaleSessionIsEvictedFirst) {
    fetch_session_cache cache(2, eviction_ms);
    auto big = cache.create(0, false, parts(50));
    auto small = cache.create(0, false, parts(1));
    cache.touch(*small, 100'000);
    // `big` has not been used for more than the eviction time: any new session takes
    // its slot, whatever its size.
    auto fresh = cache.create(eviction_ms + 1, false, parts(1));
    ASSERT_TRUE(fresh);
    EXPECT_EQ(cache.get(big->id()), nullptr);
    EXPECT_EQ(cache.get(small->id()), small);
    EXPECT_EQ(cache.evictions(), 1U);
}

TEST(FetchSessionCache, LargerSessionEvictsTheSmallestOldEnoughOne) {
    fetch_session_cache cache(3, eviction_ms);
    auto three = cache.create(0, false, parts(3));
    auto five = cache.create(0, false, parts(5));
    auto young = cache.create(100'000, false, parts(1));
    // All used recently; three and five were created long enough ago.
    const int64_t t = eviction_ms + 10'000;
    for (auto* s : {three.get(), five.get(), young.get()}) cache.touch(*s, t);
    EXPECT_EQ(cache.create(t + 1, false, parts(3)), nullptr);  // not more partitions than 3
    auto four = cache.create(t + 2, false, parts(4));
    ASSERT_TRUE(four);
    EXPECT_EQ(cache.get(three->id()), nullptr);  // the fewest partitions goes
    EXPECT_EQ(cache.get(five->id()), five);
    EXPECT_EQ(cache.get(young->id()), young);  // created too recently to be evicted by size
    EXPECT_EQ(cache.evictions(), 1U);
    EXPECT_EQ(cache.total_partitions(), 10U);
}

TEST(FetchSessionCache, ZeroSlotsMakesNoSessions) {
    fetch_session_cache cache(0, eviction_ms);
    EXPECT_EQ(cache.create(0, false, parts(1)), nullptr);
}

// A request for partitions 0..n-1 of topic "t" at the given offsets.
fetch_request request(int32_t id, int32_t epoch, const std::vector<int64_t>& offsets) {
    fetch_request req;
    req.session_id = id;
    req.session_epoch = epoch;
    if (offsets.empty()) return req;
    auto& t = req.topics.emplace_back();
    t.name = "t";
    for (size_t i = 0; i < offsets.size(); ++i) {
        auto& p = t.partitions.emplace_back();
        p.partition = static_cast<int32_t>(i);
        p.fetch_offset = offsets[i];
        p.partition_max_bytes = 1024;
    }
    return req;
}

// What the broker would read for req: every partition at high watermark hw[p], with
// records in the partitions of `data`.
fetch_response read(const fetch_request& req, const std::vector<int64_t>& hw,
                    const std::set<int32_t>& data = {}) {
    fetch_response resp;
    for (const auto& rt : req.topics) {
        auto& ot = resp.responses.emplace_back();
        ot.name = rt.name;
        for (const auto& rp : rt.partitions) {
            auto& op = ot.partitions.emplace_back();
            op.partition_index = rp.partition;
            op.high_watermark = op.last_stable_offset = hw.at(static_cast<size_t>(rp.partition));
            op.log_start_offset = 0;
            op.records.data = bytes{};
            if (data.contains(rp.partition)) op.records.data = bytes{1, 2, 3};
        }
    }
    return resp;
}

// A full fetch of partitions 0..hw.size()-1 at offset 0 (epoch 0); the session id.
int32_t open_session(fetch_session_cache& cache, const std::vector<int64_t>& hw) {
    auto req = request(0, 0, std::vector<int64_t>(hw.size(), 0));
    auto ctx = begin_fetch(cache, req, 12, 0);
    auto resp = read(req, hw);
    finish_fetch(cache, ctx, req, resp, 0);
    return resp.session_id;
}

std::vector<int32_t> answered(const fetch_response& resp) {
    std::vector<int32_t> out;
    for (const auto& t : resp.responses)
        for (const auto& p : t.partitions) out.push_back(p.partition_index);
    return out;
}

TEST(FetchContext, FullThenIncrementalAnswersOnlyChanges) {
    fetch_session_cache cache(10, eviction_ms);
    auto req = request(0, 0, {5, 5, 5});
    auto ctx = begin_fetch(cache, req, 12, 0);
    ASSERT_EQ(ctx.k, fetch_context::kind::full);
    auto resp = read(req, {5, 5, 5});
    finish_fetch(cache, ctx, req, resp, 0);
    const int32_t id = resp.session_id;
    ASSERT_NE(id, 0);
    EXPECT_EQ(answered(resp), (std::vector<int32_t>{0, 1, 2}));  // a full fetch answers all

    // Epoch 1, nothing named: every partition of the session is read, none changed.
    auto inc = request(id, 1, {});
    ctx = begin_fetch(cache, inc, 12, 10);
    ASSERT_EQ(ctx.k, fetch_context::kind::incremental);
    EXPECT_EQ(inc.topics.at(0).partitions.size(), 3U);
    resp = read(inc, {5, 5, 5});
    finish_fetch(cache, ctx, inc, resp, 10);
    EXPECT_EQ(resp.session_id, id);
    EXPECT_TRUE(resp.responses.empty());

    // Epoch 2: partition 1 got records, partition 2's high watermark moved.
    inc = request(id, 2, {});
    ctx = begin_fetch(cache, inc, 12, 20);
    resp = read(inc, {5, 8, 6}, {1});
    finish_fetch(cache, ctx, inc, resp, 20);
    EXPECT_EQ(answered(resp), (std::vector<int32_t>{1, 2}));
    // Partition 1 returned records: it moves to the back of the fetch order.
    EXPECT_EQ(order(*cache.get(id)), (std::vector<int32_t>{0, 2, 1}));

    // Epoch 3 names partition 1 at its new offset; 2 is forgotten.
    inc = request(id, 3, {});
    inc.topics.push_back({"t", {}, {fetch_request::partition{1, -1, 8, -1, -1, 1024}}});
    inc.forgotten_topics.push_back({"t", {}, {2}});
    ctx = begin_fetch(cache, inc, 12, 30);
    resp = read(inc, {5, 8, 6});
    finish_fetch(cache, ctx, inc, resp, 30);
    EXPECT_TRUE(resp.responses.empty());
    EXPECT_EQ(order(*cache.get(id)), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(cache.get(id)->find(key("t", 1))->request.fetch_offset, 8);
}

TEST(FetchContext, SessionErrors) {
    fetch_session_cache cache(10, eviction_ms);
    const int32_t id = open_session(cache, {0});
    ASSERT_NE(id, 0);

    auto check = [&](int32_t sid, int32_t epoch, int16_t version, error_code want) {
        auto r = request(sid, epoch, {});
        auto c = begin_fetch(cache, r, version, 1);
        EXPECT_EQ(c.k, fetch_context::kind::error);
        EXPECT_EQ(c.error, want);
        fetch_response out;
        finish_fetch(cache, c, r, out, 1);
        EXPECT_EQ(out.error_code, static_cast<int16_t>(want));
        EXPECT_EQ(out.session_id, 0);
    };
    check(id, 2, 12, error_code::invalid_fetch_session_epoch);
    check(id + 1, 1, 12, error_code::fetch_session_id_not_found);
    check(0, 1, 12, error_code::fetch_session_id_not_found);
    check(id, 1, 13, error_code::fetch_session_topic_id_error);  // opened by name
    // The failed attempts left the session as it was: epoch 1 still works.
    auto r = request(id, 1, {});
    EXPECT_EQ(begin_fetch(cache, r, 12, 2).k, fetch_context::kind::incremental);
}

TEST(FetchContext, CloseAndForgetAll) {
    fetch_session_cache cache(10, eviction_ms);
    auto open = [&] { return open_session(cache, {0, 0}); };
    // Epoch -1 closes the session and fetches without one.
    int32_t id = open();
    auto req = request(id, -1, {0});
    auto ctx = begin_fetch(cache, req, 12, 1);
    EXPECT_EQ(ctx.k, fetch_context::kind::sessionless);
    auto resp = read(req, {0});
    finish_fetch(cache, ctx, req, resp, 1);
    EXPECT_EQ(resp.session_id, 0);
    EXPECT_EQ(cache.get(id), nullptr);

    // Epoch 0 with an id closes it and opens another.
    id = open();
    req = request(id, 0, {0});
    ctx = begin_fetch(cache, req, 12, 1);
    resp = read(req, {0});
    finish_fetch(cache, ctx, req, resp, 1);
    EXPECT_EQ(cache.get(id), nullptr);
    EXPECT_NE(resp.session_id, 0);
    EXPECT_EQ(cache.size(), 1U);

    // Forgetting every partition ends the session.
    id = open();
    req = request(id, 1, {});
    req.forgotten_topics.push_back({"t", {}, {0, 1}});
    ctx = begin_fetch(cache, req, 12, 2);
    EXPECT_EQ(ctx.k, fetch_context::kind::sessionless);
    EXPECT_EQ(cache.get(id), nullptr);
}

TEST(FetchContext, AnotherFetchWhileWaitingFailsTheEpoch) {
    fetch_session_cache cache(10, eviction_ms);
    const int32_t id = open_session(cache, {0});
    auto first = request(id, 1, {});
    auto first_ctx = begin_fetch(cache, first, 12, 1);
    auto second = request(id, 2, {});
    auto second_ctx = begin_fetch(cache, second, 12, 2);
    ASSERT_EQ(second_ctx.k, fetch_context::kind::incremental);
    auto out = read(first, {3});
    finish_fetch(cache, first_ctx, first, out, 3);  // the first one's answer comes late
    EXPECT_EQ(out.error_code, static_cast<int16_t>(error_code::invalid_fetch_session_epoch));
    EXPECT_TRUE(out.responses.empty());

    // The same when the later fetch forgot every partition (and so ended the session).
    auto waiting = request(id, 3, {});
    auto waiting_ctx = begin_fetch(cache, waiting, 12, 4);
    auto last = request(id, 4, {});
    last.forgotten_topics.push_back({"t", {}, {0}});
    EXPECT_EQ(begin_fetch(cache, last, 12, 5).k, fetch_context::kind::sessionless);
    out = read(waiting, {3});
    finish_fetch(cache, waiting_ctx, waiting, out, 6);
    EXPECT_EQ(out.error_code, static_cast<int16_t>(error_code::invalid_fetch_session_epoch));
}

TEST(FetchContext, ErrorsAreAlwaysAnsweredAndResentOnceGone) {
    fetch_session_cache cache(10, eviction_ms);
    const int32_t id = open_session(cache, {4});
    int32_t epoch = 1;
    auto fetch = [&](int16_t err, int64_t hw) {
        auto r = request(id, epoch++, {});
        auto c = begin_fetch(cache, r, 12, epoch);
        auto out = read(r, {hw});
        out.responses[0].partitions[0].error_code = err;
        out.responses[0].partitions[0].records.data = bytes{};
        finish_fetch(cache, c, r, out, epoch);
        return answered(out).size();
    };
    EXPECT_EQ(fetch(0, 4), 0U);
    EXPECT_EQ(fetch(3, 4), 1U);
    EXPECT_EQ(fetch(3, 4), 1U);  // still in error: answered again
    EXPECT_EQ(fetch(0, 4), 1U);  // the error is gone: answered once more
    EXPECT_EQ(fetch(0, 4), 0U);
}

}  // namespace
}  // namespace sluice::broker

#pragma once

// Incremental fetch sessions (KIP-227). A consumer's first fetch names every partition
// it reads; the broker keeps them in a session and answers its id. Later fetches name
// only what changed (new fetch offsets, partitions added, topics forgotten), and the
// answer carries only partitions with something new. Sessions live in this broker's
// memory, bounded by a number of slots, as Kafka's FetchSessionCache.
//
// Request metadata (session id, epoch), as KIP-227 defines it:
//   (0, -1)    a full fetch outside any session (every Fetch before v7)
//   (0, 0)     a full fetch that opens a session when the cache has room
//   (ID, 0)    closes session ID, then as (0, 0)
//   (ID, -1)   closes session ID, then as (0, -1)
//   (ID, N)    an incremental fetch of session ID at epoch N
// A session's first incremental epoch is 1; INT32_MAX is followed by 1.

#include <cstdint>
#include <list>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "protocol/error_code.h"
#include "protocol/messages/fetch.h"

namespace sluice::broker {

// A session's partition: its topic by name (a session opened before Fetch v13) or by
// id (v13 on; the name is then empty), and its index.
struct fetch_partition_key {
    std::string topic;
    protocol::uuid topic_id{};
    int32_t partition = 0;
    bool operator==(const fetch_partition_key&) const = default;
};

struct fetch_partition_key_hash {
    size_t operator()(const fetch_partition_key& k) const;
};

struct cached_partition {
    fetch_partition_key key;
    protocol::fetch_request::partition request;  // as last sent: fetch offset, max bytes
    // What the last answer that carried the partition said. -1 before, and after an
    // error, so that the partition is answered again once the error is gone.
    int64_t high_watermark = -1;
    int64_t last_stable_offset = -1;
    int64_t log_start_offset = -1;
};

class fetch_session {
  public:
    fetch_session(int32_t id, bool by_id, int64_t now_ms) :
        _id(id), _by_id(by_id), _created_ms(now_ms), _last_used_ms(now_ms) {}

    int32_t id() const { return _id; }
    // The epoch the next incremental fetch must carry.
    int32_t epoch() const { return _epoch; }
    void advance_epoch() { _epoch = next_epoch(_epoch); }
    static int32_t next_epoch(int32_t e) { return e == INT32_MAX ? 1 : e + 1; }
    // Whether the session names topics by id (opened by Fetch v13 or later).
    bool by_id() const { return _by_id; }
    size_t size() const { return _partitions.size(); }
    // In fetch order: a partition that returned records moves to the back, so that a
    // response full at max_bytes leaves the next fetch to the others first.
    const std::list<cached_partition>& partitions() const { return _partitions; }
    // The same; an entry's key must not change.
    std::list<cached_partition>& partitions() { return _partitions; }

    cached_partition* find(const fetch_partition_key& k);
    // Adds the partition at the back, or updates its request parameters in place.
    // Returns it and whether it was new.
    std::pair<cached_partition*, bool> upsert(const fetch_partition_key& k,
                                              const protocol::fetch_request::partition& p);
    bool forget(const fetch_partition_key& k);
    void move_to_back(cached_partition* p);

  private:
    friend class fetch_session_cache;
    using list = std::list<cached_partition>;
    int32_t _id;
    bool _by_id;
    int32_t _epoch = 1;
    int64_t _created_ms;
    int64_t _last_used_ms;
    // The size and evictability as of the last touch (the cache's ordering keys).
    size_t _cached_size = 0;
    bool _evictable = false;
    list _partitions;
    std::unordered_map<fetch_partition_key, list::iterator, fetch_partition_key_hash> _index;
};

// Kafka's max.incremental.fetch.session.cache.slots and its eviction rule (KIP-227):
// when every slot is taken, a new session may take the place of
//  1. the least recently used session, if unused for more than min_eviction_ms, else
//  2. the session of fewest partitions (then lowest id) among those created more than
//     min_eviction_ms ago (as of their last use), if the new one has more partitions.
// Otherwise no session is created and the client goes on with full fetches.
class fetch_session_cache {
  public:
    fetch_session_cache(size_t max_slots, int64_t min_eviction_ms);

    // A new session of `parts` (in fetch order, duplicates merged), or nullptr.
    std::shared_ptr<fetch_session> create(int64_t now_ms, bool by_id,
                                          std::vector<cached_partition> parts);
    std::shared_ptr<fetch_session> get(int32_t id) const;
    bool remove(int32_t id);
    // Records a use now, after the session's partitions may have changed.
    void touch(fetch_session& s, int64_t now_ms);

    size_t size() const { return _sessions.size(); }
    size_t total_partitions() const { return _total_partitions; }
    uint64_t evictions() const { return _evictions; }

  private:
    bool try_evict(size_t new_size, int64_t now_ms);
    void remove(fetch_session& s);
    int32_t new_id();

    size_t _max_slots;
    int64_t _min_eviction_ms;
    std::unordered_map<int32_t, std::shared_ptr<fetch_session>> _sessions;
    std::set<std::pair<int64_t, int32_t>> _by_last_use;  // (last used ms, id)
    std::set<std::pair<size_t, int32_t>> _evictable;     // (partitions, id)
    size_t _total_partitions = 0;
    uint64_t _evictions = 0;
    std::mt19937 _rng;
};

// What the session cache makes of one Fetch request (Kafka's FetchContext).
struct fetch_context {
    enum class kind { sessionless, full, incremental, error };
    kind k = kind::sessionless;
    protocol::error_code error = protocol::error_code::none;
    std::shared_ptr<fetch_session> session;  // incremental
    // Incremental: the session's partitions, parallel to the request's (rewritten)
    // partitions in order. They stay valid while the session's epoch is `epoch`.
    std::vector<cached_partition*> cached;
    int32_t epoch = 0;   // incremental: the session's epoch once this request is applied
    bool by_id = false;  // the request names topics by id (Fetch v13 on)
};

// Closes, opens, checks and updates the session that `req` names (as of Fetch
// `version`). For an incremental fetch, req.topics is rewritten to every partition of
// the session, with the fetch offsets it holds, so that the handler reads them all.
fetch_context begin_fetch(fetch_session_cache& cache, protocol::fetch_request& req,
                          int16_t version, int64_t now_ms);

// Turns what was read for req (resp.responses parallel to req.topics) into the answer:
// a full fetch opens its session here when the cache has room; an incremental one
// answers only the partitions that changed, and remembers what it answered.
void finish_fetch(fetch_session_cache& cache, const fetch_context& ctx,
                  const protocol::fetch_request& req, protocol::fetch_response& resp,
                  int64_t now_ms);

}  // namespace sluice::broker

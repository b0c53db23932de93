#pragma once

// What the share handlers share: a count of a request's share-group calls, and for
// ShareFetch and ShareAcknowledge the acknowledgements applied to the group's
// share-partitions, by topic id and partition as the requests name them. The topics are
// looked up on the loop thread (resolve_acks); the acknowledgements are applied where the
// broker's share_work_queue runs the work (off the loop in shared mode).

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "broker/broker.h"
#include "protocol/messages/share_group.h"

namespace sluice::broker {

using share_key = std::pair<protocol::uuid, int32_t>;

// One partition's acknowledgement batches, as a request names them.
struct share_ack {
    share_key key;
    std::optional<group::share::tp> partition;  // nullopt: no topic has that id
    std::vector<protocol::acknowledgement_batch> batches;
};

// Loop thread: every partition of `topics` (a request's topics) with its batches.
template <typename Topic>
std::vector<share_ack> resolve_acks(broker& b, const std::vector<Topic>& topics) {
    std::vector<share_ack> out;
    for (const auto& t : topics) {
        const topic_state* ts = b.topics().find(catalog::uuid(t.topic_id));
        for (const auto& p : t.partitions) {
            auto& a = out.emplace_back();
            a.key = {t.topic_id, p.partition_index};
            if (ts) a.partition = group::share::tp{ts->info.name, p.partition_index};
            a.batches = p.acknowledgement_batches;
        }
    }
    return out;
}

// Calls `done` once the share-group calls of a request have all answered (on the loop
// thread, at once in single-node mode): add() before each call, finish() in its answer,
// and one finish() by the request itself after it made its calls.
class share_calls {
  public:
    explicit share_calls(std::function<void()> done) : _done(std::move(done)) {}
    void add() { ++_left; }
    void finish() {
        if (--_left == 0) _done();
    }

  private:
    size_t _left = 1;  // the request's own
    std::function<void()> _done;
};

// Each partition of `acks` with the outcome of its batches, applied in order until one
// fails.
std::map<share_key, protocol::error_code> apply_acks(group::share::partition_work& work,
                                                     const std::string& member,
                                                     const std::vector<share_ack>& acks);

}  // namespace sluice::broker

#pragma once

// What the broker needs of expansions (docs/expansions.md) without depending on them:
// which topics have any, news of advancing high watermarks, and a wait for an event's
// rows. The app wires in the expansion service.

#include <functional>
#include <string>
#include <vector>

#include "common/types.h"

namespace sluice::broker {

class expansion_hooks {
  public:
    virtual ~expansion_hooks() = default;
    // Whether produce answers for the topic wait for its expansions.
    virtual bool expands(const std::string& topic) const = 0;
    // Called on the flusher thread with the partitions whose high watermark advanced (in
    // shared mode: on the event loop, after a commit notification of any broker).
    virtual void on_high_watermark(const std::vector<topic_partition>& tps) = 0;
    // Runs fn, on any thread, once tp's expansions have expanded its events up to `last`.
    virtual void when_expanded(const topic_partition& tp, offset_t last,
                               std::function<void()> fn) = 0;
};

}  // namespace sluice::broker

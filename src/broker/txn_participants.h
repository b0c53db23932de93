#pragma once

#include "txn/coordinator.h"

namespace sluice::broker {

class broker;

// How the transaction coordinator ends a transaction in this broker: a COMMIT or ABORT
// control batch in each of its partition logs (partition_log::write_marker), then, at
// commit, its pending offsets become the groups' committed offsets (single-node mode: here,
// through the offset writer; shared mode: in the transaction store's write of the state
// CompleteCommit, then offsets_committed); done once all of it is durable. A partition
// whose topic was deleted meanwhile has nothing to mark.
class txn_participants final : public txn::participants {
  public:
    explicit txn_participants(broker& b) : _b(b) {}
    void complete(const txn::txn_metadata& t, bool commit, done_fn done) override;
    void offsets_committed(const std::vector<txn::pending_offset>& offsets) override;

  private:
    void commit_offsets(const txn::txn_metadata& t, done_fn done);
    // The committed offsets into the groups' memory.
    void remember(const std::vector<txn::pending_offset>& offsets);
    broker& _b;
};

}  // namespace sluice::broker

#pragma once

// Where the SQL engine finds the partitions of a topic when they are not the local log
// manager's: shared mode (docs/shared-mode.md), whose partitions are batches in objects
// read through the partition-log interface (log/partition_store.h). The topic tables
// then scan them with log::store_cursor and the system tables read their offsets from
// it. Implemented by the app over shared::shared_log (app/shared_serve.h).
//
// Threading: called from sessions' threads, concurrently.

#include <cstdint>
#include <string>

#include "log/partition_store.h"

namespace sluice::sql {

class partition_source {
  public:
    // Partition p of `topic` as the topic store lists it now; nullptr when the topic or
    // the partition does not exist. Valid as long as this source.
    virtual log::partition_store* partition(const std::string& topic, int32_t p) = 0;

  protected:
    ~partition_source() = default;
};

}  // namespace sluice::sql

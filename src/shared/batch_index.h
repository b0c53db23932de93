#pragma once

// The produce commit of shared mode: after a broker uploaded one object holding batches
// of many partitions, one transaction assigns their offsets and records where they lie
// (docs/formats/shared-catalog.md, "The produce commit").

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

struct batch_append {
    std::string topic_id;  // 32 hex digits
    int32_t partition = 0;
    int32_t record_count = 0;
    uint64_t byte_position = 0;  // in the object
    uint32_t byte_size = 0;
    int64_t max_timestamp_ms = 0;
};

struct object_commit {
    std::string object_key;
    uint64_t size = 0;
    int32_t broker_id = 0;
    std::vector<batch_append> batches;  // several may be of one partition, in order
};

// One transaction (read committed): locks the rows of the partitions concerned in key
// order (so that two brokers' commits over the same partitions queue rather than
// deadlock), gives each batch the offsets after its partition's high watermark, inserts
// the object and the batch rows and moves the high watermarks. Returns each batch's base
// offset, in the order given. A partition that does not exist fails it all (not_found).
result<std::vector<int64_t>> commit_object(pg_database& db, const object_commit& commit);

// Adds a topic and its partitions (empty, offsets from 0).
result<void> create_topic(pg_database& db, const std::string& topic_id, const std::string& name,
                          int32_t partitions);

}  // namespace sluice::shared

#pragma once

// One partition's scan of the topic table function (sql/duck/topic_scan.cc): the bounds
// a WHERE clause puts on its columns, the records of a partition they leave, and the
// headers column's JSON.

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>

#include "common/result.h"
#include "common/types.h"
#include "log/partition_log.h"
#include "log/partition_store.h"
#include "protocol/record_reader.h"

namespace sluice::sql {

// An inclusive range of an integer column.
struct range {
    int64_t lo = std::numeric_limits<int64_t>::min();
    int64_t hi = std::numeric_limits<int64_t>::max();
    bool empty() const { return lo > hi; }
    bool operator==(const range&) const = default;
};

// The offsets [first, second) of `log` a scan reads through the partition-log interface
// (shared mode: no append-time index): from the log start up to `cut`, within `offsets`,
// and from the first record stamped at or after ts_producer.lo (ListOffsets by
// timestamp). nullopt when nothing is left.
result<std::optional<std::pair<offset_t, offset_t>>> store_span(const log::partition_store& log,
                                                                offset_t cut, const range& offsets,
                                                                const range& ts_producer);

// The offsets [first, second) of `log` a scan reads: from the log start up to `cut` (the
// last stable offset the scan was given), within `offsets`, and within the timestamp
// ranges as far as the time and append-time indexes can tell (the rows are checked again
// by the engine). nullopt when nothing is left.
result<std::optional<std::pair<offset_t, offset_t>>> partition_span(const log::partition_log& log,
                                                                    offset_t cut,
                                                                    const range& offsets,
                                                                    const range& ts_producer,
                                                                    const range& ts_broker);

// The headers column of a record: [{"key":...,"value":...|null},...], keys and values as
// append_json_bytes writes them. false when the record's headers are malformed.
bool append_headers_json(std::string& out, const protocol::record_ref& rec);

}  // namespace sluice::sql

#pragma once

// Kafka's transaction markers: control batches (record batch v2 with the attributes
// isTransactional | isControl) holding one control record, written by the broker into
// every partition of a transaction when it commits or aborts (KIP-98). Layout of the
// record (Kafka's ControlRecordType / EndTransactionMarker):
//   key   = version:i16 (0) | type:i16 (0 ABORT, 1 COMMIT)
//   value = version:i16 (0) | coordinator_epoch:i32
// The batch carries the producer id and epoch of the transaction, base sequence -1,
// no compression, and the broker time as its timestamps.

#include <cstdint>

#include "common/result.h"
#include "common/types.h"

namespace sluice::protocol {

// Control record types Kafka defines; Sluice writes only abort and commit, and reads
// the others (KRaft's) as "not a transaction marker".
enum class control_type : int16_t { abort = 0, commit = 1 };

struct control_record {
    int16_t type = 0;                // control_type's values, or another Kafka type
    int32_t coordinator_epoch = -1;  // -1 when the record has no marker value
    bool is_marker() const { return type == 0 || type == 1; }
    bool is_commit() const { return type == 1; }
};

// The bytes of a transaction marker batch at base offset `base_offset` (the log rewrites
// it on append), timestamped `timestamp_ms`.
bytes encode_control_batch(int64_t producer_id, int16_t producer_epoch, control_type type,
                           int32_t coordinator_epoch, int64_t timestamp_ms,
                           int64_t base_offset = 0);

// The control record of a whole control batch (attributes bit isControl set, magic 2).
// Errors: invalid_argument (not a control batch), corrupt (framing, no record, a key
// shorter than 4 bytes, an unknown key version).
result<control_record> decode_control_batch(bytes_view batch);

}  // namespace sluice::protocol

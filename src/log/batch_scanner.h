#pragma once

#include <cstdint>
#include <string>

#include "log/file_io.h"
#include "protocol/record_batch.h"

namespace sluice::log {

// Walks the record batches of a segment data file in order, reading through a buffer
// (one pread per 64 KiB, not one per batch). Checks framing on every step and, when
// asked, the CRC; recovery, index rebuilds and offset lookups all use it.
class batch_scanner {
  public:
    enum class step {
        batch,    // header() and position() describe the next batch
        end,      // clean end: no byte left before `end`
        torn,     // the bytes left cannot hold the batch they start (cut-off write)
        invalid,  // bytes that are not the next batch (bad length, magic, offset, CRC)
    };

    // Scans [position, end). When expected_offset >= 0, each batch must start exactly
    // at the offset after the previous one (Sluice assigns offsets without gaps), or, with
    // `gaps`, at or after it: compaction removes whole batches from sealed segments.
    batch_scanner(const file& f, int64_t position, int64_t end, offset_t expected_offset = -1,
                  bool gaps = false);

    // With verify, also reads the whole batch and checks its CRC.
    result<step> next(bool verify);
    // The whole current batch (reads it when next() did not verify).
    result<bytes_view> batch();

    const protocol::batch_header& header() const { return _h; }
    // Position of the current batch; after end/torn/invalid, where valid data ends.
    int64_t position() const { return _cur; }
    offset_t next_offset() const { return _expected; }
    const std::string& reason() const { return _reason; }

  private:
    // Makes the buffer hold [pos, pos + n); false when the file is shorter.
    result<bool> fill(int64_t pos, size_t n);
    const uint8_t* at(int64_t pos) const { return _buf.data() + (pos - _buf_start); }

    const file& _f;
    int64_t _next;  // position of the batch after the current one
    int64_t _end;
    offset_t _expected;
    bool _gaps;
    int64_t _cur;
    protocol::batch_header _h;
    bytes _buf;
    int64_t _buf_start = 0;
    size_t _buf_len = 0;
    std::string _reason;
};

}  // namespace sluice::log

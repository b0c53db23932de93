// libFuzzer target: produce payloads. Validation must never read out of bounds, and a
// payload it accepts must iterate record by record to exactly its record counts.

#include <cstddef>
#include <cstdint>

#include "protocol/record_batch.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    sluice::bytes_view payload(data, size);
    auto batches = sluice::protocol::validate_batches(payload, {});
    if (!batches) return 0;
    for (const auto& b : *batches) {
        int32_t n = 0;
        bool ok = sluice::protocol::for_each_record(
            payload.subspan(b.position, b.header.size_bytes()), [&](const auto&) {
                ++n;
                return true;
            });
        if (!ok || n != b.header.record_count) __builtin_trap();
    }
    return 0;
}

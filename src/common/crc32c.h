#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

// CRC-32C (Castagnoli), as Kafka record batches use. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise.
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

}  // namespace sluice

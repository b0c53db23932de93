#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice {

// CRC-32C (Castagnoli), as Kafka record batches use. Uses the SSE4.2 crc32
// instruction when the CPU has it, a table otherwise.
uint32_t crc32c(const void* data, size_t len, uint32_t crc = 0);

// The same, always from the table: what CPUs without SSE4.2 run, and what the tests
// check the instruction's three-lane path against.
uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc = 0);

}  // namespace sluice

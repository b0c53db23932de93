#pragma once

// The events of `sluice-loadgen --value-json10` (bench/loadgen_produce.cc) and the
// expansion schema that bench/expansion_bench.sh gives them, for the in-process expansion
// benchmarks (expansion_duck_bench.cc, expansion_duck_steady.cc): 10 fields, one a struct
// of 3, flattened into 19 columns.

#include <fmt/format.h>

#include <cstdint>
#include <string>

namespace sluice::bench {

inline constexpr const char* json10_schema = R"({"fields": [
  {"name": "id", "type": "int64"}, {"name": "ts", "type": "timestamp_ms"},
  {"name": "user", "type": "string"}, {"name": "amount", "type": "float64"},
  {"name": "qty", "type": "int64"}, {"name": "active", "type": "bool"},
  {"name": "country", "type": "string"}, {"name": "tags", "type": "json"},
  {"name": "address", "type": "struct", "fields": [{"name": "city", "type": "string"},
    {"name": "zip", "type": "int64"}, {"name": "street", "type": "string"}]},
  {"name": "note", "type": "string"}]})";

// Event i (about 238 bytes).
inline std::string json10_event(int64_t i) {
    static constexpr const char* countries[] = {"DE", "FR", "PT", "US", "JP", "BR", "IN", "NG"};
    static constexpr const char* cities[] = {"Lisbon", "Berlin", "Osaka",  "Lagos", "Recife",
                                             "Pune",   "Lyon",   "Denver", "Porto", "Kyoto"};
    const uint64_t h = static_cast<uint64_t>(i) * 0x9E3779B97F4A7C15ull;
    return fmt::format(
        R"({{"id":{},"ts":{},"user":"user-{}","amount":{}.{:02},"qty":{},"active":{},)"
        R"("country":"{}","tags":["beta","gamma"],"address":{{"city":"{}","zip":{},)"
        R"("street":"{} Harbour Road"}},"note":"the quick brown fox jumps over the lazy dog"}})",
        i, 1764460800000 + i, h % 1000000, (h >> 8) % 10000, (h >> 20) % 100, (h >> 28) % 100,
        (h >> 36) % 2 ? "true" : "false", countries[(h >> 40) % 8], cities[(h >> 44) % 10],
        10000 + (h >> 48) % 90000, (h >> 52) % 200);
}

}  // namespace sluice::bench

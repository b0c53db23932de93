#pragma once

// Shared checks of the codec tests: a message round-trips through its one declaration in
// every version, and corrupted encodings decode or fail cleanly.

#include <gtest/gtest.h>

#include <cstdint>

#include "protocol/api_key.h"
#include "protocol/serde.h"

namespace sluice::protocol::test {

template <typename M>
void expect_round_trip(api_key key, int16_t lo, int16_t hi, const M& sample) {
    for (int16_t v = lo; v <= hi; ++v) {
        bool flex = is_flexible(static_cast<int16_t>(key), v);
        bytes first;
        encode_message(first, v, flex, sample);
        M decoded;
        ASSERT_TRUE(decode_message(first, v, flex, decoded)) << "api " << int(key) << " v" << v;
        bytes second;
        encode_message(second, v, flex, decoded);
        EXPECT_EQ(first, second) << "api " << int(key) << " v" << v;
        // Every strict prefix is rejected: truncated input never decodes.
        for (size_t cut : {size_t{0}, first.size() / 2, first.size() - 1}) {
            if (cut >= first.size()) continue;
            M partial;
            EXPECT_FALSE(decode_message(bytes_view(first).first(cut), v, flex, partial))
                << "api " << int(key) << " v" << v << " cut " << cut;
        }
    }
}

// Random corruption of real requests must decode or fail cleanly: never crash, hang or
// allocate without bound. A small deterministic fuzz run over every version.
template <typename M>
void mutate_and_decode(api_key key, int16_t lo, int16_t hi, const M& sample, uint32_t seed) {
    uint32_t state = seed;
    auto next = [&state] {
        state = state * 1664525u + 1013904223u;
        return state >> 8;
    };
    for (int16_t v = lo; v <= hi; ++v) {
        bool flex = is_flexible(static_cast<int16_t>(key), v);
        bytes good;
        encode_message(good, v, flex, sample);
        for (int i = 0; i < 300; ++i) {
            bytes bad = good;
            int edits = 1 + static_cast<int>(next() % 4);
            for (int e = 0; e < edits && !bad.empty(); ++e)
                bad[next() % bad.size()] = static_cast<uint8_t>(next());
            if (next() % 4 == 0) bad.resize(next() % (bad.size() + 1));
            M out;
            (void)decode_message(bad, v, flex, out);  // either result is fine
        }
    }
}

}  // namespace sluice::protocol::test

#include "common/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace sluice {
namespace {

constexpr uint32_t poly = 0x82f63b78;  // reversed Castagnoli polynomial

constexpr std::array<uint32_t, 256> make_table() {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
        uint32_t c = i;
        for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        t[i] = c;
    }
    return t;
}
constexpr auto table = make_table();

uint32_t crc_sw(const uint8_t* p, size_t n, uint32_t crc) {
    for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
    return crc;
}

// Polynomial arithmetic modulo the CRC polynomial, in the reflected bit order of the
// register: multiplying a register by x^(8n) gives the register that n zero bytes
// would leave, which is how three independently computed lanes are joined.
constexpr uint32_t mul_mod_p(uint32_t a, uint32_t b) {
    uint32_t product = 0;
    for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
        if ((a & m) != 0) product ^= b;
        b = (b & 1) != 0 ? (b >> 1) ^ poly : b >> 1;
    }
    return product;
}

// x^(8n) modulo the polynomial: the operator that shifts a register over n zero bytes.
constexpr uint32_t zeros_operator(size_t n) {
    uint32_t op = 1u << 31;  // x^0
    uint32_t sq = 1u << 23;  // x^8
    for (; n != 0; n >>= 1) {
        if ((n & 1) != 0) op = mul_mod_p(op, sq);
        sq = mul_mod_p(sq, sq);
    }
    return op;
}

// Multiplication by the constant x^(8n) is linear, so it is four table lookups, one per
// byte of the register.
template <size_t n>
struct zeros_shifter {
    static constexpr auto tables = [] {
        std::array<std::array<uint32_t, 256>, 4> t{};
        const uint32_t op = zeros_operator(n);
        for (uint32_t i = 0; i < 4; ++i)
            for (uint32_t b = 0; b < 256; ++b) t[i][b] = mul_mod_p(op, b << (8 * i));
        return t;
    }();
    static uint32_t apply(uint32_t r) {
        return tables[0][r & 0xff] ^ tables[1][(r >> 8) & 0xff] ^ tables[2][(r >> 16) & 0xff] ^
               tables[3][r >> 24];
    }
};

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint64_t crc_hw_words(const uint8_t* p, size_t words,
                                                        uint64_t c) {
    for (size_t i = 0; i < words; ++i) {
        uint64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        c = _mm_crc32_u64(c, v);
    }
    return c;
}

// The crc32 instruction takes three cycles but starts one per cycle, so three lanes of
// `lane` bytes each are computed side by side and joined by shifting the first two
// over the lanes after them.
template <size_t lane>
__attribute__((target("sse4.2"))) uint64_t crc_hw_3way(const uint8_t*& p, size_t& n, uint64_t c) {
    using shifter = zeros_shifter<lane>;
    while (n >= 3 * lane) {
        uint64_t c1 = c, c2 = 0, c3 = 0;
        for (size_t i = 0; i < lane; i += 8) {
            uint64_t v1, v2, v3;
            std::memcpy(&v1, p + i, 8);
            std::memcpy(&v2, p + lane + i, 8);
            std::memcpy(&v3, p + 2 * lane + i, 8);
            c1 = _mm_crc32_u64(c1, v1);
            c2 = _mm_crc32_u64(c2, v2);
            c3 = _mm_crc32_u64(c3, v3);
        }
        const uint32_t joined =
            shifter::apply(static_cast<uint32_t>(c1)) ^ static_cast<uint32_t>(c2);
        c = shifter::apply(joined) ^ static_cast<uint32_t>(c3);
        p += 3 * lane;
        n -= 3 * lane;
    }
    return c;
}

__attribute__((target("sse4.2"))) uint32_t crc_hw(const uint8_t* p, size_t n, uint32_t crc) {
    uint64_t c = crc;
    c = crc_hw_3way<4096>(p, n, c);
    c = crc_hw_3way<256>(p, n, c);
    c = crc_hw_words(p, n / 8, c);
    p += n / 8 * 8;
    n %= 8;
    auto c32 = static_cast<uint32_t>(c);
    while (n--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

bool have_sse42() {
    static const bool has = __builtin_cpu_supports("sse4.2");
    return has;
}
#endif

}  // namespace

uint32_t crc32c(const void* data, size_t len, uint32_t crc) {
    const auto* p = static_cast<const uint8_t*>(data);
    crc = ~crc;
#if defined(__x86_64__)
    if (have_sse42()) return ~crc_hw(p, len, crc);
#endif
    return ~crc_sw(p, len, crc);
}

uint32_t crc32c_portable(const void* data, size_t len, uint32_t crc) {
    return ~crc_sw(static_cast<const uint8_t*>(data), len, ~crc);
}

}  // namespace sluice

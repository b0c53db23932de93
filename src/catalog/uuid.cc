#include "catalog/uuid.h"

#include <sys/random.h>

#include <cerrno>
#include <system_error>

namespace sluice::catalog {
namespace {

constexpr std::string_view base64url_alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

// 16 bytes = 128 bits = 21 full sextets + 2 bits, hence 22 characters.
constexpr size_t uuid_string_size = 22;

int base64url_value(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

void fill_random(uint8_t* p, size_t n) {
    while (n > 0) {
        ssize_t got = ::getrandom(p, n, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            throw std::system_error(errno, std::generic_category(), "getrandom");
        }
        p += got;
        n -= static_cast<size_t>(got);
    }
}

bool is_reserved(const uuid& u) {
    bool zero_prefix = true;
    for (size_t i = 0; i + 1 < u.size(); ++i) zero_prefix = zero_prefix && u[i] == 0;
    // All-zero is "no id"; 0...01 is Kafka's reserved id of the metadata topic.
    return zero_prefix && (u.back() == 0 || u.back() == 1);
}

}  // namespace

uuid random_uuid() {
    for (;;) {
        uuid u;
        fill_random(u.data(), u.size());
        u[6] = static_cast<uint8_t>((u[6] & 0x0f) | 0x40);  // version 4
        u[8] = static_cast<uint8_t>((u[8] & 0x3f) | 0x80);  // RFC 4122 variant
        // The version bits already exclude the reserved ids; checked anyway so that the
        // promise does not hang on two bit masks. The '-' rule rejects 1 id in 64.
        if (is_reserved(u) || uuid_to_string(u).front() == '-') continue;
        return u;
    }
}

std::string uuid_to_string(const uuid& u) {
    std::string out;
    out.reserve(uuid_string_size);
    uint32_t acc = 0;
    int bits = 0;
    for (uint8_t b : u) {
        acc = (acc << 8) | b;
        bits += 8;
        while (bits >= 6) {
            bits -= 6;
            out.push_back(base64url_alphabet[(acc >> bits) & 0x3f]);
        }
    }
    if (bits > 0) out.push_back(base64url_alphabet[(acc << (6 - bits)) & 0x3f]);
    return out;
}

std::optional<uuid> uuid_from_string(std::string_view s) {
    if (s.size() != uuid_string_size) return std::nullopt;
    uuid u{};
    size_t n = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (char c : s) {
        int v = base64url_value(c);
        if (v < 0) return std::nullopt;
        acc = (acc << 6) | static_cast<uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            u[n++] = static_cast<uint8_t>(acc >> bits);
        }
    }
    // The last character carries 2 data bits; its other 4 must be zero.
    if ((acc & ((1u << bits) - 1)) != 0) return std::nullopt;
    return u;
}

}  // namespace sluice::catalog

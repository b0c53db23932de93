#include "protocol/compression.h"

#include <fmt/format.h>
#include <lz4frame.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include <array>
#include <cstring>
#include <memory>

#include "common/endian.h"

namespace sluice::protocol {
namespace {

// Output grows in steps of this much (or of the input size, when larger): a batch
// that decompresses to little costs little, a large one a few reallocations.
constexpr size_t grow_step = 64 * 1024;

error too_large(compression c, size_t max_out) {
    return {errc::too_large, fmt::format("{} batch decompresses to more than {} bytes",
                                         compression_name(c), max_out)};
}

error corrupt(compression c, std::string_view why) {
    return {errc::corrupt, fmt::format("{} batch does not decompress: {}", compression_name(c), why)};
}

// Makes room for at least one more step of output, within max_out + 1 bytes (the
// extra byte tells "more than max_out" from "exactly max_out").
bool grow(bytes& out, size_t used, size_t hint, size_t max_out) {
    if (used > max_out) return false;
    out.resize(std::min(max_out + 1, used + std::max(grow_step, hint)));
    return true;
}

// ---- gzip (zlib) ----

result<bytes> gunzip(bytes_view in, size_t max_out) {
    z_stream z{};
    // 15 window bits + 32: a gzip or a zlib header, whichever the stream carries.
    if (inflateInit2(&z, 15 + 32) != Z_OK) return corrupt(compression::gzip, "no memory");
    std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, inflateEnd);
    z.next_in = const_cast<Bytef*>(in.data());  // zlib's API is not const-correct
    z.avail_in = static_cast<uInt>(in.size());
    bytes out;
    size_t used = 0;
    for (;;) {
        if (!grow(out, used, in.size(), max_out)) return too_large(compression::gzip, max_out);
        z.next_out = out.data() + used;
        z.avail_out = static_cast<uInt>(out.size() - used);
        const int rc = inflate(&z, Z_NO_FLUSH);
        used = out.size() - z.avail_out;
        if (rc == Z_STREAM_END) {
            // Concatenated gzip members are one stream, as Java's GZIPInputStream reads them.
            if (z.avail_in == 0) break;
            if (inflateReset(&z) != Z_OK) return corrupt(compression::gzip, "bad member");
            continue;
        }
        if (rc == Z_BUF_ERROR && z.avail_in == 0) return corrupt(compression::gzip, "truncated");
        if (rc != Z_OK && rc != Z_BUF_ERROR)
            return corrupt(compression::gzip, z.msg ? z.msg : "invalid data");
    }
    if (used > max_out) return too_large(compression::gzip, max_out);
    out.resize(used);
    return out;
}

result<bytes> gzip(bytes_view in, int level) {
    z_stream z{};
    // 15 window bits + 16: a gzip header and trailer, as Kafka's clients write.
    if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return {errc::invalid_argument, fmt::format("gzip level {} is not valid", level)};
    std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&z, deflateEnd);
    bytes out(deflateBound(&z, static_cast<uLong>(in.size())));
    z.next_in = const_cast<Bytef*>(in.data());
    z.avail_in = static_cast<uInt>(in.size());
    z.next_out = out.data();
    z.avail_out = static_cast<uInt>(out.size());
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) return {errc::io_error, "gzip compression failed"};
    out.resize(z.total_out);
    return out;
}

// ---- snappy ----

constexpr std::array<uint8_t, 8> xerial_magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t xerial_header_size = 16;  // magic, version i32, compatible version i32
// The Java client's SnappyOutputStream block size; blocks this size cost little memory.
constexpr size_t xerial_block_size = 32 * 1024;

// Appends one raw snappy block's content to out, within max_out.
result<void> unsnappy_block(bytes_view in, bytes& out, size_t max_out) {
    const auto* src = reinterpret_cast<const char*>(in.data());
    size_t n = 0;
    if (snappy_uncompressed_length(src, in.size(), &n) != SNAPPY_OK)
        return corrupt(compression::snappy, "bad block header");
    if (n > max_out - std::min(max_out, out.size()) || out.size() > max_out)
        return too_large(compression::snappy, max_out);
    const size_t at = out.size();
    out.resize(at + n);
    if (snappy_uncompress(src, in.size(), reinterpret_cast<char*>(out.data() + at), &n) != SNAPPY_OK)
        return corrupt(compression::snappy, "bad block");
    out.resize(at + n);
    return {};
}

result<bytes> unsnappy(bytes_view in, size_t max_out) {
    bytes out;
    const bool xerial = in.size() >= xerial_header_size &&
                        std::memcmp(in.data(), xerial_magic.data(), xerial_magic.size()) == 0;
    if (!xerial) {
        if (auto r = unsnappy_block(in, out, max_out); !r) return r.err();
        return out;
    }
    size_t pos = xerial_header_size;
    while (pos < in.size()) {
        if (in.size() - pos < 4) return corrupt(compression::snappy, "truncated xerial block length");
        const auto len = load_be<int32_t>(in.data() + pos);
        pos += 4;
        if (len < 0 || static_cast<size_t>(len) > in.size() - pos)
            return corrupt(compression::snappy, "xerial block longer than the batch");
        if (auto r = unsnappy_block(in.subspan(pos, static_cast<size_t>(len)), out, max_out); !r)
            return r.err();
        pos += static_cast<size_t>(len);
    }
    return out;
}

result<bytes> snappy_xerial(bytes_view in) {
    bytes out(xerial_magic.begin(), xerial_magic.end());
    out.resize(xerial_header_size);
    store_be<int32_t>(out.data() + 8, 1);   // version
    store_be<int32_t>(out.data() + 12, 1);  // compatible version
    for (size_t pos = 0; pos < in.size(); pos += xerial_block_size) {
        const size_t n = std::min(xerial_block_size, in.size() - pos);
        size_t len = snappy_max_compressed_length(n);
        const size_t at = out.size();
        out.resize(at + 4 + len);
        if (snappy_compress(reinterpret_cast<const char*>(in.data() + pos), n,
                            reinterpret_cast<char*>(out.data() + at + 4), &len) != SNAPPY_OK)
            return {errc::io_error, "snappy compression failed"};
        store_be<int32_t>(out.data() + at, static_cast<int32_t>(len));
        out.resize(at + 4 + len);
    }
    return out;
}

// ---- lz4 (frame format) ----

result<bytes> unlz4(bytes_view in, size_t max_out) {
    LZ4F_dctx* dctx = nullptr;
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
        return corrupt(compression::lz4, "no memory");
    std::unique_ptr<LZ4F_dctx, size_t (*)(LZ4F_dctx*)> guard(dctx, LZ4F_freeDecompressionContext);
    bytes out;
    size_t used = 0;
    size_t pos = 0;
    for (;;) {
        if (used == out.size() && !grow(out, used, in.size(), max_out))
            return too_large(compression::lz4, max_out);
        size_t dst = out.size() - used;
        size_t src = in.size() - pos;
        const size_t hint =
            LZ4F_decompress(dctx, out.data() + used, &dst, in.data() + pos, &src, nullptr);
        if (LZ4F_isError(hint)) return corrupt(compression::lz4, LZ4F_getErrorName(hint));
        used += dst;
        pos += src;
        if (used > max_out) return too_large(compression::lz4, max_out);
        if (hint == 0) break;  // the frame ended
        if (dst == 0 && src == 0) return corrupt(compression::lz4, "truncated frame");
    }
    if (pos != in.size()) return corrupt(compression::lz4, "bytes after the frame");
    out.resize(used);
    return out;
}

result<bytes> lz4(bytes_view in, int level) {
    LZ4F_preferences_t prefs{};
    prefs.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs.compressionLevel = level;
    bytes out(LZ4F_compressFrameBound(in.size(), &prefs));
    const size_t n = LZ4F_compressFrame(out.data(), out.size(), in.data(), in.size(), &prefs);
    if (LZ4F_isError(n)) return {errc::io_error, "lz4 compression failed"};
    out.resize(n);
    return out;
}

// ---- zstd ----

result<bytes> unzstd(bytes_view in, size_t max_out) {
    std::unique_ptr<ZSTD_DStream, size_t (*)(ZSTD_DStream*)> ds(ZSTD_createDStream(),
                                                                ZSTD_freeDStream);
    if (!ds) return corrupt(compression::zstd, "no memory");
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    bytes out;
    size_t used = 0;
    for (;;) {
        if (used == out.size() && !grow(out, used, in.size(), max_out))
            return too_large(compression::zstd, max_out);
        ZSTD_outBuffer dst{out.data(), out.size(), used};
        const size_t read_before = src.pos;
        const size_t hint = ZSTD_decompressStream(ds.get(), &dst, &src);
        if (ZSTD_isError(hint)) return corrupt(compression::zstd, ZSTD_getErrorName(hint));
        const bool progress = dst.pos != used || src.pos != read_before;
        used = dst.pos;
        if (used > max_out) return too_large(compression::zstd, max_out);
        // 0: a frame ended and is flushed; several frames may follow each other.
        if (hint == 0 && src.pos == src.size) break;
        if (!progress) return corrupt(compression::zstd, "truncated frame");
    }
    out.resize(used);
    return out;
}

result<bytes> zstd(bytes_view in, int level) {
    bytes out(ZSTD_compressBound(in.size()));
    const size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), level);
    if (ZSTD_isError(n)) return {errc::io_error, "zstd compression failed"};
    out.resize(n);
    return out;
}

}  // namespace

std::string_view compression_name(compression c) {
    switch (c) {
        case compression::none: return "none";
        case compression::gzip: return "gzip";
        case compression::snappy: return "snappy";
        case compression::lz4: return "lz4";
        case compression::zstd: return "zstd";
    }
    return "unknown";
}

std::optional<compression> compression_from_name(std::string_view name) {
    if (name == "uncompressed" || name == "none") return compression::none;
    for (auto c : {compression::gzip, compression::snappy, compression::lz4, compression::zstd})
        if (name == compression_name(c)) return c;
    return std::nullopt;
}

bool is_known_compression(int value) { return value >= 0 && value <= 4; }

std::optional<level_range> compression_levels(compression c) {
    switch (c) {
        case compression::gzip: return level_range{1, 9, -1};  // -1 is allowed too
        case compression::lz4: return level_range{1, 17, 9};
        case compression::zstd: return level_range{ZSTD_minCLevel(), ZSTD_maxCLevel(), 3};
        default: return std::nullopt;
    }
}

result<bytes> decompress(compression c, bytes_view in, size_t max_out) {
    switch (c) {
        case compression::none:
            if (in.size() > max_out) return too_large(c, max_out);
            return bytes(in.begin(), in.end());
        case compression::gzip: return gunzip(in, max_out);
        case compression::snappy: return unsnappy(in, max_out);
        case compression::lz4: return unlz4(in, max_out);
        case compression::zstd: return unzstd(in, max_out);
    }
    return {errc::unsupported, fmt::format("compression codec {} is unknown", static_cast<int>(c))};
}

result<bytes> compress(compression c, bytes_view in, std::optional<int> level) {
    const int lvl = level.value_or(compression_levels(c) ? compression_levels(c)->default_level : 0);
    switch (c) {
        case compression::none: return bytes(in.begin(), in.end());
        case compression::gzip: return gzip(in, lvl);
        case compression::snappy: return snappy_xerial(in);
        case compression::lz4: return lz4(in, lvl);
        case compression::zstd: return zstd(in, lvl);
    }
    return {errc::unsupported, fmt::format("compression codec {} is unknown", static_cast<int>(c))};
}

}  // namespace sluice::protocol

#include "log/file_header.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>

#include <fmt/format.h>

#include "common/crc32c.h"
#include "common/endian.h"
#include "log/file_io.h"

namespace sluice::log {

// Layout: 0 magic u32 | 4 version u16 | 6 flags u16 | 8 base_offset i64 |
//         16 created_ms i64 | 24 reserved u32 | 28 crc u32 (CRC-32C of bytes 0..27).
namespace {
constexpr size_t crc_pos = 28;
}

void encode_file_header(uint8_t* out, const file_header& h) {
    store_be<uint32_t>(out, static_cast<uint32_t>(h.kind));
    store_be<uint16_t>(out + 4, h.version);
    store_be<uint16_t>(out + 6, 0);
    store_be<int64_t>(out + 8, h.base_offset);
    store_be<int64_t>(out + 16, h.created_ms);
    store_be<uint32_t>(out + 24, 0);
    store_be<uint32_t>(out + crc_pos, crc32c(out, crc_pos));
}

result<file_header> decode_file_header(bytes_view in, file_kind expected, uint16_t max_version) {
    if (in.size() < file_header_size)
        return {errc::corrupt,
                fmt::format("file header is {} bytes, expected {}", in.size(), file_header_size)};
    const uint8_t* p = in.data();
    auto magic = load_be<uint32_t>(p);
    if (magic != static_cast<uint32_t>(expected))
        return {errc::corrupt,
                fmt::format("magic {:#010x} is not a {} file", magic, file_kind_name(expected))};
    if (load_be<uint32_t>(p + crc_pos) != crc32c(p, crc_pos))
        return {errc::corrupt, "file header CRC mismatch"};
    file_header h;
    h.kind = expected;
    h.version = load_be<uint16_t>(p + 4);
    if (h.version < 1 || h.version > max_version)
        return {errc::unsupported,
                fmt::format("{} format version {} is not supported (know up to {})",
                            file_kind_name(expected), h.version, max_version)};
    if (load_be<uint16_t>(p + 6) != 0 || load_be<uint32_t>(p + 24) != 0)
        return {errc::corrupt, "file header has unknown flags set"};
    h.base_offset = load_be<int64_t>(p + 8);
    h.created_ms = load_be<int64_t>(p + 16);
    return h;
}

const char* file_kind_name(file_kind k) {
    switch (k) {
        case file_kind::data:
            return "segment data";
        case file_kind::offset_index:
            return "offset index";
        case file_kind::time_index:
            return "time index";
        case file_kind::append_time:
            return "append-time index";
        case file_kind::journal:
            return "journal";
        case file_kind::producer_snapshot:
            return "producer snapshot";
        case file_kind::object_cache_entry:
            return "object cache entry";
    }
    return "?";
}

result<opened_entries> open_entries(const std::filesystem::path& path, file_kind kind,
                                    int64_t base_offset, size_t entry_size) {
    auto f = open_file(path, O_RDONLY);
    if (!f) return f.err();
    struct stat st {};
    if (::fstat((*f)->fd(), &st) != 0) return io_error_from_errno("stat", path, errno);
    uint8_t h[file_header_size];
    if (auto r = read_exact(**f, h, sizeof h, 0); !r) return r.err();
    auto hdr = decode_file_header(bytes_view(h, sizeof h), kind);
    if (hdr && hdr->base_offset != base_offset)
        hdr = error{errc::corrupt, fmt::format("header names base offset {}", hdr->base_offset)};
    if (!hdr) return error{hdr.code(), fmt::format("{}: {}", path.string(), hdr.err().message)};
    const int64_t body = st.st_size - static_cast<int64_t>(file_header_size);
    if (body % static_cast<int64_t>(entry_size) != 0)
        return error{errc::corrupt,
                     fmt::format("{}: body of {} bytes is torn", path.string(), body)};
    return opened_entries{std::move(*f), st.st_size, body / static_cast<int64_t>(entry_size)};
}

}  // namespace sluice::log

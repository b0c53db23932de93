#include "log/log_start.h"

#include <fmt/format.h>

#include "log/offset_file.h"

namespace sluice::log {

namespace {
constexpr std::string_view kind = "log-start-offset";
}  // namespace

bytes encode_log_start(offset_t offset) {
    return encode_offset_file(kind, offset);
}

result<offset_t> decode_log_start(bytes_view text) {
    return decode_offset_file(kind, text);
}

result<void> write_log_start(const fs::path& dir, offset_t offset) {
    return write_offset_file(dir, log_start_file_name, kind, offset);
}

result<offset_t> read_log_start(const fs::path& dir) {
    const fs::path p = dir / log_start_file_name;
    auto text = read_whole_file(p);
    if (!text) return text.err();
    auto v = decode_log_start(*text);
    if (!v) return error{v.code(), fmt::format("{}: {}", p.string(), v.err().message)};
    return v;
}

}  // namespace sluice::log

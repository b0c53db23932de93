#include "log/offset_file.h"

#include <fcntl.h>

#include <charconv>
#include <string>

#include <fmt/format.h>

#include "common/crc32c.h"

namespace sluice::log {
namespace {

constexpr size_t crc_digits = 8;  // u32 in hex

error bad(const std::string& why) {
    return {errc::corrupt, why};
}

}  // namespace

bytes encode_offset_file(std::string_view kind, offset_t offset) {
    std::string body = fmt::format("sluice {} v1\n{}\n", kind, offset);
    std::string text = fmt::format("{}{:08x}\n", body, crc32c(body.data(), body.size()));
    return {text.begin(), text.end()};
}

result<offset_t> decode_offset_file(std::string_view kind, bytes_view in) {
    const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
    const std::string prefix = fmt::format("sluice {} v", kind);
    const std::string version_line = prefix + "1\n";
    // Version line, up to 19 digits (int64 max) and a newline, CRC line: anything longer
    // is not our file.
    if (text.size() > version_line.size() + 20 + crc_digits + 1)
        return bad(fmt::format("{} bytes is too long", text.size()));
    // The version line is checked on its own first, so a newer format is reported as
    // such rather than as damage.
    if (!text.starts_with(prefix)) return bad(fmt::format("not a {} file", kind));
    const auto version_end = text.find('\n');
    if (version_end == std::string_view::npos) return bad("truncated in the version line");
    if (text.substr(0, version_end + 1) != version_line)
        return error{errc::unsupported,
                     fmt::format("{} format v{} is not supported (know v1)", kind,
                                 text.substr(prefix.size(), version_end - prefix.size()))};
    const std::string_view rest = text.substr(version_line.size());
    const auto nl = rest.find('\n');
    if (nl == std::string_view::npos) return bad("truncated in the offset line");
    const std::string_view digits = rest.substr(0, nl);
    const std::string_view crc_line = rest.substr(nl + 1);
    if (crc_line.size() != crc_digits + 1 || crc_line.back() != '\n')
        return bad("truncated or malformed CRC line");
    uint32_t crc = 0;
    auto [cp, cerr] = std::from_chars(crc_line.data(), crc_line.data() + crc_digits, crc, 16);
    if (cerr != std::errc() || cp != crc_line.data() + crc_digits) return bad("malformed CRC line");
    if (crc32c(in.data(), version_line.size() + nl + 1) != crc) return bad("CRC mismatch");
    // Plain decimal: no sign, no leading zero (the CRC already rules out most damage).
    offset_t offset = -1;
    auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
    if (digits.empty() || digits.front() == '-' || (digits.size() > 1 && digits.front() == '0') ||
        err != std::errc() || p != digits.data() + digits.size())
        return bad(fmt::format("malformed offset '{}'", digits));
    return offset;
}

result<void> write_offset_file(const fs::path& dir, std::string_view name, std::string_view kind,
                               offset_t offset) {
    const fs::path tmp = dir / fmt::format("{}.tmp", name);
    const fs::path dst = dir / name;
    const bytes text = encode_offset_file(kind, offset);
    {
        auto f = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
        if (!f) return f.err();
        if (auto r = write_exact(**f, text.data(), text.size(), 0); !r) return r;
        if (auto r = sync_data(**f); !r) return r;
    }
    std::error_code ec;
    fs::rename(tmp, dst, ec);
    if (ec) return io_error_from_errno("rename", tmp, ec.value());
    return sync_dir(dir);
}

}  // namespace sluice::log

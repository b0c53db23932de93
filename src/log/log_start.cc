#include "log/log_start.h"

#include <fcntl.h>

#include <charconv>
#include <string_view>

#include <fmt/format.h>

#include "common/crc32c.h"

namespace sluice::log {

namespace {

constexpr std::string_view version_prefix = "sluice log-start-offset v";
constexpr std::string_view version_line = "sluice log-start-offset v1\n";
constexpr size_t crc_digits = 8;  // u32 in hex
// Version line, 19 digits (int64 max), CRC line: anything longer is not our file.
constexpr size_t max_file_size = version_line.size() + 20 + crc_digits + 1;

std::string_view as_text(bytes_view b) {
    return {reinterpret_cast<const char*>(b.data()), b.size()};
}

error bad(const std::string& why) {
    return {errc::corrupt, why};
}

// The version line is checked on its own first, so a newer format is reported as such
// rather than as damage.
result<void> check_version(std::string_view text) {
    if (!text.starts_with(version_prefix)) return bad("not a log-start-offset file");
    auto nl = text.find('\n');
    if (nl == std::string_view::npos) return bad("truncated in the version line");
    if (text.substr(0, nl + 1) != version_line)
        return {
            errc::unsupported,
            fmt::format("log-start-offset format {} is not supported (know v1)",
                        text.substr(version_prefix.size() - 1, nl - version_prefix.size() + 1))};
    return {};
}

}  // namespace

bytes encode_log_start(offset_t offset) {
    std::string body = fmt::format("{}{}\n", version_line, offset);
    std::string text = fmt::format("{}{:08x}\n", body, crc32c(body.data(), body.size()));
    return {text.begin(), text.end()};
}

result<offset_t> decode_log_start(bytes_view in) {
    const std::string_view text = as_text(in);
    if (text.size() > max_file_size) return bad(fmt::format("{} bytes is too long", text.size()));
    if (auto r = check_version(text); !r) return r.err();
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
    const size_t body_size = version_line.size() + nl + 1;
    if (crc32c(in.data(), body_size) != crc) return bad("CRC mismatch");
    // Plain decimal: no sign, no leading zero (the CRC already rules out most damage).
    offset_t offset = -1;
    auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
    if (digits.empty() || digits.front() == '-' || (digits.size() > 1 && digits.front() == '0') ||
        err != std::errc() || p != digits.data() + digits.size())
        return bad(fmt::format("malformed offset '{}'", digits));
    return offset;
}

result<void> write_log_start(const fs::path& dir, offset_t offset) {
    const fs::path tmp = dir / fmt::format("{}.tmp", log_start_file_name);
    const fs::path dst = dir / log_start_file_name;
    const bytes text = encode_log_start(offset);
    {
        auto f = open_file(tmp, O_WRONLY | O_CREAT | O_TRUNC);
        if (!f) return f.err();
        if (auto r = write_exact(**f, text.data(), text.size(), 0); !r) return r;
        if (auto r = sync_data(**f); !r) return r;
    }
    // rename() replaces the old file atomically: a crash leaves the old value or the
    // new one, never a mix; the directory fsync makes the new name durable.
    std::error_code ec;
    fs::rename(tmp, dst, ec);
    if (ec) return io_error_from_errno("rename", tmp, ec.value());
    return sync_dir(dir);
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

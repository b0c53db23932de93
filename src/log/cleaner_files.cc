#include "log/cleaner_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "common/crc32c.h"

namespace sluice::log {

namespace {

constexpr std::string_view version_prefix = "sluice cleaner-checkpoint v";
constexpr std::string_view version_line = "sluice cleaner-checkpoint v1\n";
constexpr size_t crc_digits = 8;  // u32 in hex
// Version line, up to 19 digits (int64 max) and a newline, CRC line.
constexpr size_t max_file_size = version_line.size() + 20 + crc_digits + 1;

error bad(const std::string& why) {
    return {errc::corrupt, why};
}

}  // namespace

bytes encode_clean_checkpoint(offset_t offset) {
    std::string body = fmt::format("{}{}\n", version_line, offset);
    std::string text = fmt::format("{}{:08x}\n", body, crc32c(body.data(), body.size()));
    return {text.begin(), text.end()};
}

result<offset_t> decode_clean_checkpoint(bytes_view in) {
    const std::string_view text(reinterpret_cast<const char*>(in.data()), in.size());
    if (text.size() > max_file_size) return bad(fmt::format("{} bytes is too long", text.size()));
    if (!text.starts_with(version_prefix)) return bad("not a cleaner-checkpoint file");
    if (!text.starts_with(version_line))
        return {errc::unsupported, "cleaner-checkpoint format is not supported (know v1)"};
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
    offset_t offset = -1;
    auto [p, err] = std::from_chars(digits.data(), digits.data() + digits.size(), offset);
    if (digits.empty() || digits.front() == '-' || err != std::errc() ||
        p != digits.data() + digits.size())
        return bad(fmt::format("malformed offset '{}'", digits));
    return offset;
}

result<void> write_clean_checkpoint(const fs::path& dir, offset_t offset) {
    const fs::path tmp = dir / fmt::format("{}.tmp", clean_checkpoint_name);
    const fs::path dst = dir / clean_checkpoint_name;
    const bytes text = encode_clean_checkpoint(offset);
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

result<offset_t> read_clean_checkpoint(const fs::path& dir) {
    auto text = read_whole_file(dir / clean_checkpoint_name);
    if (!text) return text.code() == errc::not_found ? result<offset_t>(offset_t{-1}) : text.err();
    auto v = decode_clean_checkpoint(*text);
    return v ? *v : offset_t{-1};
}

result<void> roll_clean_swap_forward(const fs::path& dir) {
    const fs::path cleaning = dir / cleaning_dir_name;
    std::vector<fs::path> files;
    std::error_code ec;
    for (fs::directory_iterator it(cleaning, ec), end; !ec && it != end; it.increment(ec))
        files.push_back(it->path());
    if (ec && ec != std::errc::no_such_file_or_directory)
        return io_error_from_errno("list", cleaning, ec.value());
    // Renames are idempotent across crashes: a file already moved is simply gone from
    // cleaning/, and the marker stays until every one has moved.
    for (const auto& p : files) {
        fs::rename(p, dir / p.filename(), ec);
        if (ec) return io_error_from_errno("rename", p, ec.value());
    }
    if (auto r = sync_dir(dir); !r) return r;
    const fs::path marker = dir / clean_swap_marker_name;
    if (::unlink(marker.c_str()) != 0 && errno != ENOENT)
        return io_error_from_errno("unlink", marker, errno);
    return sync_dir(dir);
}

result<void> finish_clean_swap(const fs::path& dir, repair_summary& sum) {
    std::error_code ec;
    const bool marker = fs::exists(dir / clean_swap_marker_name, ec);
    if (ec) return io_error_from_errno("stat", dir / clean_swap_marker_name, ec.value());
    if (marker) {
        if (auto r = roll_clean_swap_forward(dir); !r) return r;
        sum.notes.push_back("finished an interrupted compaction swap");
    }
    const fs::path cleaning = dir / cleaning_dir_name;
    if (!fs::exists(cleaning, ec)) return {};
    const auto removed = fs::remove_all(cleaning, ec);
    if (ec) return io_error_from_errno("remove", cleaning, ec.value());
    if (removed > 1) sum.notes.push_back("rolled back an unfinished compaction pass");
    return {};
}

}  // namespace sluice::log

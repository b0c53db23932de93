#include "log/cleaner_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "log/offset_file.h"
#include "log/segment.h"

namespace sluice::log {

namespace {
constexpr std::string_view kind = "cleaner-checkpoint";
constexpr std::string_view swap_marker_text = "sluice cleaner-swap v2\n";
}  // namespace

result<void> write_clean_swap_marker(const fs::path& dir) {
    auto m = open_file(dir / clean_swap_marker_name, O_WRONLY | O_CREAT | O_TRUNC);
    if (!m) return m.err();
    const auto* text = reinterpret_cast<const uint8_t*>(swap_marker_text.data());
    if (auto r = write_exact(**m, text, swap_marker_text.size(), 0); !r) return r;
    if (auto r = sync_data(**m); !r) return r;
    return sync_dir(dir);
}

bytes encode_clean_checkpoint(offset_t offset) { return encode_offset_file(kind, offset); }

result<offset_t> decode_clean_checkpoint(bytes_view text) { return decode_offset_file(kind, text); }

result<void> write_clean_checkpoint(const fs::path& dir, offset_t offset) {
    return write_offset_file(dir, clean_checkpoint_name, kind, offset);
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
    // cleaning/, and the marker stays until every one has moved. So are deletions: a
    // merged segment's files go before its .merged file does.
    std::vector<fs::path> merged;
    for (const auto& p : files) {
        if (p.extension() == merged_ext) {
            merged.push_back(p);
            continue;
        }
        fs::rename(p, dir / p.filename(), ec);
        if (ec) return io_error_from_errno("rename", p, ec.value());
    }
    if (auto r = sync_dir(dir); !r) return r;
    for (const auto& p : merged) {
        const offset_t base = parse_segment_file_name(p.filename().string(), merged_ext);
        if (base >= 0) {
            if (auto r = remove_segment_files(dir, base); !r) return r;
        }
        if (::unlink(p.c_str()) != 0 && errno != ENOENT) return io_error_from_errno("unlink", p, errno);
    }
    if (!merged.empty()) {
        if (auto r = sync_dir(dir); !r) return r;
    }
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
        // Empty: version 1 (no .merged files, which this version reads alike), or a
        // version 2 marker whose text a crash cut short, like any prefix of it: either
        // way the pass had committed. Another text: a format this version does not
        // know; the directory stays as it is.
        auto text = read_whole_file(dir / clean_swap_marker_name);
        if (!text) return text.err();
        const std::string_view got(reinterpret_cast<const char*>(text->data()), text->size());
        if (!swap_marker_text.starts_with(got))
            return error{errc::unsupported,
                         fmt::format("{}: unknown compaction swap format", dir.string())};
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

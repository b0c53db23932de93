// Objects as files under one directory: a key "a/b" is the file DIR/a/b. Good enough for
// tests of other parts of shared mode on one machine; S3 is the store that runs.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <vector>

#include <sys/stat.h>

#include <fmt/format.h>

#include "shared/object_store.h"

namespace sluice::shared {

namespace {

namespace fs = std::filesystem;

class local_object_store final : public object_store {
  public:
    explicit local_object_store(fs::path dir) : _dir(std::move(dir)) {}

    result<void> put(std::string_view key, std::string_view data) override {
        auto path = checked(key);
        if (!path) return path.err();
        std::error_code ec;
        fs::create_directories(path->parent_path(), ec);
        if (ec) return io(key, "mkdir", ec);
        // Written aside and renamed, so a reader sees the old object or the new one whole.
        fs::path tmp = path->string() + ".tmp-put";
        {
            std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
            out.write(data.data(), static_cast<std::streamsize>(data.size()));
            if (!out.flush())
                return error{errc::io_error,
                             fmt::format("{}: PUT {}: write failed", describe(), key)};
        }
        fs::rename(tmp, *path, ec);
        if (ec) return io(key, "rename", ec);
        return {};
    }

    result<std::string> get(std::string_view key, std::optional<byte_range> range) override {
        auto path = checked(key);
        if (!path) return path.err();
        std::ifstream in(*path, std::ios::binary);
        if (!in)
            return error{errc::not_found,
                         fmt::format("{}: GET {}: no such object", describe(), key)};
        std::error_code ec;
        uint64_t size = fs::file_size(*path, ec);
        if (ec) return io(key, "stat", ec);
        uint64_t offset = range ? range->offset : 0;
        uint64_t length = range ? range->length : size;
        if (range && length > 0 && offset >= size) {
            return error{errc::out_of_range,
                         fmt::format("{}: GET {}: range starts at {} past the object's {} bytes",
                                     describe(), key, offset, size)};
        }
        length = std::min(length, size - std::min(offset, size));
        std::string out(length, '\0');
        in.seekg(static_cast<std::streamoff>(offset));
        in.read(out.data(), static_cast<std::streamsize>(length));
        if (static_cast<uint64_t>(in.gcount()) != length) {
            return error{errc::io_error, fmt::format("{}: GET {}: short read", describe(), key)};
        }
        return out;
    }

    result<object_info> head(std::string_view key) override {
        auto path = checked(key);
        if (!path) return path.err();
        std::error_code ec;
        uint64_t size = fs::file_size(*path, ec);
        if (ec)
            return error{errc::not_found,
                         fmt::format("{}: HEAD {}: no such object", describe(), key)};
        return object_info{std::string(key), size, {}};
    }

    result<void> remove(std::string_view key) override {
        auto path = checked(key);
        if (!path) return path.err();
        std::error_code ec;
        fs::remove(*path, ec);
        if (ec) return io(key, "remove", ec);
        return {};
    }

    result<std::vector<object_info>> list(std::string_view prefix) override {
        std::vector<object_info> out;
        std::error_code ec;
        if (!fs::exists(_dir, ec)) return out;
        for (auto it = fs::recursive_directory_iterator(_dir, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            if (!it->is_regular_file()) continue;
            std::string key = fs::relative(it->path(), _dir).generic_string();
            if (key.ends_with(".tmp-put") || key.compare(0, prefix.size(), prefix) != 0) continue;
            struct stat st {};
            const int64_t mtime_ms =
                ::stat(it->path().c_str(), &st) == 0
                    ? int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000
                    : -1;
            out.push_back({key, it->file_size(), {}, mtime_ms});
        }
        if (ec)
            return error{errc::io_error,
                         fmt::format("{}: LIST {}: {}", describe(), prefix, ec.message())};
        std::sort(out.begin(), out.end(),
                  [](const auto& a, const auto& b) { return a.key < b.key; });
        return out;
    }

    std::string describe() const override { return "local object store " + _dir.string(); }

  private:
    // Keys are relative paths without "." or ".." steps, so no key escapes the directory.
    result<fs::path> checked(std::string_view key) const {
        fs::path rel(key);
        bool bad = key.empty() || rel.is_absolute();
        for (const auto& part : rel) bad = bad || part == ".." || part == ".";
        if (bad)
            return error{errc::invalid_argument,
                         fmt::format("{}: '{}' is not a valid key", describe(), key)};
        return _dir / rel;
    }

    error io(std::string_view key, std::string_view what, const std::error_code& ec) const {
        return error{errc::io_error,
                     fmt::format("{}: {} {}: {}", describe(), what, key, ec.message()), ec.value()};
    }

    fs::path _dir;
};

}  // namespace

result<std::unique_ptr<object_store>> make_local_object_store(std::string directory) {
    if (directory.empty())
        return error{errc::invalid_config, "no directory given for the local object store"};
    return std::unique_ptr<object_store>(new local_object_store(std::move(directory)));
}

}  // namespace sluice::shared

// The disk tier of shared mode's read-through cache (src/shared/disk_cache.h) behind the
// memory tier (object_cache.h), over the local object store with its GETs counted.

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <vector>

#include "shared/disk_cache.h"
#include "shared/object_cache.h"
#include "shared/object_store.h"

namespace sluice::shared {

namespace {

namespace fs = std::filesystem;

// The local object store, counting the GETs that reach it.
class counting_store final : public object_store {
  public:
    explicit counting_store(std::unique_ptr<object_store> inner) : _inner(std::move(inner)) {}
    result<void> put(std::string_view key, std::string_view data) override {
        return _inner->put(key, data);
    }
    result<std::string> get(std::string_view key, std::optional<byte_range> range) override {
        ++gets;
        return _inner->get(key, range);
    }
    result<object_info> head(std::string_view key) override { return _inner->head(key); }
    result<void> remove(std::string_view key) override { return _inner->remove(key); }
    result<std::vector<object_info>> list(std::string_view prefix) override {
        return _inner->list(prefix);
    }
    std::string describe() const override { return _inner->describe(); }

    std::atomic<int> gets{0};

  private:
    std::unique_ptr<object_store> _inner;
};

struct cache_fixture {
    fs::path root;
    fs::path cache_dir;
    std::unique_ptr<counting_store> store;

    explicit cache_fixture(const char* name) {
        root = fs::path(::testing::TempDir()) / name;
        fs::remove_all(root);
        cache_dir = root / "object-cache";
        store = std::make_unique<counting_store>(
            std::move(make_local_object_store((root / "store").string()).value()));
    }

    disk_cache_config config(uint64_t budget = 1 << 20) const {
        disk_cache_config c;
        c.dir = cache_dir;
        c.budget_bytes = budget;
        return c;
    }

    // Reads through a fresh memory tier (so that only the disk tier can spare a GET).
    std::string read(disk_cache& disk, std::string_view key, uint64_t offset, uint64_t length) {
        object_cache cache(*store, 1 << 20, &disk);
        std::string out;
        auto r = cache.read(key, offset, length, out);
        EXPECT_TRUE(r.ok()) << r.err().message;
        return out;
    }
};

std::vector<fs::path> entry_files(const fs::path& dir) {
    std::vector<fs::path> out;
    for (const auto& f : fs::recursive_directory_iterator(dir))
        if (f.path().extension() == ".range") out.push_back(f.path());
    return out;
}

std::string object_of(size_t n, char seed) {
    std::string s(n, '\0');
    for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(seed + static_cast<char>(i % 23));
    return s;
}

}  // namespace

TEST(DiskCache, AMissFillsItAndAHitReadsNoStore) {
    cache_fixture f("disk_cache_fill");
    const auto obj = object_of(1000, 'a');
    ASSERT_TRUE(f.store->put("data/0/1", obj).ok());
    disk_cache disk(f.config());
    EXPECT_EQ(f.read(disk, "data/0/1", 100, 300), obj.substr(100, 300));
    EXPECT_EQ(f.store->gets, 1);
    disk.flush();
    EXPECT_EQ(disk.counters().entries, 1u);
    EXPECT_EQ(entry_files(f.cache_dir).size(), 1u);
    // A fresh memory tier misses; the disk holds it: no GET, even for a range inside.
    EXPECT_EQ(f.read(disk, "data/0/1", 150, 50), obj.substr(150, 50));
    EXPECT_EQ(f.store->gets, 1);
    EXPECT_EQ(disk.counters().hits, 1u);
    // Reaching past what it holds: the store.
    EXPECT_EQ(f.read(disk, "data/0/1", 350, 100), obj.substr(350, 100));
    EXPECT_EQ(f.store->gets, 2);
    // Both tiers: the second read of a range the memory tier holds asks neither.
    object_cache cache(*f.store, 1 << 20, &disk);
    std::string out;
    ASSERT_TRUE(cache.read("data/0/1", 100, 300, out).ok());
    ASSERT_TRUE(cache.read("data/0/1", 100, 300, out).ok());
    EXPECT_EQ(cache.counters().hits, 1u);
    EXPECT_EQ(disk.counters().hits, 2u);
    EXPECT_EQ(f.store->gets, 2);
}

TEST(DiskCache, PutRangesGoToDiskAndARestartReusesThem) {
    cache_fixture f("disk_cache_restart");
    const auto obj = object_of(4096, 'k');
    ASSERT_TRUE(f.store->put("data/1/7", obj).ok());
    {
        disk_cache disk(f.config());
        object_cache cache(*f.store, 1 << 20, &disk);
        // What the producing broker puts after its upload.
        cache.put("data/1/7", 0, std::make_shared<const std::string>(obj.substr(0, 2048)));
        cache.put("data/1/7", 2048, std::make_shared<const std::string>(obj.substr(2048)));
    }  // the destructor finishes the queued writes
    EXPECT_EQ(entry_files(f.cache_dir).size(), 2u);
    // Leftovers of a write a crash cut off are deleted at start; others' files are left.
    const auto sub = entry_files(f.cache_dir)[0].parent_path();
    std::ofstream(sub / "0123456789abcdef-0-10.range.tmp") << "half";
    std::ofstream(f.cache_dir / "README") << "not the cache's";
    disk_cache disk(f.config());
    EXPECT_EQ(disk.counters().entries, 2u);
    EXPECT_FALSE(fs::exists(sub / "0123456789abcdef-0-10.range.tmp"));
    EXPECT_TRUE(fs::exists(f.cache_dir / "README"));
    EXPECT_EQ(f.read(disk, "data/1/7", 0, 2048), obj.substr(0, 2048));
    EXPECT_EQ(f.read(disk, "data/1/7", 3000, 1000), obj.substr(3000, 1000));
    EXPECT_EQ(f.store->gets, 0);
    EXPECT_EQ(disk.counters().hits, 2u);
}

TEST(DiskCache, ACorruptOrTruncatedEntryIsDroppedAndReadFromTheStore) {
    cache_fixture f("disk_cache_corrupt");
    const auto a = object_of(500, 'A');
    const auto b = object_of(500, 'B');
    ASSERT_TRUE(f.store->put("a", a).ok());
    ASSERT_TRUE(f.store->put("b", b).ok());
    {
        disk_cache disk(f.config());
        f.read(disk, "a", 0, 500);
        f.read(disk, "b", 0, 500);
    }
    ASSERT_EQ(f.store->gets, 2);
    auto files = entry_files(f.cache_dir);
    ASSERT_EQ(files.size(), 2u);
    const auto size = fs::file_size(files[0]);
    // One file with a byte of its data flipped, the other cut short (kill -9 after the
    // rename cannot leave that, a failing disk can): neither is served.
    {
        std::fstream io(files[0], std::ios::in | std::ios::out | std::ios::binary);
        io.seekp(static_cast<std::streamoff>(size - 10));
        io.put('\x7f');
    }
    fs::resize_file(files[1], fs::file_size(files[1]) - 100);
    disk_cache disk(f.config());
    // The cut one is dropped at the scan (its size is not its header's); the damaged one
    // at its read, by the CRC.
    EXPECT_EQ(disk.counters().entries, 1u);
    EXPECT_EQ(f.read(disk, "a", 0, 500), a);
    EXPECT_EQ(f.read(disk, "b", 0, 500), b);
    EXPECT_EQ(f.store->gets, 4);
    EXPECT_EQ(disk.counters().corrupt, 1u);
    // Both were written afresh from what the store returned, and serve again.
    disk.flush();
    EXPECT_EQ(disk.counters().entries, 2u);
    EXPECT_EQ(f.read(disk, "a", 10, 20), a.substr(10, 20));
    EXPECT_EQ(f.read(disk, "b", 10, 20), b.substr(10, 20));
    EXPECT_EQ(f.store->gets, 4);
}

TEST(DiskCache, TheBudgetEvictsTheLeastRecentlyUsed) {
    cache_fixture f("disk_cache_budget");
    for (char c : {'p', 'q', 'r'})
        ASSERT_TRUE(f.store->put(std::string(1, c), object_of(1000, c)).ok());
    // Room for two entries of ~1050 bytes (header, key, data), not three.
    disk_cache disk(f.config(2200));
    f.read(disk, "p", 0, 1000);
    f.read(disk, "q", 0, 1000);
    disk.flush();
    f.read(disk, "p", 0, 1000);  // a hit: p is now the more recent
    f.read(disk, "r", 0, 1000);  // a miss, written: q goes
    disk.flush();
    EXPECT_EQ(disk.counters().entries, 2u);
    EXPECT_LE(disk.counters().bytes, 2200u);
    EXPECT_EQ(entry_files(f.cache_dir).size(), 2u);
    const int gets = f.store->gets;
    f.read(disk, "p", 0, 1000);
    f.read(disk, "r", 0, 1000);
    EXPECT_EQ(f.store->gets, gets);
    f.read(disk, "q", 0, 1000);
    EXPECT_EQ(f.store->gets, gets + 1);
}

TEST(DiskCache, ARestartWithASmallerBudgetKeepsTheNewest) {
    cache_fixture f("disk_cache_smaller");
    for (char c : {'x', 'y', 'z'})
        ASSERT_TRUE(f.store->put(std::string(1, c), object_of(1000, c)).ok());
    {
        disk_cache disk(f.config());
        for (char c : {'x', 'y', 'z'}) f.read(disk, std::string(1, c), 0, 1000);
    }
    auto files = entry_files(f.cache_dir);
    ASSERT_EQ(files.size(), 3u);
    // Last used: x, then y, then z (set, as the three writes may share one mtime tick).
    const auto now = fs::file_time_type::clock::now();
    for (const auto& p : files) {
        std::ifstream in(p, std::ios::binary);
        std::string content((std::istreambuf_iterator<char>(in)), {});
        const char c = content[48];  // the key's one byte
        fs::last_write_time(p, now - std::chrono::seconds('z' - c + 1));
    }
    disk_cache disk(f.config(1100));
    EXPECT_EQ(disk.counters().entries, 1u);
    EXPECT_EQ(entry_files(f.cache_dir).size(), 1u);
    f.read(disk, "z", 0, 1000);
    EXPECT_EQ(f.store->gets, 3);  // z was kept
}

TEST(DiskCache, AFailingWriteFallsBackToTheStore) {
    cache_fixture f("disk_cache_failing");
    const auto obj = object_of(800, 'f');
    ASSERT_TRUE(f.store->put("o", obj).ok());
    {
        // Root may write anywhere: a regular file where the directory should be stops it.
        fs::create_directories(f.root);
        std::ofstream(f.cache_dir) << "in the way";
        disk_cache disk(f.config());
        EXPECT_EQ(f.read(disk, "o", 0, 800), obj);
        EXPECT_EQ(f.read(disk, "o", 0, 800), obj);
        disk.flush();
        EXPECT_EQ(f.store->gets, 2);
        EXPECT_EQ(disk.counters().write_failures, 2u);
        EXPECT_EQ(disk.counters().entries, 0u);
    }
    // The directory taken away from a running cache: its writes fail, its reads go to
    // the store.
    fs::remove(f.cache_dir);
    disk_cache disk(f.config());
    fs::remove_all(f.cache_dir);
    std::ofstream(f.cache_dir) << "in the way";
    EXPECT_EQ(f.read(disk, "o", 0, 800), obj);
    disk.flush();
    EXPECT_EQ(disk.counters().write_failures, 1u);
    EXPECT_EQ(disk.counters().entries, 0u);
    EXPECT_EQ(f.read(disk, "o", 100, 100), obj.substr(100, 100));
    disk.flush();  // its write fails too, before the directory comes back
    EXPECT_EQ(disk.counters().write_failures, 2u);
    EXPECT_EQ(f.store->gets, 4);
    // Once it can write again, it does.
    fs::remove(f.cache_dir);
    fs::create_directories(f.cache_dir);
    EXPECT_EQ(f.read(disk, "o", 0, 800), obj);
    disk.flush();
    EXPECT_EQ(disk.counters().writes, 1u);
    EXPECT_EQ(f.read(disk, "o", 0, 800), obj);
    EXPECT_EQ(f.store->gets, 5);
}

TEST(DiskCache, TwoCachesNeverShareADirectory) {
    cache_fixture f("disk_cache_locked");
    ASSERT_TRUE(f.store->put("o", "0123456789").ok());
    disk_cache first(f.config());
    disk_cache second(f.config());
    f.read(second, "o", 0, 10);
    second.flush();
    EXPECT_EQ(second.counters().write_failures, 1u);
    EXPECT_EQ(entry_files(f.cache_dir).size(), 0u);
}

}  // namespace sluice::shared

// The VFS of users' SQL sessions (sql/budget.h): SQLite's default VFS, except that a
// temporary file (one SQLite opens without a name: a sort's runs, a temporary table or
// index, a statement journal that outgrew memory) is created in <data_dir>/tmp rather
// than in /var/tmp, and its growth is charged to the session's account, so that a
// statement past its bound fails (SQLITE_FULL) before the disk fills.

#include <sqlite3.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <system_error>

#include "catalog/shm_vfs.h"
#include "sql/budget.h"

namespace sluice::sql {

namespace {

constexpr const char* temp_vfs_name = "sluice-sql";

sqlite3_vfs* g_base = nullptr;  // the default VFS we wrap
sqlite3_vfs g_vfs;
std::string g_temp_dir;
std::atomic<uint64_t> g_temp_seq{0};

// A temporary file: our methods, the account it is charged to, and the base VFS's file
// right behind (its size is the base's szOsFile).
struct temp_file {
    sqlite3_file base_file;  // pMethods: ours
    sqlite3_file* real;      // the base VFS's file, after this struct
    budget_account* account;
    uint32_t generation;
    uint64_t charged;  // bytes charged: the largest size written, less truncations
    char name[512];    // the path, kept while open (with the two NULs SQLite expects)
};

temp_file* as_temp(sqlite3_file* f) {
    return reinterpret_cast<temp_file*>(f);
}

void uncharge(temp_file* t, uint64_t n) {
    if (n == 0) return;
    if (t->account) t->account->uncharge_temp(n, t->generation);
    t->charged -= n;
}

int temp_close(sqlite3_file* f) {
    temp_file* t = as_temp(f);
    uncharge(t, t->charged);
    return t->real->pMethods ? t->real->pMethods->xClose(t->real) : SQLITE_OK;
}

int temp_read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
    temp_file* t = as_temp(f);
    return t->real->pMethods->xRead(t->real, buf, n, off);
}

int temp_write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
    temp_file* t = as_temp(f);
    const uint64_t end = static_cast<uint64_t>(off) + static_cast<uint64_t>(n);
    if (end > t->charged) {
        const uint64_t grow = end - t->charged;
        // No account: a file the engine's own set-up statements opened, charged to nobody.
        if (t->account && !t->account->charge_temp(grow)) return SQLITE_FULL;
        t->charged = end;
    }
    return t->real->pMethods->xWrite(t->real, buf, n, off);
}

int temp_truncate(sqlite3_file* f, sqlite3_int64 size) {
    temp_file* t = as_temp(f);
    int rc = t->real->pMethods->xTruncate(t->real, size);
    if (rc == SQLITE_OK && static_cast<uint64_t>(size) < t->charged)
        uncharge(t, t->charged - static_cast<uint64_t>(size));
    return rc;
}

int temp_sync(sqlite3_file* f, int flags) {
    return as_temp(f)->real->pMethods->xSync(as_temp(f)->real, flags);
}
int temp_file_size(sqlite3_file* f, sqlite3_int64* size) {
    return as_temp(f)->real->pMethods->xFileSize(as_temp(f)->real, size);
}
int temp_lock(sqlite3_file* f, int level) {
    return as_temp(f)->real->pMethods->xLock(as_temp(f)->real, level);
}
int temp_unlock(sqlite3_file* f, int level) {
    return as_temp(f)->real->pMethods->xUnlock(as_temp(f)->real, level);
}
int temp_check_reserved(sqlite3_file* f, int* out) {
    return as_temp(f)->real->pMethods->xCheckReservedLock(as_temp(f)->real, out);
}
int temp_file_control(sqlite3_file* f, int op, void* arg) {
    return as_temp(f)->real->pMethods->xFileControl(as_temp(f)->real, op, arg);
}
int temp_sector_size(sqlite3_file* f) {
    return as_temp(f)->real->pMethods->xSectorSize(as_temp(f)->real);
}
int temp_device_characteristics(sqlite3_file* f) {
    return as_temp(f)->real->pMethods->xDeviceCharacteristics(as_temp(f)->real);
}

// Version 1: temporary files are never shared-memory (WAL) or memory-mapped files, so
// SQLite does not look for the later methods.
const sqlite3_io_methods temp_methods = {
    1,
    temp_close,
    temp_read,
    temp_write,
    temp_truncate,
    temp_sync,
    temp_file_size,
    temp_lock,
    temp_unlock,
    temp_check_reserved,
    temp_file_control,
    temp_sector_size,
    temp_device_characteristics,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
    // A named file (a schema, its WAL or journal): the base VFS's own, in the same space.
    if (name) return g_base->xOpen(g_base, name, f, flags, out_flags);
    auto* t = new (f) temp_file{};
    t->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(temp_file));
    t->account = current_budget_account();
    t->generation = t->account ? t->account->generation() : 0;
    const auto path = fmt::format("{}/sql-{}-{}.tmp", g_temp_dir, ::getpid(),
                                  g_temp_seq.fetch_add(1, std::memory_order_relaxed));
    if (path.size() + 4 > sizeof(t->name)) return SQLITE_CANTOPEN;
    std::memcpy(t->name, path.c_str(), path.size());  // the rest is NULs
    // Deleted on close: the unix VFS unlinks it as soon as it is open, so nothing stays
    // behind even after kill -9.
    int rc = g_base->xOpen(g_base, t->name, t->real, flags | SQLITE_OPEN_DELETEONCLOSE, out_flags);
    if (rc != SQLITE_OK) {
        t->real->pMethods = nullptr;
        f->pMethods = nullptr;
        return rc;
    }
    f->pMethods = &temp_methods;
    return SQLITE_OK;
}

void* vfs_dl_open(sqlite3_vfs*, const char*) {
    return nullptr;  // extensions are never loaded into users' sessions
}
void vfs_dl_error(sqlite3_vfs*, int n, char* msg) {
    std::snprintf(msg, static_cast<size_t>(n), "extensions are not available");
}

}  // namespace

std::string install_temp_vfs(const std::filesystem::path& temp_dir, std::string* error) {
    static std::mutex mu;
    std::lock_guard lock(mu);
    std::error_code ec;
    std::filesystem::create_directories(temp_dir, ec);
    if (ec) {
        *error = fmt::format("cannot create {}: {}", temp_dir.string(), ec.message());
        return {};
    }
    // Files left by an earlier run (only possible if it died between creating a file and
    // unlinking it) go; nothing else lives here.
    for (const auto& e : std::filesystem::directory_iterator(temp_dir, ec))
        std::filesystem::remove_all(e.path(), ec);
    g_temp_dir = std::filesystem::absolute(temp_dir, ec).string();
    if (g_base) return temp_vfs_name;  // registered before; the directory may change (tests)
    // Over the default VFS that allocates WAL indexes before use, as every connection's.
    catalog::install_shm_vfs();
    g_base = sqlite3_vfs_find(nullptr);
    if (!g_base || g_base->iVersion < 2) {
        *error = "SQLite's default VFS is missing or too old";
        return {};
    }
    g_vfs = catalog::forwarding_vfs(g_base, temp_vfs_name, static_cast<int>(sizeof(temp_file)),
                                    vfs_open);
    g_vfs.xDlOpen = vfs_dl_open;
    g_vfs.xDlError = vfs_dl_error;
    if (int rc = sqlite3_vfs_register(&g_vfs, 0); rc != SQLITE_OK) {
        g_base = nullptr;
        *error = fmt::format("cannot register the SQL VFS: {}", sqlite3_errstr(rc));
        return {};
    }
    return temp_vfs_name;
}

}  // namespace sluice::sql

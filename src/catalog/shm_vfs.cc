// The default VFS of the process (catalog/shm_vfs.h): SQLite's own, except that a
// database file's WAL-index regions are allocated on disk before SQLite uses them.

#include "catalog/shm_vfs.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace sluice::catalog {

namespace {

constexpr const char* shm_vfs_name = "sluice-shm";

sqlite3_vfs* g_base = nullptr;  // the VFS we wrap (SQLite's default, "unix")
sqlite3_vfs g_vfs;
std::atomic<bool (*)(void*)> g_no_space_hook{nullptr};
std::atomic<void*> g_no_space_arg{nullptr};

// A main database file: our methods, then the base VFS's file right behind.
struct db_file {
    sqlite3_file base_file;  // pMethods: ours
    sqlite3_file* real;      // the base VFS's file, after this struct
    const char* name;        // SQLite keeps the name passed to xOpen until xClose
    // WAL-index bytes this connection has made sure are allocated: SQLite maps each
    // region once per connection, so the check costs one system call per region.
    sqlite3_int64 allocated;
};

db_file* as_db(sqlite3_file* f) {
    return reinterpret_cast<db_file*>(f);
}
sqlite3_file* real(sqlite3_file* f) {
    return as_db(f)->real;
}

// Allocates the first `end` bytes of the -shm file without changing its size (SQLite
// sized it already). 0, or the errno of the failure; a file system without fallocate
// has no holes to fill (tmpfs, or nothing better can be done), and counts as success.
int allocate_shm(const char* db_name, sqlite3_int64 end) {
    const std::string path = std::string(db_name) + "-shm";
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return errno;
    int err = 0;
    while (::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, end) != 0) {
        if (errno == EINTR) continue;
        if (errno != EOPNOTSUPP && errno != ENOSYS) err = errno;
        break;
    }
    ::close(fd);
    return err;
}

int db_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** pp) {
    db_file* d = as_db(f);
    const int rc = d->real->pMethods->xShmMap(d->real, region, size, extend, pp);
    // Not mapped (the region does not exist yet, or the index is read-only): nothing
    // will be stored through it by us.
    if (rc != SQLITE_OK || *pp == nullptr) return rc;
    const sqlite3_int64 end = (static_cast<sqlite3_int64>(region) + 1) * size;
    if (end <= d->allocated) return rc;
    int err = allocate_shm(d->name, end);
    if (err == ENOSPC) {
        // A WAL index opened afresh on a full disk (a restart): the file was truncated
        // first, and the blocks it had may be gone to others meanwhile.
        auto* hook = g_no_space_hook.load();
        if (hook && hook(g_no_space_arg.load())) err = allocate_shm(d->name, end);
    }
    if (err != 0) {
        // SQLite keeps no pointer to a region it did not get: none of its bytes is used.
        *pp = nullptr;
        return err == ENOSPC || err == EDQUOT ? SQLITE_FULL : SQLITE_IOERR_SHMSIZE;
    }
    d->allocated = end;
    return rc;
}

int db_close(sqlite3_file* f) {
    return real(f)->pMethods ? real(f)->pMethods->xClose(real(f)) : SQLITE_OK;
}
int db_read(sqlite3_file* f, void* buf, int n, sqlite3_int64 off) {
    return real(f)->pMethods->xRead(real(f), buf, n, off);
}
int db_write(sqlite3_file* f, const void* buf, int n, sqlite3_int64 off) {
    return real(f)->pMethods->xWrite(real(f), buf, n, off);
}
int db_truncate(sqlite3_file* f, sqlite3_int64 size) {
    return real(f)->pMethods->xTruncate(real(f), size);
}
int db_sync(sqlite3_file* f, int flags) {
    return real(f)->pMethods->xSync(real(f), flags);
}
int db_file_size(sqlite3_file* f, sqlite3_int64* size) {
    return real(f)->pMethods->xFileSize(real(f), size);
}
int db_lock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xLock(real(f), level);
}
int db_unlock(sqlite3_file* f, int level) {
    return real(f)->pMethods->xUnlock(real(f), level);
}
int db_check_reserved(sqlite3_file* f, int* out) {
    return real(f)->pMethods->xCheckReservedLock(real(f), out);
}
int db_file_control(sqlite3_file* f, int op, void* arg) {
    return real(f)->pMethods->xFileControl(real(f), op, arg);
}
int db_sector_size(sqlite3_file* f) {
    return real(f)->pMethods->xSectorSize(real(f));
}
int db_device_characteristics(sqlite3_file* f) {
    return real(f)->pMethods->xDeviceCharacteristics(real(f));
}
int db_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
    return real(f)->pMethods->xShmLock(real(f), offset, n, flags);
}
void db_shm_barrier(sqlite3_file* f) {
    real(f)->pMethods->xShmBarrier(real(f));
}
int db_shm_unmap(sqlite3_file* f, int delete_flag) {
    as_db(f)->allocated = 0;  // the file may be truncated when next opened
    return real(f)->pMethods->xShmUnmap(real(f), delete_flag);
}
int db_fetch(sqlite3_file* f, sqlite3_int64 off, int n, void** pp) {
    return real(f)->pMethods->xFetch(real(f), off, n, pp);
}
int db_unfetch(sqlite3_file* f, sqlite3_int64 off, void* p) {
    return real(f)->pMethods->xUnfetch(real(f), off, p);
}

// Version 3, as the unix VFS's: the WAL index and memory-mapped reads pass through.
const sqlite3_io_methods db_methods = {
    3,
    db_close,
    db_read,
    db_write,
    db_truncate,
    db_sync,
    db_file_size,
    db_lock,
    db_unlock,
    db_check_reserved,
    db_file_control,
    db_sector_size,
    db_device_characteristics,
    db_shm_map,
    db_shm_lock,
    db_shm_barrier,
    db_shm_unmap,
    db_fetch,
    db_unfetch,
};

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
    // Journals, WAL files and temporary files have no WAL index: the base's own file.
    if (!name || !(flags & SQLITE_OPEN_MAIN_DB)) return g_base->xOpen(g_base, name, f, flags, out_flags);
    auto* d = new (f) db_file{};
    d->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(db_file));
    d->name = name;
    const int rc = g_base->xOpen(g_base, name, d->real, flags, out_flags);
    if (rc != SQLITE_OK || !d->real->pMethods) {
        d->real->pMethods = nullptr;
        f->pMethods = nullptr;
        return rc;
    }
    // Only a base file with a WAL index of the version we forward gets wrapped.
    if (d->real->pMethods->iVersion < 3) {
        f->pMethods = nullptr;
        d->real->pMethods->xClose(d->real);
        return SQLITE_CANTOPEN;
    }
    f->pMethods = &db_methods;
    return SQLITE_OK;
}

sqlite3_vfs* base_of(sqlite3_vfs* v) {
    return static_cast<sqlite3_vfs*>(v->pAppData);
}
int vfs_delete(sqlite3_vfs* v, const char* name, int sync_dir) {
    return base_of(v)->xDelete(base_of(v), name, sync_dir);
}
int vfs_access(sqlite3_vfs* v, const char* name, int flags, int* out) {
    return base_of(v)->xAccess(base_of(v), name, flags, out);
}
int vfs_full_pathname(sqlite3_vfs* v, const char* name, int n, char* out) {
    return base_of(v)->xFullPathname(base_of(v), name, n, out);
}
void* vfs_dl_open(sqlite3_vfs* v, const char* name) {
    return base_of(v)->xDlOpen(base_of(v), name);
}
void vfs_dl_error(sqlite3_vfs* v, int n, char* msg) {
    base_of(v)->xDlError(base_of(v), n, msg);
}
void (*vfs_dl_sym(sqlite3_vfs* v, void* h, const char* sym))(void) {
    return base_of(v)->xDlSym(base_of(v), h, sym);
}
void vfs_dl_close(sqlite3_vfs* v, void* h) {
    base_of(v)->xDlClose(base_of(v), h);
}
int vfs_randomness(sqlite3_vfs* v, int n, char* out) {
    return base_of(v)->xRandomness(base_of(v), n, out);
}
int vfs_sleep(sqlite3_vfs* v, int us) {
    return base_of(v)->xSleep(base_of(v), us);
}
int vfs_current_time(sqlite3_vfs* v, double* out) {
    return base_of(v)->xCurrentTime(base_of(v), out);
}
int vfs_get_last_error(sqlite3_vfs* v, int n, char* out) {
    return base_of(v)->xGetLastError ? base_of(v)->xGetLastError(base_of(v), n, out) : 0;
}
int vfs_current_time_int64(sqlite3_vfs* v, sqlite3_int64* out) {
    return base_of(v)->xCurrentTimeInt64(base_of(v), out);
}

}  // namespace

void set_shm_no_space_hook(bool (*hook)(void*), void* arg) {
    g_no_space_arg.store(arg);
    g_no_space_hook.store(hook);
}

sqlite3_vfs forwarding_vfs(sqlite3_vfs* base, const char* name, int extra,
                           int (*open)(sqlite3_vfs*, const char*, sqlite3_file*, int, int*)) {
    sqlite3_vfs v{};
    v.iVersion = 2;
    v.szOsFile = extra + base->szOsFile;
    v.mxPathname = base->mxPathname;
    v.zName = name;
    v.pAppData = base;
    v.xOpen = open;
    v.xDelete = vfs_delete;
    v.xAccess = vfs_access;
    v.xFullPathname = vfs_full_pathname;
    v.xDlOpen = vfs_dl_open;
    v.xDlError = vfs_dl_error;
    v.xDlSym = vfs_dl_sym;
    v.xDlClose = vfs_dl_close;
    v.xRandomness = vfs_randomness;
    v.xSleep = vfs_sleep;
    v.xCurrentTime = vfs_current_time;
    v.xGetLastError = vfs_get_last_error;
    v.xCurrentTimeInt64 = vfs_current_time_int64;
    return v;
}

bool install_shm_vfs() {
    static std::mutex mu;
    std::lock_guard lock(mu);
    if (g_base) return true;
    sqlite3_vfs* base = sqlite3_vfs_find(nullptr);
    if (!base || base->iVersion < 2) return false;
    g_vfs = forwarding_vfs(base, shm_vfs_name, static_cast<int>(sizeof(db_file)), vfs_open);
    g_base = base;
    if (sqlite3_vfs_register(&g_vfs, 1) != SQLITE_OK) {
        g_base = nullptr;
        return false;
    }
    return true;
}

}  // namespace sluice::catalog

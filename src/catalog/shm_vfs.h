#pragma once

#include <sqlite3.h>

namespace sluice::catalog {

// Makes SQLite's default VFS one that allocates the blocks of a WAL index (the -shm
// file) before SQLite touches them through its memory mapping, for every connection of
// the process (catalog, expansions, SQL sessions), and returns whether it is in place.
// Idempotent; call before the first connection opens.
//
// Why: SQLite maps the -shm file and extends it by writing one byte at the end of each
// new 4 KiB page. On a file system whose blocks are smaller than a page (ext4 under
// 512 MiB makes 1 KiB blocks) the rest of the page stays a hole, and so does a page
// the file kept while truncated to 3 bytes; the first store into a hole needs a block,
// and on a full disk the kernel answers the store with SIGBUS, which kills the broker.
// Allocated first (fallocate), the stores need no new block; when the allocation fails
// for want of space, the statement fails with SQLITE_FULL instead.
bool install_shm_vfs();

// Called when a WAL index cannot be allocated for want of space: true when it freed
// some (the space reserve, docs/operations.md "Full disk"), and the allocation is tried
// once more. Set once, before connections open; none by default.
void set_shm_no_space_hook(bool (*hook)(void*), void* arg);

// A VFS named `name` that passes every call to `base` (kept in pAppData) but xOpen,
// whose files are `extra` bytes larger than base's: the frame of a VFS wrapping some
// of the files it opens. `base` must be of version 2 or later.
sqlite3_vfs forwarding_vfs(sqlite3_vfs* base, const char* name, int extra,
                           int (*open)(sqlite3_vfs*, const char*, sqlite3_file*, int, int*));

}  // namespace sluice::catalog

// The producer id allocator (docs/formats/catalog.md, meta key next_producer_id).

#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "catalog/catalog.h"
#include "catalog/sqlite_db.h"
#include "common/logging.h"

namespace sluice::catalog {

result<int64_t> catalog::allocate_producer_id() {
    std::lock_guard lock(_mu);
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto sel = _db->prepare("SELECT value FROM meta WHERE key = 'next_producer_id'");
    if (!sel) return sel.err();
    auto row = sel->step();
    if (!row) return row.err();
    if (!*row) return {errc::corrupt, "the meta table has no next_producer_id"};
    const std::string v = sel->column_text(0);
    char* end = nullptr;
    const int64_t id = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || id < 0)
        return {errc::corrupt, fmt::format("meta next_producer_id '{}' is not a producer id", v)};
    auto up = _db->prepare("UPDATE meta SET value = ?1 WHERE key = 'next_producer_id'");
    if (!up) return up.err();
    if (auto r = up->bind(1, std::to_string(id + 1)).run(); !r) return r.err();
    // Committed (synchronous=FULL) before the id is handed out: a crash never lets the
    // next start give it again.
    if (auto c = txn->commit(); !c) return c.err();
    return id;
}

}  // namespace sluice::catalog

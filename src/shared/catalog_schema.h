#pragma once

// The tables of the shared catalog in its PostgreSQL-compatible database, described with
// their version in docs/formats/shared-catalog.md.

#include "common/result.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// The version this build writes; docs/formats/shared-catalog.md says what each added.
inline constexpr int shared_catalog_version = 12;

// Creates the tables of a new catalog, or upgrades an older one, in one transaction
// that several brokers may run at once (they serialize on the version row). Fails,
// changing nothing, on a catalog newer than this build. Returns the version found
// before (0: none).
result<int> ensure_catalog_schema(pg_database& db);

}  // namespace sluice::shared

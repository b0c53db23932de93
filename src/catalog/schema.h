#pragma once

// The catalog's schema and its migrations. docs/formats/catalog.md is the specification;
// keep the two in step.

#include <cstdint>
#include <string>

#include "catalog/sqlite_db.h"
#include "common/result.h"

namespace sluice::catalog::detail {

// PRAGMA application_id of every catalog file: "SLCT" in ASCII, the magic number that
// tells a Sluice catalog from any other SQLite database.
constexpr int64_t catalog_application_id = 0x534C4354;

// The newest schema this build knows.
constexpr int64_t latest_schema_version = 11;

// Refuses files that are not Sluice catalogs (errc::corrupt) or whose schema is newer
// than latest_schema_version (errc::unsupported). A fresh, empty file passes.
result<void> check_file(db& d, const std::string& where);

// Brings the schema to latest_schema_version, one version per transaction, and returns
// the version the file had before.
result<int64_t> migrate(db& d);

}  // namespace sluice::catalog::detail

#pragma once

// Settings of the shared engines from the environment, for the test probe and the
// benchmark (tests/unit/shared/shared_probe.cc, bench/object_store_bench.cc):
//   SLUICE_S3_ENDPOINT, SLUICE_S3_BUCKET, SLUICE_S3_PREFIX, SLUICE_S3_REGION,
//   SLUICE_S3_ACCESS_KEY, SLUICE_S3_SECRET_KEY, SLUICE_S3_RETRY_DEADLINE_MS,
//   SLUICE_S3_REQUEST_TIMEOUT_MS, SLUICE_S3_LIST_PAGE_SIZE, SLUICE_S3_SIGN_PAYLOAD (0: no);
//   SLUICE_PG_URL, SLUICE_PG_RETRY_DEADLINE_MS.
// scripts/cluster writes them for a running dev cluster (DIR/env).

#include "shared/object_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

s3_config s3_config_from_env();
pg_config pg_config_from_env();

}  // namespace sluice::shared

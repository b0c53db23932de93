#pragma once

// Prototype for issue 36: a DuckDB table function over Sluice's partition logs, through
// DuckDB's C API (duckdb.h).
//
//   SELECT ... FROM kafka_topic('name' [, partition := P] [, from_offset := O]
//                               [, to_offset := O] [, from_timestamp := MS]
//                               [, to_timestamp := MS])
//
// Columns (as Sluice's topic tables, docs/sql.md): partition INTEGER, offset BIGINT,
// timestamp_producer BIGINT (ms), timestamp_broker BIGINT (ms, the append-time index),
// key VARCHAR, value VARCHAR, headers VARCHAR (a JSON array). Projection pushdown: only
// the columns the query reads are decoded and copied (timestamp_broker's append times
// are read only when it is). The C API has no filter pushdown, so the partition, offset
// and timestamp bounds are named parameters: the scan seeks to them (from_timestamp via
// the time index) and skips records outside them before building any column; DuckDB
// still applies the query's own WHERE. Partitions are scanned in parallel (one DuckDB
// thread per partition at most). Each partition is read up to its high watermark as of
// the scan's start.

#include <duckdb.h>

#include <string>

namespace sluice::log {
class log_manager;
}

namespace sluice::bench {

// Registers kafka_topic on `con`; `logs` (opened, with its topics declared) must outlive
// every query of the connection. Returns false when DuckDB refuses the registration.
bool register_kafka_topic(duckdb_connection con, log::log_manager* logs);

}  // namespace sluice::bench

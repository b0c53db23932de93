#pragma once

// The settings of `sluice serve` (serve_command.cc runs a broker from them) and the
// flags (and config-file keys) that set them (serve_flags.cc).

#include <CLI/CLI.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "app/metrics_endpoint.h"
#include "app/serve_limits.h"
#include "app/shared_serve.h"
#include "group/share/coordinator.h"
#include "group/types.h"
#include "sql/budget.h"

namespace sluice::app {

struct serve_options {
    std::string config_file;  // applied by with_config_file()
    std::string data_dir = "data";
    std::vector<std::string> listen{"127.0.0.1:9092"};
    std::vector<std::string> advertise;
    std::string tls_cert, tls_key, tls_client_ca;
    std::string tls_client_auth = "none";
    std::string http_tls_client_auth = "none";
    std::string sasl_mechanisms = "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512";
    int64_t sasl_session_lifetime_ms = 0;
    std::string authorization;  // empty: required when a listener authenticates
    bool auto_create = false;
    int32_t default_partitions = 1;
    std::vector<std::string> topic_defaults;
    size_t max_open_files = 1024;
    std::string log_level = "info";  // the root logger's; loggers change at run time
    group::config groups;
    group::share::config share_groups;
    int64_t offsets_retention_minutes = 10080;  // Kafka's default: 7 days
    int64_t offsets_retention_check_interval_ms = 600000;
    int64_t log_retention_check_interval_ms = 300000;
    int64_t log_cleaner_backoff_ms = 15000;
    int32_t transaction_max_timeout_ms = 900000;
    int64_t transaction_abort_check_interval_ms = 10000;
    int64_t transactional_id_expiration_ms = 604800000;
    int16_t transaction_version = 2;
    int64_t max_compaction_lag_ms = -1;  // -1: not given (the topic config's default)
    int64_t log_cleaner_io_bytes_per_sec = 32LL << 20;
    int64_t flush_pass_interval_us = 0;
    int64_t producer_id_expiration_ms = 24 * 60 * 60 * 1000;  // Kafka's default, one day
    std::string pg;    // PostgreSQL wire listener; empty: none
    std::string http;  // HTTP listener; empty: none
    int64_t sql_timeout_ms = 30000;
    uint64_t sql_max_rows = 1000000;
    std::string sql_engine = "duckdb";  // or sqlite (docs/sql.md, Engines)
    std::string sql_export_dir;         // COPY ... TO writes under it (duckdb only)
    size_t sql_max_connections = 64;
    sql::resource_bounds sql_bounds;  // --sql-*-memory, --sql-*-temp-bytes, --sql-max-value-bytes
    connection_limits limits;
    metrics_options metrics;
    shared_serve_options shared;
};

// Declares every flag of `sluice serve` on `cmd`, each writing into `o`.
void add_serve_flags(CLI::App& cmd, serve_options& o);

}  // namespace sluice::app

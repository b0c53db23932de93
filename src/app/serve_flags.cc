// The flags of `sluice serve` (serve_options.h); their config-file keys are the same
// names without the dashes (config_file.h).

#include <cstdint>
#include <limits>

#include "app/serve_options.h"
#include "app/share_group_options.h"
#include "app/sql_bounds_options.h"

namespace sluice::app {

void add_serve_flags(CLI::App& cmd, serve_options& o) {
    // Read by with_config_file() before parsing; declared so that --help lists it.
    cmd.add_option("--config", o.config_file,
                   "TOML file of settings: each key is a long flag's name without the dashes "
                   "(listen = [\"SASL_SSL://0.0.0.0:9093\"], tls-cert = \"...\", "
                   "auto-create-topics = true); a flag on the command line replaces the file's "
                   "setting, repeatable ones included. A syntax error, an unknown key or a wrong "
                   "type stops the start with the file's line");
    // With a config file, single-valued flags can come twice: the last (the command line) wins.
    cmd.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    cmd.add_option("--data-dir,-d", o.data_dir, "Directory for the catalog and partition logs")
        ->capture_default_str();
    cmd.add_option("--listen,-l", o.listen,
                   "Kafka listener [PROTOCOL://]HOST:PORT (repeatable); PROTOCOL is PLAINTEXT "
                   "(the default), SSL, SASL_PLAINTEXT or SASL_SSL; port 0 picks a free port, "
                   "printed at start-up")
        ->capture_default_str();
    cmd.add_option("--advertise", o.advertise,
                   "Address [PROTOCOL://]HOST:PORT announced in Metadata to clients of the "
                   "listeners of that protocol (repeatable); each is announced as its own broker "
                   "id and partition leadership is spread across them. Default: the listen "
                   "address");
    cmd.add_option("--tls-cert", o.tls_cert,
                   "PEM certificate (chain) of the SSL and SASL_SSL listeners; reloaded on "
                   "SIGHUP and when the file changes");
    cmd.add_option("--tls-key", o.tls_key, "PEM private key of --tls-cert");
    cmd.add_option("--tls-client-ca", o.tls_client_ca,
                   "PEM CA certificates that sign client certificates (mutual TLS)");
    cmd.add_option("--tls-client-auth", o.tls_client_auth,
                   "Client certificates on TLS listeners: required, requested or none; on an "
                   "SSL listener the principal is the certificate's common name")
        ->capture_default_str();
    cmd.add_option("--http-tls-client-auth", o.http_tls_client_auth,
                   "Client certificates on the HTTPS listener (--http https://...): required, "
                   "requested or none; a verified certificate's common name is the user of "
                   "requests without Basic credentials")
        ->capture_default_str();
    cmd.add_option("--sasl-mechanisms", o.sasl_mechanisms,
                   "SASL mechanisms of the SASL listeners, comma-separated")
        ->capture_default_str();
    cmd.add_option("--sasl-session-lifetime-ms", o.sasl_session_lifetime_ms,
                   "Kafka's connections.max.reauth.ms: a SASL session must re-authenticate "
                   "within this time or its connection closes; 0: unlimited")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--authorization", o.authorization,
                   "required (no matching Allow denies) or permissive (no matching policy "
                   "allows). Default: required when a listener authenticates (SASL, or SSL with "
                   "--tls-client-auth required), else permissive");
    cmd.add_flag("--auto-create-topics", o.auto_create,
                 "Create unknown topics when a client asks for them in Metadata");
    cmd.add_option("--default-partitions", o.default_partitions,
                   "Partitions of auto-created topics and of CreateTopics without a count")
        ->capture_default_str();
    cmd.add_option("--topic-default", o.topic_defaults,
                   "Broker-wide default for a topic config KEY=VALUE (repeatable), e.g. "
                   "segment.bytes=268435456");
    cmd.add_option("--max-open-files", o.max_open_files,
                   "Bound on segment files kept open at once (descriptor cache)")
        ->capture_default_str();
    cmd.add_option("--group-initial-rebalance-delay-ms", o.groups.initial_rebalance_delay_ms,
                   "How long a new consumer group waits for more members before its first "
                   "generation (extended per arrival, up to the rebalance timeout)")
        ->check(CLI::Range(0, 300000))
        ->capture_default_str();
    cmd.add_option("--group-min-session-timeout-ms", o.groups.min_session_timeout_ms,
                   "Smallest session timeout a group member may ask for")
        ->check(CLI::Range(1, 86400000))
        ->capture_default_str();
    cmd.add_option("--group-max-session-timeout-ms", o.groups.max_session_timeout_ms,
                   "Largest session timeout a group member may ask for")
        ->check(CLI::Range(1, 86400000))
        ->capture_default_str();
    cmd.add_option("--group-consumer-session-timeout-ms", o.groups.consumer_session_timeout_ms,
                   "Consumer groups (group.protocol=consumer): how long a member may go "
                   "without a heartbeat before it is removed (group.consumer.session.timeout.ms)")
        ->check(CLI::Range(1, 86400000))
        ->capture_default_str();
    cmd.add_option("--group-consumer-heartbeat-interval-ms",
                   o.groups.consumer_heartbeat_interval_ms,
                   "Consumer groups: the heartbeat interval members are told to keep "
                   "(group.consumer.heartbeat.interval.ms)")
        ->check(CLI::Range(1, 86400000))
        ->capture_default_str();
    cmd.add_option("--group-consumer-assignors", o.groups.consumer_assignors,
                   "Consumer groups: the server-side assignors offered, the first being the "
                   "default (group.consumer.assignors; uniform, range)")
        ->delimiter(',')
        ->check(CLI::IsMember({"uniform", "range"}))
        ->capture_default_str();
    cmd.add_option("--group-consumer-migration-policy", o.groups.consumer_migration_policy,
                   "Online migration between classic and consumer groups: a classic group "
                   "becomes a consumer group when a group.protocol=consumer member joins "
                   "(upgrade) and back when the last one leaves (downgrade) "
                   "(group.consumer.migration.policy)")
        ->check(CLI::IsMember({"bidirectional", "upgrade", "downgrade", "disabled"}))
        ->capture_default_str();
    cmd.add_option("--group-max-size", o.groups.max_group_size,
                   "Members a group may have; a join beyond gets GROUP_MAX_SIZE_REACHED")
        ->check(CLI::Range(1, std::numeric_limits<int32_t>::max()))
        ->capture_default_str();
    cmd.add_option("--offsets-retention-minutes", o.offsets_retention_minutes,
                   "How long committed offsets of a group without members are kept")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--offsets-retention-check-interval-ms", o.offsets_retention_check_interval_ms,
                   "How often expired committed offsets are removed")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--transaction-max-timeout-ms", o.transaction_max_timeout_ms,
                   "The longest transaction.timeout.ms a transactional producer may ask for "
                   "(INVALID_TRANSACTION_TIMEOUT above it)")
        ->check(CLI::Range(1, INT32_MAX))
        ->capture_default_str();
    cmd.add_option("--transaction-abort-check-interval-ms", o.transaction_abort_check_interval_ms,
                   "How often transactions open longer than their timeout are aborted")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--transactional-id-expiration-ms", o.transactional_id_expiration_ms,
                   "How long a transactional id with no open transaction may go unused before "
                   "it and its producer id are forgotten (checked every "
                   "--transaction-abort-check-interval-ms)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--transaction-version", o.transaction_version,
                   "The transaction.version feature announced to clients: 2 (KIP-890, "
                   "Kafka 4.0's default) or 1 (the original transaction protocol)")
        ->check(CLI::Range(1, 2))
        ->capture_default_str();
    cmd.add_option("--log-retention-check-interval-ms", o.log_retention_check_interval_ms,
                   "How often segments past a topic's retention.ms or retention.bytes are "
                   "deleted")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--log-cleaner-backoff-ms", o.log_cleaner_backoff_ms,
                   "Pause between compaction passes over topics with cleanup.policy=compact")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--max-compaction-lag-ms", o.max_compaction_lag_ms,
                   "Default max.compaction.lag.ms of topics (Kafka's "
                   "log.cleaner.max.compaction.lag.ms): the longest a record of a compacted "
                   "topic stays uncompacted")
        ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()))
        // Shown only: not given, the topic config's own default (30000) stays in force
        // and DescribeConfigs names it DEFAULT_CONFIG rather than a broker setting.
        ->default_str("30000");
    cmd.add_option("--log-cleaner-io-max-bytes-per-second", o.log_cleaner_io_bytes_per_sec,
                   "Compaction I/O budget (bytes read + written per second); 0: unlimited")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--flush-pass-interval-us", o.flush_pass_interval_us,
                   "When records arrived during a flush pass, the next pass (fsync) starts "
                   "no sooner than this after the previous one; 0: back to back")
        ->check(CLI::Range(int64_t{0}, int64_t{1000000}))
        ->capture_default_str();
    cmd.add_option("--producer-id-expiration-ms", o.producer_id_expiration_ms,
                   "An idempotent producer silent this long is forgotten by each partition "
                   "(its next batch must start a sequence again)")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--offset-metadata-max-bytes", o.groups.offset_metadata_max_bytes,
                   "Largest metadata string an offset commit may carry "
                   "(OFFSET_METADATA_TOO_LARGE beyond)")
        ->capture_default_str();
    cmd.add_option("--pg", o.pg,
                   "PostgreSQL wire listener HOST:PORT for SQL (psql, psycopg2, JDBC); port 0 "
                   "picks a free port, printed at start-up. Default: none");
    cmd.add_option("--http", o.http,
                   "HTTP listener HOST:PORT for SQL (POST /v1/sql, `sluice sql`) and expansions "
                   "(/v1/expansions, `sluice expansion`); port 0 picks a free port, printed at "
                   "start-up. Default: none");
    cmd.add_option("--sql-timeout-ms", o.sql_timeout_ms,
                   "Time limit of one SQL statement; clients may only lower it")
        ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
        ->capture_default_str();
    cmd.add_option("--sql-max-rows", o.sql_max_rows,
                   "Rows one SQL statement may return; clients may only lower it")
        ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 62))
        ->capture_default_str();
    cmd.add_option("--sql-engine", o.sql_engine,
                   "SQL engine of the pg and http listeners: duckdb, the only one (the SQLite "
                   "engine was removed; docs/sql.md). Kept so that configs naming it still work")
        ->check(removed_with_sqlite_engine(
            "sqlite", "drop this setting, or set it to duckdb"))
        ->check(CLI::IsMember({"duckdb"}))
        ->capture_default_str();
    cmd.add_option("--sql-export-dir", o.sql_export_dir,
                   "An existing directory where SQL users' COPY (query) TO 'file' (FORMAT "
                   "parquet|csv) writes files (a name relative to it; nothing else of the file "
                   "system is reachable from SQL). Default: none, COPY refused");
    cmd.add_option("--sql-max-connections", o.sql_max_connections,
                   "Open connections each SQL listener (pg, http) accepts; more are refused")
        ->check(CLI::Range(size_t{1}, size_t{100000}))
        ->capture_default_str();
    add_sql_bound_options(cmd, o.sql_bounds);
    add_share_group_options(cmd, o.share_groups);
    cmd.add_option("--metrics-max-partition-series", o.metrics.max_partition_series,
                   "Per-partition series (kafka_topic_partition_*_offset, "
                   "kafka_consumergroup_current_offset and _lag) GET /metrics shows at most in "
                   "each family, whole topics in name order; the others keep their per-topic "
                   "families (docs/operations.md)")
        ->check(CLI::Range(size_t{0}, size_t{10'000'000}))
        ->capture_default_str();
    cmd.add_flag("--metrics-anonymous", o.metrics.anonymous,
                 "Serve GET /metrics without credentials even when the broker requires a "
                 "login (by default a scraper needs Describe on the cluster then)");
    add_connection_limit_flags(cmd, o.limits);
    add_shared_serve_flags(cmd, o.shared);
    cmd.add_option("--log-level", o.log_level,
                   "trace, debug, info, warn, error or fatal: the root logger's level at start "
                   "(each logger changes at run time with kafka-configs --entity-type "
                   "broker-loggers, not kept over a restart; docs/operations.md)")
        ->capture_default_str();
}

}  // namespace sluice::app

#include "shared/catalog_schema.h"

#include <iterator>

#include <fmt/format.h>

namespace sluice::shared {

namespace {

// Version 1. Times the database compares (leases) are its own clock's; times that only
// describe data (record timestamps) are milliseconds since the epoch, as in Kafka.
constexpr const char* version_1[] = {
    // Brokers and their leases: a broker renews its row before lease_expires_at, and a
    // broker whose lease passed is dead for Metadata and for the background work it held.
    // `incarnation` grows each time a process takes the id, so that writes of a previous
    // process under the same id can be told apart (fenced).
    R"(CREATE TABLE sluice_brokers (
        broker_id INTEGER NOT NULL PRIMARY KEY,
        incarnation BIGINT NOT NULL,
        kafka_host VARCHAR(255) NOT NULL,
        kafka_port INTEGER NOT NULL,
        rack VARCHAR(255),
        registered_at TIMESTAMP WITH TIME ZONE NOT NULL,
        lease_expires_at TIMESTAMP WITH TIME ZONE NOT NULL))",
    R"(CREATE TABLE sluice_topics (
        topic_id CHAR(32) NOT NULL PRIMARY KEY,
        topic_name VARCHAR(249) NOT NULL UNIQUE,
        partition_count INTEGER NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL,
        state VARCHAR(16) NOT NULL))",
    // One row per partition. Invariant: log_start_offset <= high_watermark. In shared
    // mode a batch is committed or absent, so the log end offset is the high watermark:
    // the next offset to assign.
    R"(CREATE TABLE sluice_partitions (
        topic_id CHAR(32) NOT NULL REFERENCES sluice_topics (topic_id),
        partition_id INTEGER NOT NULL,
        log_start_offset BIGINT NOT NULL,
        high_watermark BIGINT NOT NULL,
        leader_epoch INTEGER NOT NULL,
        PRIMARY KEY (topic_id, partition_id)))",
    // Every object the catalog knows. state: 'live' (batches point into it) or 'deleting'
    // (no batch does any more; removed from the store after a grace period that lets
    // reads in flight finish). An object in the store without a row here was left by a
    // broker that died between the upload and the commit: cleanup deletes it once it is
    // older than the longest upload.
    R"(CREATE TABLE sluice_objects (
        object_key VARCHAR(1024) NOT NULL PRIMARY KEY,
        size_bytes BIGINT NOT NULL,
        created_by INTEGER NOT NULL,
        created_at TIMESTAMP WITH TIME ZONE NOT NULL,
        state VARCHAR(16) NOT NULL,
        state_changed_at TIMESTAMP WITH TIME ZONE NOT NULL))",
    "CREATE INDEX sluice_objects_state ON sluice_objects (state, state_changed_at)",
    // The batch index: where each record batch lies. Batches of a partition do not
    // overlap and follow each other: the next batch's base_offset is last_offset + 1.
    R"(CREATE TABLE sluice_batches (
        topic_id CHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        base_offset BIGINT NOT NULL,
        last_offset BIGINT NOT NULL,
        object_key VARCHAR(1024) NOT NULL REFERENCES sluice_objects (object_key),
        byte_position BIGINT NOT NULL,
        byte_size INTEGER NOT NULL,
        max_timestamp_ms BIGINT NOT NULL,
        record_count INTEGER NOT NULL,
        PRIMARY KEY (topic_id, partition_id, base_offset),
        FOREIGN KEY (topic_id, partition_id) REFERENCES sluice_partitions (topic_id, partition_id)))",
    "CREATE INDEX sluice_batches_object ON sluice_batches (object_key)",
    // Idempotent producers: per partition, the producer's epoch and the last five batches
    // it wrote (Kafka keeps five to answer a retried batch with its first offsets).
    R"(CREATE TABLE sluice_producer_state (
        topic_id CHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        producer_id BIGINT NOT NULL,
        producer_epoch SMALLINT NOT NULL,
        last_sequence INTEGER NOT NULL,
        last_timestamp_ms BIGINT NOT NULL,
        PRIMARY KEY (topic_id, partition_id, producer_id)))",
    R"(CREATE TABLE sluice_producer_batches (
        topic_id CHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        producer_id BIGINT NOT NULL,
        base_sequence INTEGER NOT NULL,
        last_sequence INTEGER NOT NULL,
        base_offset BIGINT NOT NULL,
        last_offset BIGINT NOT NULL,
        PRIMARY KEY (topic_id, partition_id, producer_id, base_sequence)))",
    // Producer ids are handed out in blocks from one counter row.
    R"(CREATE TABLE sluice_producer_ids (
        id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
        next_producer_id BIGINT NOT NULL))",
    "INSERT INTO sluice_producer_ids (id, next_producer_id) VALUES (1, 0)",
};

// Version 2: the metadata stores (topics' configs, committed offsets, group and
// transaction state, broker configs, the cluster id) and the brokers' other ports.
// Strings that clients choose (group ids, member ids, transactional ids, config values)
// are TEXT; bytes the broker does not read (group protocol metadata, assignments) are
// BYTEA; flags are INTEGER 0/1.
constexpr const char* version_2[] = {
    "ALTER TABLE sluice_brokers ADD COLUMN sql_port INTEGER",
    "ALTER TABLE sluice_brokers ADD COLUMN http_port INTEGER",
    "ALTER TABLE sluice_topics ADD COLUMN created_ms BIGINT NOT NULL DEFAULT 0",
    R"(CREATE TABLE sluice_cluster (
        id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
        cluster_id VARCHAR(22) NOT NULL))",
    R"(CREATE TABLE sluice_topic_configs (
        topic_id CHAR(32) NOT NULL REFERENCES sluice_topics (topic_id),
        config_key VARCHAR(255) NOT NULL,
        config_value TEXT NOT NULL,
        PRIMARY KEY (topic_id, config_key)))",
    R"(CREATE TABLE sluice_broker_configs (
        config_scope VARCHAR(32) NOT NULL,
        config_key VARCHAR(255) NOT NULL,
        config_value TEXT NOT NULL,
        PRIMARY KEY (config_scope, config_key)))",
    R"(CREATE TABLE sluice_group_offsets (
        group_id TEXT NOT NULL,
        topic_name VARCHAR(249) NOT NULL,
        partition_id INTEGER NOT NULL,
        committed_offset BIGINT NOT NULL,
        leader_epoch INTEGER NOT NULL,
        metadata TEXT,
        commit_ms BIGINT NOT NULL,
        expire_ms BIGINT NOT NULL,
        PRIMARY KEY (group_id, topic_name, partition_id)))",
    "CREATE INDEX sluice_group_offsets_topic ON sluice_group_offsets (topic_name)",
    R"(CREATE TABLE sluice_groups (
        group_id TEXT NOT NULL PRIMARY KEY,
        state VARCHAR(32) NOT NULL,
        protocol_type TEXT,
        protocol_name TEXT,
        generation INTEGER NOT NULL,
        leader TEXT NOT NULL,
        state_ms BIGINT NOT NULL))",
    R"(CREATE TABLE sluice_group_members (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        join_order INTEGER NOT NULL,
        instance_id TEXT,
        client_id TEXT NOT NULL,
        client_host TEXT NOT NULL,
        session_timeout_ms INTEGER NOT NULL,
        rebalance_timeout_ms INTEGER NOT NULL,
        assignment BYTEA NOT NULL,
        PRIMARY KEY (group_id, member_id)))",
    R"(CREATE TABLE sluice_group_member_protocols (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        protocol_name TEXT NOT NULL,
        metadata BYTEA NOT NULL,
        PRIMARY KEY (group_id, member_id, position)))",
    R"(CREATE TABLE sluice_consumer_groups (
        group_id TEXT NOT NULL PRIMARY KEY,
        group_epoch INTEGER NOT NULL,
        assignment_epoch INTEGER NOT NULL,
        assignor TEXT NOT NULL,
        state_ms BIGINT NOT NULL))",
    R"(CREATE TABLE sluice_consumer_group_members (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        instance_id TEXT,
        rack_id TEXT,
        client_id TEXT NOT NULL,
        client_host TEXT NOT NULL,
        member_epoch INTEGER NOT NULL,
        previous_epoch INTEGER NOT NULL,
        rebalance_timeout_ms INTEGER NOT NULL,
        server_assignor TEXT,
        subscribed_topics TEXT NOT NULL,
        subscribed_regex TEXT,
        assigned TEXT NOT NULL,
        pending_revocation TEXT NOT NULL,
        target TEXT NOT NULL,
        PRIMARY KEY (group_id, member_id)))",
    R"(CREATE TABLE sluice_txn_metadata (
        transactional_id TEXT NOT NULL PRIMARY KEY,
        producer_id BIGINT NOT NULL,
        producer_epoch SMALLINT NOT NULL,
        last_producer_id BIGINT NOT NULL,
        last_producer_epoch SMALLINT NOT NULL,
        next_producer_id BIGINT NOT NULL,
        timeout_ms INTEGER NOT NULL,
        state VARCHAR(32) NOT NULL,
        tv2 INTEGER NOT NULL,
        start_ms BIGINT NOT NULL,
        update_ms BIGINT NOT NULL))",
    R"(CREATE TABLE sluice_txn_partitions (
        transactional_id TEXT NOT NULL,
        topic_name VARCHAR(249) NOT NULL,
        partition_id INTEGER NOT NULL,
        PRIMARY KEY (transactional_id, topic_name, partition_id)))",
    R"(CREATE TABLE sluice_txn_groups (
        transactional_id TEXT NOT NULL,
        group_id TEXT NOT NULL,
        PRIMARY KEY (transactional_id, group_id)))",
    R"(CREATE TABLE sluice_txn_offsets (
        transactional_id TEXT NOT NULL,
        group_id TEXT NOT NULL,
        topic_name VARCHAR(249) NOT NULL,
        partition_id INTEGER NOT NULL,
        committed_offset BIGINT NOT NULL,
        leader_epoch INTEGER NOT NULL,
        metadata TEXT,
        commit_ms BIGINT NOT NULL,
        PRIMARY KEY (transactional_id, group_id, topic_name, partition_id)))",
};

// Version 3: background work (src/shared/maintenance). One lease row per job and
// partition ('' and -1 for a cluster-wide job): who holds it until when, on the database's
// clock, the fencing token each take increments (the job's final transaction checks it),
// and when the job is next due, so that each runs once per interval on any broker.
constexpr const char* version_3[] = {
    R"(CREATE TABLE sluice_job_leases (
        job_kind VARCHAR(32) NOT NULL,
        topic_id VARCHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        holder_broker INTEGER,
        holder_incarnation BIGINT,
        fencing_token BIGINT NOT NULL,
        acquired_at TIMESTAMP WITH TIME ZONE,
        lease_expires_at TIMESTAMP WITH TIME ZONE NOT NULL,
        next_due_at TIMESTAMP WITH TIME ZONE NOT NULL,
        runs BIGINT NOT NULL,
        last_done_at TIMESTAMP WITH TIME ZONE,
        last_error TEXT,
        PRIMARY KEY (job_kind, topic_id, partition_id)))",
};

// Version 4: users and identity policies (Kafka ACLs among them) and expansions'
// definitions, as the SQLite catalog keeps them (docs/formats/catalog.md), and the change
// counters other brokers poll to know when to read them again.
constexpr const char* version_4[] = {
    // One row per subject ('security', 'expansions'): every change of the subject's tables
    // adds one to its version in the same transaction, after locking the row, so that
    // writers of a subject serialize and readers see in one small read whether to load.
    R"(CREATE TABLE sluice_change_versions (
        subject VARCHAR(32) NOT NULL PRIMARY KEY,
        version BIGINT NOT NULL))",
    "INSERT INTO sluice_change_versions (subject, version) VALUES ('security', 0)",
    "INSERT INTO sluice_change_versions (subject, version) VALUES ('expansions', 0)",
    R"(CREATE TABLE sluice_scram_credentials (
        user_name TEXT NOT NULL,
        mechanism SMALLINT NOT NULL CHECK (mechanism IN (1, 2)),
        salt BYTEA NOT NULL,
        iterations INTEGER NOT NULL CHECK (iterations >= 1),
        stored_key BYTEA NOT NULL,
        server_key BYTEA NOT NULL,
        PRIMARY KEY (user_name, mechanism)))",
    R"(CREATE TABLE sluice_policies (
        policy_name TEXT NOT NULL PRIMARY KEY,
        document TEXT NOT NULL,
        updated_ms BIGINT NOT NULL))",
    R"(CREATE TABLE sluice_policy_attachments (
        policy_name TEXT NOT NULL REFERENCES sluice_policies (policy_name),
        user_name TEXT NOT NULL,
        PRIMARY KEY (policy_name, user_name)))",
    "CREATE INDEX sluice_policy_attachments_user ON sluice_policy_attachments (user_name)",
    R"(CREATE TABLE sluice_expansions (
        target TEXT NOT NULL PRIMARY KEY,
        topic_name VARCHAR(249) NOT NULL REFERENCES sluice_topics (topic_name),
        source VARCHAR(8) NOT NULL CHECK (source IN ('value', 'key')),
        flatten INTEGER NOT NULL,
        copy_source INTEGER NOT NULL,
        schema_json TEXT NOT NULL,
        created_ms BIGINT NOT NULL))",
    "CREATE INDEX sluice_expansions_topic ON sluice_expansions (topic_name)",
};

// Version 5: classic-protocol members of a consumer group (after an online upgrade)
// keep their session timeout and protocols, so a restart does not make them rejoin.
constexpr const char* version_5[] = {
    "ALTER TABLE sluice_consumer_group_members ADD COLUMN classic_session_timeout_ms INTEGER",
    R"(CREATE TABLE sluice_consumer_group_member_protocols (
        group_id TEXT NOT NULL,
        member_id TEXT NOT NULL,
        position INTEGER NOT NULL,
        protocol_name TEXT NOT NULL,
        metadata BYTEA NOT NULL,
        PRIMARY KEY (group_id, member_id, position)))",
};

// Version 6: transactions in shared mode. Per partition, the transactions with records
// there and no marker yet (their oldest first offset is the last stable offset), and the
// aborted transactions (read_committed fetches drop their records).
constexpr const char* version_6[] = {
    R"(CREATE TABLE sluice_txn_open (
        topic_id CHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        producer_id BIGINT NOT NULL,
        first_offset BIGINT NOT NULL,
        PRIMARY KEY (topic_id, partition_id, producer_id)))",
    R"(CREATE TABLE sluice_txn_aborted (
        topic_id CHAR(32) NOT NULL,
        partition_id INTEGER NOT NULL,
        last_offset BIGINT NOT NULL,
        producer_id BIGINT NOT NULL,
        first_offset BIGINT NOT NULL,
        PRIMARY KEY (topic_id, partition_id, last_offset)))",
    // Moved on when a transaction's offsets became committed offsets, so that the groups'
    // coordinators on other brokers read them.
    "INSERT INTO sluice_change_versions (subject, version) VALUES ('txn_offsets', 0)",
};

// Version 7: expansions in shared mode. Where each partition's expansion starts (the
// high watermark when it was created, and the log start too with a backfill), so that
// every broker expanding the topic into its own copy of the target starts at the same
// offsets.
constexpr const char* version_7[] = {
    R"(CREATE TABLE sluice_expansion_starts (
        target TEXT NOT NULL REFERENCES sluice_expansions (target) ON DELETE CASCADE,
        partition_id INTEGER NOT NULL,
        live_from BIGINT NOT NULL,
        backfill_from BIGINT NOT NULL,
        PRIMARY KEY (target, partition_id)))",
};

// Version 8: share groups in shared mode. Each share-partition's window (its start and
// end offsets and its records' states and delivery counts, as the SQLite catalog's
// share_partitions keeps them) and the runs of records a member holds acquired, with the
// lock's deadline, so that another broker serving the partition keeps the locks.
constexpr const char* version_8[] = {
    R"(CREATE TABLE sluice_share_partitions (
        group_id TEXT NOT NULL,
        topic_name TEXT NOT NULL,
        partition_id INTEGER NOT NULL,
        start_offset BIGINT NOT NULL,
        end_offset BIGINT NOT NULL,
        records TEXT NOT NULL,
        PRIMARY KEY (group_id, topic_name, partition_id)))",
    R"(CREATE TABLE sluice_share_acquired (
        group_id TEXT NOT NULL,
        topic_name TEXT NOT NULL,
        partition_id INTEGER NOT NULL,
        first_offset BIGINT NOT NULL,
        last_offset BIGINT NOT NULL,
        member_id TEXT NOT NULL,
        delivery_count SMALLINT NOT NULL,
        lock_until_ms BIGINT NOT NULL,
        PRIMARY KEY (group_id, topic_name, partition_id, first_offset)))",
};

// Version 9: LogAppendTime and compaction in shared mode. A partition's last append time
// (the produce commit never stamps a LogAppendTime batch below it, whichever broker's
// clock is behind) and the offset below which compaction has seen every record (its
// clean part: tombstones there go after delete.retention.ms).
constexpr const char* version_9[] = {
    "ALTER TABLE sluice_partitions ADD COLUMN last_append_time_ms BIGINT NOT NULL DEFAULT -1",
    "ALTER TABLE sluice_partitions ADD COLUMN clean_offset BIGINT NOT NULL DEFAULT 0",
};

// Version 10: a transactional id's record carries a change counter, so that a write made
// from what a broker read fails when another broker changed the record in between (a
// zombie producer racing its successor through two brokers); and each batch keeps the
// time the broker appended it (its produce window's time, -1 for batches committed
// before version 10), which SQL answers as timestamp_broker.
constexpr const char* version_10[] = {
    "ALTER TABLE sluice_txn_metadata ADD COLUMN version BIGINT NOT NULL DEFAULT 1",
    "ALTER TABLE sluice_batches ADD COLUMN append_time_ms BIGINT NOT NULL DEFAULT -1",
};

// Version 11: background jobs run only for partitions that changed. What each job's
// last successful run saw of its partition (high watermark, log start, a digest of the
// topic's configs and one of the broker's maintenance settings) and when the job must run
// again even if nothing changes (wake_ms: retention's next expiry, on the brokers' clock,
// milliseconds since the epoch). NULL: run at the next interval.
constexpr const char* version_11[] = {
    "ALTER TABLE sluice_job_leases ADD COLUMN seen_high_watermark BIGINT",
    "ALTER TABLE sluice_job_leases ADD COLUMN seen_log_start BIGINT",
    "ALTER TABLE sluice_job_leases ADD COLUMN seen_configs VARCHAR(32)",
    "ALTER TABLE sluice_job_leases ADD COLUMN seen_settings VARCHAR(32)",
    "ALTER TABLE sluice_job_leases ADD COLUMN wake_ms BIGINT",
};

// Version 12: group coordinator epochs. The broker that coordinates a group holds its
// row; it takes the row (epoch + 1) before it reads the group's state, and every write of
// the group's state or committed offsets checks, in its transaction, that the row still
// names the epoch it took, so a write queued at a group's old coordinator cannot land
// after the new one read the group (docs/shared-mode.md#fencing-group-writes).
constexpr const char* version_12[] = {
    R"(CREATE TABLE sluice_group_coordinators (
        group_id TEXT NOT NULL PRIMARY KEY,
        broker_id INTEGER NOT NULL,
        epoch BIGINT NOT NULL))",
};

struct migration {
    int version;
    const char* const* statements;
    size_t count;
};

constexpr migration migrations[] = {
    {1, version_1, std::size(version_1)}, {2, version_2, std::size(version_2)},
    {3, version_3, std::size(version_3)}, {4, version_4, std::size(version_4)},
    {5, version_5, std::size(version_5)}, {6, version_6, std::size(version_6)},
    {7, version_7, std::size(version_7)}, {8, version_8, std::size(version_8)},
    {9, version_9, std::size(version_9)}, {10, version_10, std::size(version_10)},
    {11, version_11, std::size(version_11)},
    {12, version_12, std::size(version_12)}};

result<int> upgrade(pg_database& db);

}  // namespace

result<int> ensure_catalog_schema(pg_database& db) {
    // Brokers starting together may both create the version table; the loser of that
    // race gets a unique violation (already_exists) and finds the table on a later try.
    for (int attempt = 0;; ++attempt) {
        auto r = db.exec(R"(CREATE TABLE IF NOT EXISTS sluice_catalog_version (
            id INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
            version INTEGER NOT NULL,
            updated_at TIMESTAMP WITH TIME ZONE NOT NULL))");
        if (r) break;
        if (r.code() != errc::already_exists || attempt >= 3) return r.err();
    }
    // Two brokers inserting the version row at once: the second gets a unique violation
    // once the first commits, and finds the row on its next try.
    for (int attempt = 0;; ++attempt) {
        auto r = upgrade(db);
        if (r || r.code() != errc::already_exists || attempt >= 3) return r;
    }
}

namespace {

result<int> upgrade(pg_database& db) {
    return db.transact<int>(isolation_level::read_committed, [](pg_transaction& tx) -> result<int> {
        auto ins = tx.exec(
            "INSERT INTO sluice_catalog_version (id, version, updated_at) "
            "SELECT 1, 0, CURRENT_TIMESTAMP WHERE NOT EXISTS (SELECT 1 FROM sluice_catalog_version "
            "WHERE id = 1)");
        if (!ins) return ins.err();
        // The row lock serializes brokers upgrading at once: the second sees the result.
        auto row = tx.exec("SELECT version FROM sluice_catalog_version WHERE id = 1 FOR UPDATE");
        if (!row) return row.err();
        if (row->size() != 1) return error{errc::corrupt, "sluice_catalog_version has no row 1"};
        int found = static_cast<int>(row->int64(0, 0));
        if (found > shared_catalog_version) {
            return error{
                errc::unsupported,
                fmt::format("the shared catalog is at version {}, newer than this build's {}: "
                            "upgrade Sluice",
                            found, shared_catalog_version)};
        }
        for (const migration& m : migrations) {
            if (m.version <= found) continue;
            for (size_t i = 0; i < m.count; ++i) {
                auto s = tx.exec(m.statements[i]);
                if (!s)
                    return error{s.err().code, fmt::format("shared catalog version {}: {}",
                                                           m.version, s.err().message)};
            }
        }
        auto up = tx.exec(
            "UPDATE sluice_catalog_version SET version = $1, updated_at = CURRENT_TIMESTAMP WHERE "
            "id = 1",
            {std::to_string(shared_catalog_version)});
        if (!up) return up.err();
        return found;
    });
}

}  // namespace

}  // namespace sluice::shared

#include "catalog/schema.h"

#include <fmt/format.h>

#include "catalog/uuid.h"

namespace sluice::catalog::detail {
namespace {

// Version 0 -> 1: the initial schema, and the cluster id, generated once per database.
result<void> migrate_to_1(db& d) {
    auto r = d.exec(R"(
        CREATE TABLE meta (
            key   TEXT PRIMARY KEY,
            value TEXT NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE topics (
            name       TEXT PRIMARY KEY,
            id         BLOB NOT NULL UNIQUE CHECK (length(id) = 16),
            partitions INTEGER NOT NULL CHECK (partitions >= 1),
            created_ms INTEGER NOT NULL
        );
        CREATE TABLE topic_configs (
            topic TEXT NOT NULL REFERENCES topics (name),
            key   TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (topic, key)
        ) WITHOUT ROWID;
    )");
    if (!r) return r;
    auto st = d.prepare("INSERT INTO meta (key, value) VALUES ('cluster_id', ?1)");
    if (!st) return st.err();
    return st->bind(1, uuid_to_string(random_uuid())).run();
}

// Version 1 -> 2: committed offsets of consumer groups (docs/formats/catalog.md).
result<void> migrate_to_2(db& d) {
    return d.exec(R"(
        CREATE TABLE group_offsets (
            group_id     TEXT NOT NULL,
            topic        TEXT NOT NULL,
            partition    INTEGER NOT NULL CHECK (partition >= 0),
            offset       INTEGER NOT NULL,
            leader_epoch INTEGER NOT NULL,
            metadata     TEXT,
            commit_ms    INTEGER NOT NULL,
            expire_ms    INTEGER NOT NULL,
            PRIMARY KEY (group_id, topic, partition)
        ) WITHOUT ROWID;
        CREATE INDEX group_offsets_by_topic ON group_offsets (topic);
    )");
}

// Version 2 -> 3: expansions of topics into SQL tables (docs/formats/catalog.md).
result<void> migrate_to_3(db& d) {
    return d.exec(R"(
        CREATE TABLE expansions (
            target      TEXT PRIMARY KEY,
            topic       TEXT NOT NULL REFERENCES topics (name),
            source      TEXT NOT NULL CHECK (source IN ('value', 'key')),
            flatten     INTEGER NOT NULL,
            copy_source INTEGER NOT NULL,
            schema      TEXT NOT NULL,
            created_ms  INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX expansions_by_topic ON expansions (topic);
    )");
}

// Version 3 -> 4: users' SCRAM credentials and identity policies (docs/formats/catalog.md).
result<void> migrate_to_4(db& d) {
    return d.exec(R"(
        CREATE TABLE scram_credentials (
            user       TEXT NOT NULL,
            mechanism  INTEGER NOT NULL CHECK (mechanism IN (1, 2)),
            salt       BLOB NOT NULL,
            iterations INTEGER NOT NULL CHECK (iterations >= 1),
            stored_key BLOB NOT NULL,
            server_key BLOB NOT NULL,
            PRIMARY KEY (user, mechanism)
        ) WITHOUT ROWID;
        CREATE TABLE policies (
            name       TEXT PRIMARY KEY,
            document   TEXT NOT NULL,
            updated_ms INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE policy_attachments (
            policy TEXT NOT NULL REFERENCES policies (name),
            user   TEXT NOT NULL,
            PRIMARY KEY (policy, user)
        ) WITHOUT ROWID;
        CREATE INDEX policy_attachments_by_user ON policy_attachments (user);
    )");
}

// Version 4 -> 5: the producer id allocator's counter (docs/formats/catalog.md).
result<void> migrate_to_5(db& d) {
    return d.exec("INSERT INTO meta (key, value) VALUES ('next_producer_id', '0')");
}

// Version 5 -> 6: the group coordinator's state, so that generations and members survive
// a restart (docs/formats/catalog.md).
result<void> migrate_to_6(db& d) {
    return d.exec(R"(
        CREATE TABLE group_metadata (
            group_id      TEXT PRIMARY KEY,
            state         TEXT NOT NULL
                          CHECK (state IN ('Empty', 'PreparingRebalance', 'Stable')),
            protocol_type TEXT,
            protocol_name TEXT,
            generation    INTEGER NOT NULL CHECK (generation >= 0),
            leader        TEXT NOT NULL,
            state_ms      INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE group_members (
            group_id             TEXT NOT NULL,
            member_id            TEXT NOT NULL,
            join_order           INTEGER NOT NULL,
            instance_id          TEXT,
            client_id            TEXT NOT NULL,
            client_host          TEXT NOT NULL,
            session_timeout_ms   INTEGER NOT NULL,
            rebalance_timeout_ms INTEGER NOT NULL,
            assignment           BLOB NOT NULL,
            PRIMARY KEY (group_id, member_id)
        ) WITHOUT ROWID;
        CREATE TABLE group_member_protocols (
            group_id  TEXT NOT NULL,
            member_id TEXT NOT NULL,
            position  INTEGER NOT NULL,
            name      TEXT NOT NULL,
            metadata  BLOB NOT NULL,
            PRIMARY KEY (group_id, member_id, position)
        ) WITHOUT ROWID;
    )");
}

// Version 6 -> 7: broker settings changed at run time (AlterConfigs on the BROKER
// resource), per scope: '' the cluster-wide default, 'broker' this broker's own
// (docs/formats/catalog.md).
result<void> migrate_to_7(db& d) {
    return d.exec(R"(
        CREATE TABLE broker_configs (
            scope TEXT NOT NULL CHECK (scope IN ('', 'broker')),
            key   TEXT NOT NULL,
            value TEXT NOT NULL,
            PRIMARY KEY (scope, key)
        ) WITHOUT ROWID;
    )");
}

// Version 7 -> 8: the transaction coordinator's state, per transactional id, with the
// partitions, groups and pending offsets of its open transaction (docs/formats/catalog.md).
result<void> migrate_to_8(db& d) {
    return d.exec(R"(
        CREATE TABLE txn_metadata (
            transactional_id    TEXT PRIMARY KEY,
            producer_id         INTEGER NOT NULL CHECK (producer_id >= 0),
            producer_epoch      INTEGER NOT NULL,
            last_producer_id    INTEGER NOT NULL,
            last_producer_epoch INTEGER NOT NULL,
            next_producer_id    INTEGER NOT NULL,
            timeout_ms          INTEGER NOT NULL CHECK (timeout_ms > 0),
            state               TEXT NOT NULL
                                CHECK (state IN ('Empty', 'Ongoing', 'PrepareCommit',
                                                 'PrepareAbort', 'CompleteCommit',
                                                 'CompleteAbort')),
            tv2                 INTEGER NOT NULL CHECK (tv2 IN (0, 1)),
            start_ms            INTEGER NOT NULL,
            update_ms           INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE txn_partitions (
            transactional_id TEXT NOT NULL,
            topic            TEXT NOT NULL,
            partition        INTEGER NOT NULL CHECK (partition >= 0),
            PRIMARY KEY (transactional_id, topic, partition)
        ) WITHOUT ROWID;
        CREATE TABLE txn_groups (
            transactional_id TEXT NOT NULL,
            group_id         TEXT NOT NULL,
            PRIMARY KEY (transactional_id, group_id)
        ) WITHOUT ROWID;
        CREATE TABLE txn_offsets (
            transactional_id TEXT NOT NULL,
            group_id         TEXT NOT NULL,
            topic            TEXT NOT NULL,
            partition        INTEGER NOT NULL CHECK (partition >= 0),
            offset           INTEGER NOT NULL,
            leader_epoch     INTEGER NOT NULL,
            metadata         TEXT,
            commit_ms        INTEGER NOT NULL,
            PRIMARY KEY (transactional_id, group_id, topic, partition)
        ) WITHOUT ROWID;
    )");
}

// Version 8 -> 9: consumer groups of the KIP-848 protocol (group/consumer/): the group's
// epochs and assignor, and per member its subscription, epochs and partitions
// (docs/formats/catalog.md).
result<void> migrate_to_9(db& d) {
    return d.exec(R"(
        CREATE TABLE consumer_groups (
            group_id         TEXT PRIMARY KEY,
            group_epoch      INTEGER NOT NULL CHECK (group_epoch >= 0),
            assignment_epoch INTEGER NOT NULL CHECK (assignment_epoch >= 0),
            assignor         TEXT NOT NULL,
            state_ms         INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE consumer_group_members (
            group_id             TEXT NOT NULL REFERENCES consumer_groups (group_id),
            member_id            TEXT NOT NULL,
            instance_id          TEXT,
            rack_id              TEXT,
            client_id            TEXT NOT NULL,
            client_host          TEXT NOT NULL,
            member_epoch         INTEGER NOT NULL CHECK (member_epoch >= -2),
            previous_epoch       INTEGER NOT NULL,
            rebalance_timeout_ms INTEGER NOT NULL,
            server_assignor      TEXT,
            subscribed_topics    TEXT NOT NULL,
            subscribed_regex     TEXT,
            assigned             TEXT NOT NULL,
            pending_revocation   TEXT NOT NULL,
            target               TEXT NOT NULL,
            PRIMARY KEY (group_id, member_id)
        ) WITHOUT ROWID;
    )");
}

// Version 9 -> 10: share groups (KIP-932, group/share/): each share-partition's
// in-flight window, so acknowledged records stay acknowledged across a crash
// (docs/formats/catalog.md).
result<void> migrate_to_10(db& d) {
    return d.exec(R"(
        CREATE TABLE share_partitions (
            group_id     TEXT NOT NULL,
            topic        TEXT NOT NULL,
            partition    INTEGER NOT NULL CHECK (partition >= 0),
            start_offset INTEGER NOT NULL CHECK (start_offset >= 0),
            end_offset   INTEGER NOT NULL CHECK (end_offset >= start_offset),
            records      TEXT NOT NULL,
            PRIMARY KEY (group_id, topic, partition)
        ) WITHOUT ROWID;
    )");
}

// Version 10 -> 11: classic-protocol members of a consumer group (after an online upgrade)
// keep their session timeout and protocols, so they survive a restart without rejoining;
// group configs, each group's overrides of the broker's group settings
// (docs/formats/catalog.md).
result<void> migrate_to_11(db& d) {
    return d.exec(R"(
        ALTER TABLE consumer_group_members ADD COLUMN classic_session_timeout_ms INTEGER
            CHECK (classic_session_timeout_ms IS NULL OR classic_session_timeout_ms > 0);
        CREATE TABLE consumer_group_member_protocols (
            group_id  TEXT NOT NULL,
            member_id TEXT NOT NULL,
            position  INTEGER NOT NULL CHECK (position >= 0),
            name      TEXT NOT NULL,
            metadata  BLOB NOT NULL,
            PRIMARY KEY (group_id, member_id, position)
        ) WITHOUT ROWID;
        CREATE TABLE group_configs (
            group_id TEXT NOT NULL,
            key      TEXT NOT NULL,
            value    TEXT NOT NULL,
            PRIMARY KEY (group_id, key)
        ) WITHOUT ROWID;
    )");
}

// migrations[v] takes a file from version v to v + 1. Append only: a released step never
// changes, because files in the field already ran it.
using migration = result<void> (*)(db&);
constexpr migration migrations[] = {migrate_to_1, migrate_to_2,  migrate_to_3,  migrate_to_4,
                                    migrate_to_5, migrate_to_6,  migrate_to_7,  migrate_to_8,
                                    migrate_to_9, migrate_to_10, migrate_to_11};
static_assert(std::size(migrations) == latest_schema_version);

}  // namespace

result<void> check_file(db& d, const std::string& where) {
    auto app = d.query_int("PRAGMA application_id");
    if (!app) return app.err();
    auto version = d.query_int("PRAGMA user_version");
    if (!version) return version.err();
    auto objects = d.query_int("SELECT count(*) FROM sqlite_schema");
    if (!objects) return objects.err();

    bool fresh = *app == 0 && *version == 0 && *objects == 0;
    if (!fresh && *app != catalog_application_id) {
        return {errc::corrupt,
                fmt::format("{} is a SQLite database but not a Sluice catalog (application_id "
                            "{:#x}, expected {:#x})",
                            where, *app, catalog_application_id)};
    }
    if (*version > latest_schema_version) {
        return {errc::unsupported,
                fmt::format("{} has catalog schema version {}, newer than version {} that this "
                            "build of Sluice knows; run a newer Sluice (downgrade is not "
                            "supported)",
                            where, *version, latest_schema_version)};
    }
    if (*version < 0) {
        return {errc::corrupt, fmt::format("{} has a negative schema version {}", where, *version)};
    }
    return {};
}

result<int64_t> migrate(db& d) {
    int64_t initial = -1;
    for (;;) {
        // Re-read the version under the write lock: another process may have migrated
        // the file since check_file() looked.
        auto txn = write_txn::begin(d);
        if (!txn) return txn.err();
        auto version = d.query_int("PRAGMA user_version");
        if (!version) return version.err();
        if (initial < 0) initial = *version;
        if (*version >= latest_schema_version) {
            auto c = txn->commit();
            if (!c) return c.err();
            return initial;
        }
        auto r = migrations[*version](d);
        if (!r) {
            return error{r.code(), fmt::format("migrating the catalog schema from version {} to "
                                               "{}: {}",
                                               *version, *version + 1, r.err().message)};
        }
        // Both pragmas write the database header inside this transaction, so a crash leaves
        // either the old version with the old schema or the new with the new.
        auto p = d.exec(fmt::format("PRAGMA application_id = {}; PRAGMA user_version = {}",
                                    catalog_application_id, *version + 1));
        if (!p) return p.err();
        auto c = txn->commit();
        if (!c) return c.err();
    }
}

}  // namespace sluice::catalog::detail

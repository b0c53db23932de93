#pragma once

// The system schema: the broker's state as read-only tables (docs/sql.md).
//   system.topics        one row per topic
//   system.partitions    log start offset, high watermark, log end offset, bytes, segments
//   system.configs       every topic config in force, with its source
//   system.groups        consumer groups: state, protocol type, protocol, members
//   system.group_offsets committed offsets, with the partition's high watermark and lag
//   system.transactions  transactional ids: producer, state, partitions, groups, age
//   system.policies      identity policies: name, attached users (JSON), document
//   system.acls          policy statements as Kafka ACL bindings (security/acl.h)
// Each query reads the state afresh; none of these is a copy that can go stale.

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sql/engine.h"
#include "sql/statement_context.h"

namespace sluice::log {
class log_manager;
}
namespace sluice::catalog {
class catalog;
class topic_store;
class security_store;
}  // namespace sluice::catalog

namespace sluice::sql {

class partition_source;

// What only the running broker knows (the group coordinator's state). Implementations
// are thread-safe: SQL sessions call them from their own threads.
class broker_state {
  public:
    struct group {
        std::string group_id;
        // Classic: Empty, PreparingRebalance, CompletingRebalance, Stable, Dead.
        // Consumer (KIP-848): Empty, Assigning, Reconciling, Stable.
        std::string state;
        std::string protocol_type;
        std::string protocol;  // a consumer group's: its assignor
        int32_t members = 0;
        int32_t generation = 0;        // the generation id; a consumer group's: its group epoch
        std::string type = "classic";  // or "consumer"
    };
    struct group_member {
        std::string group_id;
        std::string type;  // classic or consumer
        std::string member_id;
        std::optional<std::string> instance_id;
        std::string client_id;
        std::string client_host;
        int32_t epoch = 0;  // the member epoch; a classic member's: the group's generation
        // Consumer groups only (nullopt for classic members): subscribed topic names
        // (comma-separated), regex, and partitions owned and targeted ("t:0,1;u:2").
        std::optional<std::string> subscribed_topics;
        std::optional<std::string> subscribed_regex;
        std::optional<std::string> assigned;
        std::optional<std::string> target;
    };
    struct committed_offset {
        std::string group_id;
        std::string topic;
        int32_t partition = 0;
        int64_t offset = -1;
        std::optional<std::string> metadata;
        int64_t commit_ms = 0;
    };
    // A transactional id as the transaction coordinator holds it: its open transaction,
    // or the last one's outcome.
    struct transaction {
        std::string transactional_id;
        int64_t producer_id = -1;
        int32_t producer_epoch = -1;
        std::string state;       // Kafka's names: Empty, Ongoing, PrepareCommit, ...
        std::string partitions;  // "topic:0,1;other:3" (group::format_partitions)
        std::string groups;      // comma-separated, AddOffsetsToTxn's
        int32_t timeout_ms = 0;
        int64_t start_ms = -1;  // when the open transaction began; -1: none open
        int64_t update_ms = 0;  // the last change of the id's state
    };
    // A share group's share-partition (KIP-932): one row per (group, topic partition) it
    // has read; a group that has read nothing yet has one row without a partition.
    struct share_partition {
        std::string group_id;
        std::string state;  // Empty or Stable
        int32_t members = 0;
        int32_t group_epoch = 0;
        std::optional<std::string> topic;
        std::optional<int32_t> partition;
        std::optional<int64_t> start_offset;  // below: every record acknowledged or archived
        std::optional<int64_t> end_offset;    // from here: never handed out
        std::optional<int64_t> in_flight;     // available or acquired in the window
        std::optional<int64_t> acquired;      // held under a lock now
    };
    virtual std::vector<group> groups() = 0;
    virtual std::vector<transaction> transactions() = 0;
    virtual std::vector<share_partition> share_groups() = 0;
    virtual std::vector<committed_offset> group_offsets() = 0;
    virtual std::vector<group_member> group_members() = 0;
    // Broker-wide topic defaults (--topic-default), keyed by topic config name.
    virtual std::map<std::string, std::string> topic_defaults() = 0;

  protected:
    ~broker_state() = default;
};

struct system_sources {
    log::log_manager* logs = nullptr;
    catalog::catalog* catalog = nullptr;
    broker_state* state = nullptr;
    statement_context* ctx = nullptr;
    // Shared mode (engine_options): the shared catalog's topics and policies, and the
    // partitions through the partition-log interface, in place of catalog's and logs'.
    const catalog::topic_store* topics = nullptr;
    const catalog::security_store* security = nullptr;
    partition_source* partitions = nullptr;
};

// One system table: its columns and how its rows are computed when a scan starts (small
// tables only: the rows are held for the scan).
struct row_table_spec {
    std::string declaration;  // "CREATE TABLE x(topic TEXT, partitions INTEGER, ...)"
    std::function<outcome<std::vector<std::vector<value>>>()> rows;
};

// The system tables of a session (src.ctx's principal): name -> declaration and rows, what
// the DuckDB engine's sluice_system() reads.
std::map<std::string, row_table_spec> system_table_specs(const system_sources& src);

}  // namespace sluice::sql

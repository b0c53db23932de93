#pragma once

// The metadata a broker keeps durably besides its logs, behind interfaces that the broker
// is handed: topics (names, ids, partition counts, configs), producer-id allocation and
// the broker settings changed at run time. Implementations: catalog::catalog (the
// embedded SQLite catalog, docs/formats/catalog.md) and shared::pg_topic_store,
// shared::pg_producer_ids, shared::pg_broker_config_store (the shared catalog's database,
// docs/formats/shared-catalog.md). Committed offsets, group state and transaction state
// have their own interfaces: catalog/offset_store.h, group/state_store.h,
// txn/state_store.h.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "catalog/topic_info.h"
#include "catalog/uuid.h"
#include "common/result.h"

namespace sluice::catalog {

// Topics. Thread-safe: every member may be called concurrently. Reads are served from
// memory; writes reach memory only after they are durable.
class topic_store {
  public:
    virtual ~topic_store() = default;
    // Validates t (validate_new_topic) and stores it durably. A created_ms of 0 is
    // replaced by the current time. errc::already_exists if the name or the id is taken.
    virtual result<void> create_topic(const topic_info& t) = 0;
    // errc::not_found if no topic has that name; errc::in_use, naming them, while the
    // topic has expansions (expansion_store.h). The topic's committed group offsets go in
    // the same transaction.
    virtual result<void> delete_topic(const std::string& name) = 0;
    // Replaces every config the topic sets with `configs` (validated first; nothing
    // changes on error). errc::not_found, errc::invalid_argument.
    virtual result<void> set_topic_configs(const std::string& name,
                                           const std::map<std::string, std::string>& configs) = 0;
    // Raises the partition count (partitions are only ever added, as in Kafka).
    // errc::not_found, errc::invalid_argument when not above the current count.
    virtual result<void> set_partitions(const std::string& name, int32_t partitions) = 0;

    virtual std::vector<topic_info> list_topics() const = 0;  // ordered by name (bytewise)
    virtual std::optional<topic_info> find_topic(const std::string& name) const = 0;
    virtual std::optional<topic_info> find_topic(const uuid& id) const = 0;
    // Changes whenever a topic is created or deleted (SQL sessions re-list the topic
    // tables then).
    virtual uint64_t generation() const = 0;
};

// The checks create_topic makes before storing anything: the name's rules, partitions
// >= 1, a non-zero id, known configs with valid values. errc::invalid_argument.
result<void> validate_new_topic(const topic_info& t);

// Idempotent and transactional producers' ids. Thread-safe.
class producer_id_allocator {
  public:
    virtual ~producer_id_allocator() = default;
    // A new producer id, durable before it is returned, so that no id is ever given twice,
    // across restarts, crashes and brokers.
    virtual result<int64_t> allocate_producer_id() = 0;
};

// Broker settings changed at run time. scope "" is the cluster-wide default, "broker"
// this broker's own. Thread-safe.
class broker_config_store {
  public:
    virtual ~broker_config_store() = default;
    // Errors: io_error; invalid_argument (scope).
    virtual result<std::map<std::string, std::string>> broker_configs(
        const std::string& scope) const = 0;
    // Replaces the scope's whole set in one transaction.
    virtual result<void> set_broker_configs(const std::string& scope,
                                            const std::map<std::string, std::string>& configs) = 0;
};

// Group configs (Kafka's GroupConfig, group/group_configs.h): each group's overrides of
// the broker's group settings. Thread-safe.
class group_config_store {
  public:
    virtual ~group_config_store() = default;
    // Every group that has configs, with them. Errors: io_error.
    virtual result<std::map<std::string, std::map<std::string, std::string>>> group_configs()
        const = 0;
    // Replaces the group's whole set in one transaction (empty: forgets the group's).
    virtual result<void> set_group_configs(const std::string& group_id,
                                           const std::map<std::string, std::string>& configs) = 0;
};

// errc::invalid_argument unless scope is "" or "broker".
result<void> check_broker_config_scope(const std::string& scope);

}  // namespace sluice::catalog

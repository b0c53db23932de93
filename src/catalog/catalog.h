#pragma once

// The catalog: topics, their partition counts and configs, and the cluster id, kept in an
// embedded SQLite database. The file format is described in docs/formats/catalog.md.

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/expansion_info.h"
#include "catalog/expansion_store.h"
#include "catalog/metadata_store.h"
#include "catalog/schema.h"
#include "catalog/security_info.h"
#include "catalog/security_store.h"
#include "catalog/topic_config.h"
#include "catalog/topic_info.h"
#include "catalog/topic_name.h"
#include "catalog/uuid.h"
#include "common/result.h"

namespace sluice::catalog {

namespace detail {
class db;
}

// Thread-safe: every member may be called concurrently. Reads are served from memory;
// writes go to the database first and reach memory only after their commit.
// Invariant: this object is the only writer of the topic tables of its file, so the
// in-memory copy equals the committed database state.
class catalog final : public topic_store,
                      public producer_id_allocator,
                      public broker_config_store,
                      public security_store,
                      public expansion_store,
                      public group_config_store {
  public:
    // The schema version this build writes (PRAGMA user_version). open() migrates older
    // files up to it and refuses newer ones.
    static constexpr int64_t schema_version = detail::latest_schema_version;

    // Opens or creates <path> (WAL mode, synchronous=FULL: a created topic survives power
    // loss), creating or migrating the schema. Missing parent directories are created.
    // Errors: errc::unsupported for a schema newer than schema_version, errc::corrupt for
    // a file that is not a Sluice catalog, errc::io_error for SQLite or file system errors.
    static result<std::unique_ptr<catalog>> open(const std::filesystem::path& path);

    catalog(const catalog&) = delete;
    catalog& operator=(const catalog&) = delete;
    ~catalog() override;

    // Validates t (name rules, partitions >= 1, a non-zero id, known configs with valid
    // values; errc::invalid_argument otherwise) and stores it durably. A created_ms of 0 is
    // replaced by the current time. errc::already_exists if the name or the id is taken.
    result<void> create_topic(const topic_info& t) override;
    // errc::not_found if no topic has that name; errc::in_use, naming them, while the
    // topic has expansions. The topic's committed group offsets go in the same
    // transaction.
    result<void> delete_topic(const std::string& name) override;

    // Replaces every config the topic sets with `configs` (validated first; nothing
    // changes on error). errc::not_found, errc::invalid_argument.
    result<void> set_topic_configs(const std::string& name,
                                   const std::map<std::string, std::string>& configs) override;
    // Raises the partition count (partitions are only ever added, as in Kafka).
    // errc::not_found, errc::invalid_argument when not above the current count.
    result<void> set_partitions(const std::string& name, int32_t partitions) override;

    // Expansions (expansion_store.h; the definitions, their progress lives with their
    // target tables).
    result<void> create_expansion(const expansion_info& e) override;
    result<void> delete_expansion(const std::string& target) override;
    std::vector<expansion_info> list_expansions() const override;

    // Users and policies (security_store.h; security_store.cc).
    result<void> upsert_credential(const scram_record& c) override;
    result<void> delete_credential(const std::string& user, int8_t mechanism) override;
    result<void> delete_user(const std::string& user) override;
    std::vector<scram_record> credentials(const std::string& user) const override;
    std::map<std::string, std::vector<scram_record>> list_users() const override;
    result<void> put_policy(const std::string& name, const std::string& document) override;
    result<void> delete_policy(const std::string& name) override;
    result<void> attach_policy(const std::string& name, const std::string& user) override;
    result<void> detach_policy(const std::string& name, const std::string& user) override;
    std::vector<policy_record> list_policies() const override;
    std::optional<policy_record> find_policy(const std::string& name) const override;
    uint64_t security_generation() const override { return _security_generation.load(); }

    // Idempotent producers: a new producer id, committed before it is returned, so that
    // no id is ever given twice, across restarts and crashes too (ids start at 0).
    // Errors: io_error, corrupt (the stored counter is not a number).
    result<int64_t> allocate_producer_id() override;

    // Broker settings changed at run time (broker_config_store.cc). scope "" is the
    // cluster-wide default, "broker" this broker's own. set_broker_configs replaces the
    // scope's whole set in one transaction. Errors: io_error; invalid_argument (scope).
    result<std::map<std::string, std::string>> broker_configs(
        const std::string& scope) const override;
    result<void> set_broker_configs(const std::string& scope,
                                    const std::map<std::string, std::string>& configs) override;

    // Group configs (broker_config_store.cc, table group_configs, schema version 11).
    result<std::map<std::string, std::map<std::string, std::string>>> group_configs()
        const override;
    result<void> set_group_configs(const std::string& group_id,
                                   const std::map<std::string, std::string>& configs) override;

    std::vector<topic_info> list_topics() const override;  // ordered by name (bytewise)
    std::optional<topic_info> find_topic(const std::string& name) const override;
    std::optional<topic_info> find_topic(const uuid& id) const override;

    // Generated at first open, in Kafka's 22-character form, and kept in the database.
    std::string cluster_id() const { return _cluster_id; }
    // Changes whenever a topic is created or deleted (SQL sessions re-list the topic
    // tables then).
    uint64_t generation() const override { return _generation.load(); }

  private:
    explicit catalog(std::unique_ptr<detail::db> d);
    result<void> load();

    std::unique_ptr<detail::db> _db;
    std::string _cluster_id;  // immutable after open()

    mutable std::mutex _mu;
    std::map<std::string, topic_info> _by_name;         // guarded by _mu
    std::map<uuid, std::string> _name_by_id;            // guarded by _mu
    std::map<std::string, expansion_info> _expansions;  // by target; guarded by _mu
    std::atomic<uint64_t> _generation{1};
    // Users and policies; guarded by _mu.
    std::map<std::string, std::vector<scram_record>> _users;
    std::map<std::string, policy_record> _policies;
    std::atomic<uint64_t> _security_generation{1};

    result<void> load_security();
};

}  // namespace sluice::catalog

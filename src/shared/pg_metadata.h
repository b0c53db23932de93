#pragma once

// Producer-id allocation and broker configs (catalog/metadata_store.h) in the shared
// catalog: sluice_producer_ids and sluice_broker_configs (docs/formats/shared-catalog.md).

#include <memory>
#include <mutex>

#include "catalog/metadata_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// Hands out producer ids from blocks it takes from the one counter row: a block's ids are
// this broker's alone, so that only one id in `block` costs a database transaction. Ids
// of a block not used before the broker stops are never given (as in Kafka, which
// allocates blocks of 1000 the same way). Thread-safe. Owns its connection.
class pg_producer_ids final : public catalog::producer_id_allocator {
  public:
    static result<std::unique_ptr<pg_producer_ids>> open(const pg_config& config,
                                                         int64_t block = 1000);
    pg_producer_ids(std::unique_ptr<pg_database> db, int64_t block)
        : _db(std::move(db)), _block(block) {}

    result<int64_t> allocate_producer_id() override;

  private:
    std::unique_ptr<pg_database> _db;
    const int64_t _block;
    std::mutex _mu;
    int64_t _next = 0;  // guarded by _mu; the block is [_next, _end)
    int64_t _end = 0;   // guarded by _mu
};

// Scope "" (the cluster-wide default) is kept as config_scope 'cluster', scope "broker"
// as 'broker.<id>' of the broker it was made for. Thread-safe. Owns its connection.
class pg_broker_config_store final : public catalog::broker_config_store {
  public:
    static result<std::unique_ptr<pg_broker_config_store>> open(const pg_config& config,
                                                                int32_t broker_id);
    pg_broker_config_store(std::unique_ptr<pg_database> db, int32_t broker_id)
        : _db(std::move(db)), _broker_id(broker_id) {}

    result<std::map<std::string, std::string>> broker_configs(
        const std::string& scope) const override;
    result<void> set_broker_configs(const std::string& scope,
                                    const std::map<std::string, std::string>& configs) override;

  private:
    std::string stored_scope(const std::string& scope) const;
    std::unique_ptr<pg_database> _db;
    const int32_t _broker_id;
};

}  // namespace sluice::shared

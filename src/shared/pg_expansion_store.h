#pragma once

// Expansions' definitions (catalog/expansion_store.h) in the shared catalog:
// sluice_expansions and where each partition starts (sluice_expansion_starts, version 7),
// with the 'expansions' row of sluice_change_versions (docs/formats/shared-catalog.md,
// version 4). The target tables and the expansions' progress are not here: every broker
// keeps a copy of each target of its own (docs/expansions.md, "Shared mode").

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "catalog/expansion_store.h"
#include "shared/pg_database.h"

namespace sluice::shared {

// The channel every change of the definitions is announced on (NOTIFY, payload: the
// target) when it commits; pg_refresher LISTENs on it and calls refresh().
inline constexpr const char* expansions_channel = "sluice_expansions";

// Thread-safe. Reads come from a copy in memory: this store's writes reach it when they
// commit, other brokers' when refresh() runs. Owns its connection.
class pg_expansion_store final : public catalog::expansion_store {
  public:
    // Connects and loads the definitions. The catalog's schema must be in place.
    static result<std::unique_ptr<pg_expansion_store>> open(const pg_config& config);
    explicit pg_expansion_store(std::unique_ptr<pg_database> db) : _db(std::move(db)) {}

    // Reads the 'expansions' change version; when it moved since the last load, reads the
    // definitions again. Returns whether anything changed.
    result<bool> refresh();

    // Locks the topic's row, so that the topic cannot be deleted meanwhile
    // (pg_topic_store::delete_topic refuses a topic with expansions).
    result<void> create_expansion(const catalog::expansion_info& e) override;
    result<void> delete_expansion(const std::string& target) override;
    std::vector<catalog::expansion_info> list_expansions() const override;

    struct state {
        int64_t version = -1;
        std::map<std::string, catalog::expansion_info> by_target;
    };

  private:
    result<void> write(const std::function<result<void>(pg_transaction&)>& body,
                       const std::string& target);
    void install(state s);

    std::unique_ptr<pg_database> _db;
    mutable std::mutex _mu;
    state _state;  // guarded by _mu
};

}  // namespace sluice::shared

#include "shared/pg_metadata.h"

#include <fmt/format.h>

#include "common/logging.h"

namespace sluice::shared {

result<std::unique_ptr<pg_producer_ids>> pg_producer_ids::open(const pg_config& config,
                                                               int64_t block) {
    if (block < 1)
        return error{errc::invalid_argument,
                     fmt::format("a producer id block of {} ids; it must be at least 1", block)};
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_producer_ids>(std::move(*db), block);
}

result<int64_t> pg_producer_ids::allocate_producer_id() {
    std::lock_guard lock(_mu);
    if (_next < _end) return _next++;
    // The row lock queues brokers taking blocks at once; each gets its own range.
    auto first = _db->transact<int64_t>(
        isolation_level::read_committed, [&](pg_transaction& tx) -> result<int64_t> {
            auto row =
                tx.exec("SELECT next_producer_id FROM sluice_producer_ids WHERE id = 1 FOR UPDATE");
            if (!row) return row.err();
            if (row->size() != 1) return error{errc::corrupt, "sluice_producer_ids has no row 1"};
            const int64_t next = row->int64(0, 0);
            auto up = tx.exec(
                "UPDATE sluice_producer_ids SET next_producer_id = CAST($1 AS BIGINT) WHERE id = 1",
                {std::to_string(next + _block)});
            if (!up) return up.err();
            return next;
        });
    if (!first) return first.err();
    // Committed before any id of the block is handed out.
    _next = *first;
    _end = *first + _block;
    return _next++;
}

result<std::unique_ptr<pg_broker_config_store>> pg_broker_config_store::open(
    const pg_config& config, int32_t broker_id) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    return std::make_unique<pg_broker_config_store>(std::move(*db), broker_id);
}

std::string pg_broker_config_store::stored_scope(const std::string& scope) const {
    return scope.empty() ? "cluster" : fmt::format("broker.{}", _broker_id);
}

result<std::map<std::string, std::string>> pg_broker_config_store::broker_configs(
    const std::string& scope) const {
    if (auto r = catalog::check_broker_config_scope(scope); !r) return r.err();
    auto rows = _db->exec(
        "SELECT config_key, config_value FROM sluice_broker_configs WHERE config_scope = $1",
        {stored_scope(scope)});
    if (!rows) return rows.err();
    std::map<std::string, std::string> out;
    for (size_t r = 0; r < rows->size(); ++r) out[rows->text(r, 0)] = rows->text(r, 1);
    return out;
}

result<void> pg_broker_config_store::set_broker_configs(
    const std::string& scope, const std::map<std::string, std::string>& configs) {
    if (auto r = catalog::check_broker_config_scope(scope); !r) return r;
    const std::string stored = stored_scope(scope);
    auto r = _db->transact(isolation_level::serializable, [&](pg_transaction& tx) -> result<void> {
        auto del = tx.exec("DELETE FROM sluice_broker_configs WHERE config_scope = $1", {stored});
        if (!del) return del.err();
        for (const auto& [k, v] : configs) {
            auto ins = tx.exec(
                "INSERT INTO sluice_broker_configs (config_scope, config_key, config_value) "
                "VALUES ($1, $2, $3)",
                {stored, k, v});
            if (!ins) return ins.err();
        }
        return {};
    });
    if (!r) return r;
    log_info("catalog", "broker configs ({}): {} set in the shared catalog", stored,
             configs.size());
    return {};
}

}  // namespace sluice::shared

#include "shared/pg_topic_store.h"

#include <set>

#include <fmt/format.h>

#include "catalog/topic_config.h"
#include "common/clock.h"
#include "common/logging.h"

namespace sluice::shared {

using catalog::topic_info;

std::string topic_id_hex(const catalog::uuid& id) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(32);
    for (uint8_t b : id) {
        out += digits[b >> 4];
        out += digits[b & 0xf];
    }
    return out;
}

std::optional<catalog::uuid> topic_id_from_hex(std::string_view hex) {
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    };
    if (hex.size() != 32) return std::nullopt;
    catalog::uuid out{};
    for (size_t i = 0; i < out.size(); ++i) {
        int hi = nibble(hex[2 * i]);
        int lo = nibble(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) return std::nullopt;
        out[i] = static_cast<uint8_t>(hi * 16 + lo);
    }
    return out;
}

result<std::unique_ptr<pg_topic_store>> pg_topic_store::open(const pg_config& config) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    auto s = std::make_unique<pg_topic_store>(std::move(*db));
    if (auto r = s->ensure_cluster_id(); !r) return r.err();
    if (auto r = s->refresh(); !r) return r.err();
    return s;
}

result<void> pg_topic_store::ensure_cluster_id() {
    // Brokers starting together may both insert: the loser's insert finds the row (the
    // primary key serializes them; the statement is retried on a unique violation).
    const std::string mine = catalog::uuid_to_string(catalog::random_uuid());
    for (int attempt = 0;; ++attempt) {
        auto r = _db->transact<std::string>(
            isolation_level::read_committed, [&](pg_transaction& tx) -> result<std::string> {
                auto ins = tx.exec(
                    "INSERT INTO sluice_cluster (id, cluster_id) SELECT 1, $1 WHERE NOT EXISTS "
                    "(SELECT 1 FROM sluice_cluster WHERE id = 1)",
                    {mine});
                if (!ins) return ins.err();
                auto row = tx.exec("SELECT cluster_id FROM sluice_cluster WHERE id = 1");
                if (!row) return row.err();
                if (row->size() != 1) return error{errc::corrupt, "sluice_cluster has no row 1"};
                return row->text(0, 0);
            });
        if (r) {
            _cluster_id = *r;
            return {};
        }
        if (r.code() != errc::already_exists || attempt >= 3) return r.err();
    }
}

result<bool> pg_topic_store::refresh() {
    using topics = std::map<std::string, topic_info>;
    auto loaded = _db->transact<topics>(
        isolation_level::repeatable_read, [](pg_transaction& tx) -> result<topics> {
            auto rows = tx.exec(
                "SELECT topic_id, topic_name, partition_count, created_ms FROM sluice_topics "
                "WHERE state = 'live'");
            if (!rows) return rows.err();
            topics out;
            std::map<std::string, std::string> name_by_hex;
            for (size_t r = 0; r < rows->size(); ++r) {
                topic_info t;
                auto id = topic_id_from_hex(rows->text(r, 0));
                t.name = rows->text(r, 1);
                if (!id)
                    return error{errc::corrupt, fmt::format("topic '{}' has the id '{}'", t.name,
                                                            rows->text(r, 0))};
                t.id = *id;
                t.partitions = static_cast<int32_t>(rows->int64(r, 2));
                t.created_ms = rows->int64(r, 3);
                name_by_hex[rows->text(r, 0)] = t.name;
                out.emplace(t.name, std::move(t));
            }
            auto cfg =
                tx.exec("SELECT topic_id, config_key, config_value FROM sluice_topic_configs");
            if (!cfg) return cfg.err();
            for (size_t r = 0; r < cfg->size(); ++r)
                if (auto it = name_by_hex.find(cfg->text(r, 0)); it != name_by_hex.end())
                    out[it->second].configs[cfg->text(r, 1)] = cfg->text(r, 2);
            return out;
        });
    if (!loaded) return loaded.err();
    std::lock_guard lock(_mu);
    bool names_changed = loaded->size() != _by_name.size();
    for (const auto& [name, t] : *loaded) {
        auto it = _by_name.find(name);
        names_changed = names_changed || it == _by_name.end() || it->second.id != t.id;
    }
    bool changed = names_changed || *loaded != _by_name;
    if (!changed) return false;
    _by_name = std::move(*loaded);
    _name_by_id.clear();
    for (const auto& [name, t] : _by_name) _name_by_id[t.id] = name;
    if (names_changed) _generation.fetch_add(1);
    return true;
}

namespace {

result<void> insert_configs(pg_transaction& tx, const std::string& id,
                            const std::map<std::string, std::string>& configs) {
    for (const auto& [k, v] : configs) {
        auto r = tx.exec(
            "INSERT INTO sluice_topic_configs (topic_id, config_key, config_value) "
            "VALUES ($1, $2, $3)",
            {id, k, v});
        if (!r) return r.err();
    }
    return {};
}

result<void> insert_partitions(pg_transaction& tx, const std::string& id, int32_t from,
                               int32_t to) {
    for (int32_t p = from; p < to; ++p) {
        auto r = tx.exec(
            "INSERT INTO sluice_partitions (topic_id, partition_id, log_start_offset, "
            "high_watermark, leader_epoch) VALUES ($1, CAST($2 AS INTEGER), 0, 0, 0)",
            {id, std::to_string(p)});
        if (!r) return r.err();
    }
    return {};
}

// The topic's id (hex) and partition count, its row locked until the transaction ends.
result<std::pair<std::string, int32_t>> lock_topic(pg_transaction& tx, const std::string& name) {
    auto row = tx.exec(
        "SELECT topic_id, partition_count FROM sluice_topics WHERE topic_name = $1 AND "
        "state = 'live' FOR UPDATE",
        {name});
    if (!row) return row.err();
    if (row->size() == 0)
        return error{errc::not_found, fmt::format("topic '{}' does not exist", name)};
    return std::pair{row->text(0, 0), static_cast<int32_t>(row->int64(0, 1))};
}

}  // namespace

result<void> pg_topic_store::create_topic(const topic_info& in) {
    if (auto r = catalog::validate_new_topic(in); !r) return r;
    topic_info t = in;
    if (t.created_ms == 0) t.created_ms = now_ms();
    const std::string id = topic_id_hex(t.id);
    auto r =
        _db->transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
            auto taken = tx.exec(
                "SELECT topic_name, topic_id FROM sluice_topics WHERE topic_name = $1 OR topic_id "
                "= $2",
                {t.name, id});
            if (!taken) return taken.err();
            if (taken->size() > 0) {
                if (taken->text(0, 0) == t.name ||
                    (taken->size() > 1 && taken->text(1, 0) == t.name))
                    return {errc::already_exists, fmt::format("topic '{}' already exists", t.name)};
                return {errc::already_exists,
                        fmt::format("topic id {} is already used by topic '{}'",
                                    catalog::uuid_to_string(t.id), taken->text(0, 0))};
            }
            // Two brokers creating the same name at once: the second's insert fails on the
            // unique name (already_exists) once the first commits.
            auto ins = tx.exec(
                "INSERT INTO sluice_topics (topic_id, topic_name, partition_count, created_at, "
                "state, created_ms) VALUES ($1, $2, CAST($3 AS INTEGER), CURRENT_TIMESTAMP, "
                "'live', "
                "CAST($4 AS BIGINT))",
                {id, t.name, std::to_string(t.partitions), std::to_string(t.created_ms)});
            if (!ins) return ins.err();
            if (auto p = insert_partitions(tx, id, 0, t.partitions); !p) return p;
            if (auto c = insert_configs(tx, id, t.configs); !c) return c;
            return tx.notify(topics_channel, t.name);
        });
    if (!r) return r;
    log_info("catalog",
             "created topic '{}' (id {}, {} partitions, {} configs) in the shared catalog", t.name,
             catalog::uuid_to_string(t.id), t.partitions, t.configs.size());
    std::lock_guard lock(_mu);
    _name_by_id[t.id] = t.name;
    _by_name[t.name] = std::move(t);
    _generation.fetch_add(1);
    return {};
}

result<void> pg_topic_store::delete_topic(const std::string& name) {
    auto r =
        _db->transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
            auto t = lock_topic(tx, name);
            if (!t) return t.err();
            // Expansions lock the topic's row when they are created, so none can appear
            // between this check and the commit.
            auto exps =
                tx.exec("SELECT target FROM sluice_expansions WHERE topic_name = $1", {name});
            if (!exps) return exps.err();
            if (exps->size() > 0) {
                std::set<std::string> targets;  // bytewise, as the SQLite catalog lists them
                for (size_t i = 0; i < exps->size(); ++i) targets.insert(exps->text(i, 0));
                std::string users;
                for (const auto& target : targets) users += (users.empty() ? "" : ", ") + target;
                return {errc::in_use,
                        fmt::format("topic '{}' has expansions into {}; drop them first (sluice "
                                    "expansion drop)",
                                    name, users)};
            }
            const std::vector<pg_param> id{t->first};
            // Children first: the foreign keys forbid rows without their parent.
            for (const char* sql : {"DELETE FROM sluice_producer_batches WHERE topic_id = $1",
                                    "DELETE FROM sluice_producer_state WHERE topic_id = $1",
                                    "DELETE FROM sluice_txn_open WHERE topic_id = $1",
                                    "DELETE FROM sluice_txn_aborted WHERE topic_id = $1",
                                    "DELETE FROM sluice_batches WHERE topic_id = $1",
                                    "DELETE FROM sluice_partitions WHERE topic_id = $1",
                                    "DELETE FROM sluice_topic_configs WHERE topic_id = $1",
                                    "DELETE FROM sluice_topics WHERE topic_id = $1"})
                if (auto d = tx.exec(sql, id); !d) return d.err();
            auto offsets =
                tx.exec("DELETE FROM sluice_group_offsets WHERE topic_name = $1", {name});
            if (!offsets) return offsets.err();
            return tx.notify(topics_channel, name);
        });
    if (!r) return r;
    log_info("catalog", "deleted topic '{}' from the shared catalog", name);
    std::lock_guard lock(_mu);
    if (auto it = _by_name.find(name); it != _by_name.end()) {
        _name_by_id.erase(it->second.id);
        _by_name.erase(it);
    }
    _generation.fetch_add(1);
    return {};
}

result<void> pg_topic_store::set_topic_configs(const std::string& name,
                                               const std::map<std::string, std::string>& configs) {
    if (auto r = catalog::validate_topic_configs(configs); !r)
        return {r.code(), fmt::format("topic '{}': {}", name, r.err().message)};
    auto r =
        _db->transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
            auto t = lock_topic(tx, name);
            if (!t) return t.err();
            auto del = tx.exec("DELETE FROM sluice_topic_configs WHERE topic_id = $1", {t->first});
            if (!del) return del.err();
            if (auto c = insert_configs(tx, t->first, configs); !c) return c;
            return tx.notify(topics_channel, name);
        });
    if (!r) return r;
    log_info("catalog", "topic '{}': {} configs set in the shared catalog", name, configs.size());
    std::lock_guard lock(_mu);
    if (auto it = _by_name.find(name); it != _by_name.end()) it->second.configs = configs;
    return {};
}

result<void> pg_topic_store::set_partitions(const std::string& name, int32_t partitions) {
    auto r =
        _db->transact(isolation_level::read_committed, [&](pg_transaction& tx) -> result<void> {
            auto t = lock_topic(tx, name);
            if (!t) return t.err();
            if (partitions <= t->second)
                return {errc::invalid_argument,
                        fmt::format("topic '{}' has {} partitions; the new count {} must be larger",
                                    name, t->second, partitions)};
            if (auto p = insert_partitions(tx, t->first, t->second, partitions); !p) return p;
            auto up = tx.exec(
                "UPDATE sluice_topics SET partition_count = CAST($2 AS INTEGER) WHERE topic_id = "
                "$1",
                {t->first, std::to_string(partitions)});
            if (!up) return up.err();
            return tx.notify(topics_channel, name);
        });
    if (!r) return r;
    log_info("catalog", "topic '{}': {} partitions in the shared catalog", name, partitions);
    std::lock_guard lock(_mu);
    if (auto it = _by_name.find(name); it != _by_name.end()) it->second.partitions = partitions;
    return {};
}

std::vector<topic_info> pg_topic_store::list_topics() const {
    std::lock_guard lock(_mu);
    std::vector<topic_info> out;
    out.reserve(_by_name.size());
    for (const auto& [_, t] : _by_name) out.push_back(t);
    return out;
}

std::optional<topic_info> pg_topic_store::find_topic(const std::string& name) const {
    std::lock_guard lock(_mu);
    auto it = _by_name.find(name);
    if (it == _by_name.end()) return std::nullopt;
    return it->second;
}

std::optional<topic_info> pg_topic_store::find_topic(const catalog::uuid& id) const {
    std::lock_guard lock(_mu);
    auto it = _name_by_id.find(id);
    if (it == _name_by_id.end()) return std::nullopt;
    return _by_name.at(it->second);
}

}  // namespace sluice::shared

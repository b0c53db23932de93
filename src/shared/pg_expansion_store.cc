#include "shared/pg_expansion_store.h"

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"
#include "shared/pg_refresher.h"

namespace sluice::shared {

using catalog::expansion_info;

namespace {

constexpr const char* expansions_subject = "expansions";

result<pg_expansion_store::state> load_expansions(pg_transaction& tx) {
    pg_expansion_store::state out;
    auto version = read_change_version(tx, expansions_subject);
    if (!version) return version.err();
    out.version = *version;
    auto rows = tx.exec(
        "SELECT target, topic_name, source, flatten, copy_source, schema_json, created_ms "
        "FROM sluice_expansions");
    if (!rows) return rows.err();
    for (size_t r = 0; r < rows->size(); ++r) {
        expansion_info e;
        e.target = rows->text(r, 0);
        e.topic = rows->text(r, 1);
        e.source = rows->text(r, 2);
        e.flatten = rows->int64(r, 3) != 0;
        e.copy_source = rows->int64(r, 4) != 0;
        e.schema = rows->text(r, 5);
        e.created_ms = rows->int64(r, 6);
        out.by_target.emplace(e.target, std::move(e));
    }
    auto starts = tx.exec(
        "SELECT target, partition_id, live_from, backfill_from FROM sluice_expansion_starts");
    if (!starts) return starts.err();
    for (size_t r = 0; r < starts->size(); ++r) {
        auto it = out.by_target.find(starts->text(r, 0));
        if (it == out.by_target.end()) continue;
        it->second.starts[static_cast<int32_t>(starts->int64(r, 1))] = {starts->int64(r, 2),
                                                                        starts->int64(r, 3)};
    }
    return out;
}

}  // namespace

result<std::unique_ptr<pg_expansion_store>> pg_expansion_store::open(const pg_config& config) {
    auto db = pg_database::connect(config);
    if (!db) return db.err();
    auto s = std::make_unique<pg_expansion_store>(std::move(*db));
    if (auto r = s->refresh(); !r) return r.err();
    return s;
}

void pg_expansion_store::install(state s) {
    std::lock_guard lock(_mu);
    if (s.version > _state.version) _state = std::move(s);
}

result<bool> pg_expansion_store::refresh() {
    int64_t seen;
    {
        std::lock_guard lock(_mu);
        seen = _state.version;
    }
    auto loaded = load_if_moved<state>(*_db, expansions_subject, seen, load_expansions);
    if (!loaded) return loaded.err();
    if (!*loaded) return false;
    install(std::move(**loaded));
    return true;
}

result<void> pg_expansion_store::write(const std::function<result<void>(pg_transaction&)>& body,
                                       const std::string& target) {
    auto s = change_and_load<state>(*_db, expansions_subject, expansions_channel, target, body,
                                    load_expansions);
    if (!s) return s.err();
    install(std::move(*s));
    return {};
}

result<void> pg_expansion_store::create_expansion(const expansion_info& in) {
    expansion_info e = in;
    if (e.created_ms == 0) e.created_ms = now_ms();
    auto r = write(
        [&](pg_transaction& tx) -> result<void> {
            // The topic's row lock orders this against the topic's deletion.
            auto topic = tx.exec(
                "SELECT topic_id FROM sluice_topics WHERE topic_name = $1 AND state = 'live' "
                "FOR UPDATE",
                {e.topic});
            if (!topic) return topic.err();
            if (topic->size() == 0)
                return {errc::not_found, fmt::format("topic '{}' does not exist", e.topic)};
            auto taken =
                tx.exec("SELECT topic_name FROM sluice_expansions WHERE target = $1", {e.target});
            if (!taken) return taken.err();
            if (taken->size() > 0)
                return {errc::already_exists,
                        fmt::format("{} is already the target of an expansion of topic '{}'",
                                    e.target, taken->text(0, 0))};
            auto ins = tx.exec(
                "INSERT INTO sluice_expansions (target, topic_name, source, flatten, copy_source, "
                "schema_json, created_ms) VALUES ($1, $2, $3, CAST($4 AS INTEGER), "
                "CAST($5 AS INTEGER), $6, CAST($7 AS BIGINT))",
                {e.target, e.topic, e.source, e.flatten ? "1" : "0", e.copy_source ? "1" : "0",
                 e.schema, std::to_string(e.created_ms)});
            if (!ins) return ins.err();
            for (const auto& [p, start] : e.starts) {
                auto at = tx.exec(
                    "INSERT INTO sluice_expansion_starts (target, partition_id, live_from, "
                    "backfill_from) VALUES ($1, CAST($2 AS INTEGER), CAST($3 AS BIGINT), "
                    "CAST($4 AS BIGINT))",
                    {e.target, std::to_string(p), std::to_string(start.live_from),
                     std::to_string(start.backfill_from)});
                if (!at) return at.err();
            }
            return {};
        },
        e.target);
    if (!r) return r;
    log_info("catalog", "created expansion {} of topic '{}' in the shared catalog", e.target,
             e.topic);
    return {};
}

result<void> pg_expansion_store::delete_expansion(const std::string& target) {
    auto r = write(
        [&](pg_transaction& tx) -> result<void> {
            auto del = tx.exec("DELETE FROM sluice_expansions WHERE target = $1", {target});
            if (!del) return del.err();
            if (del->affected == 0)
                return {errc::not_found, fmt::format("no expansion has target {}", target)};
            return {};
        },
        target);
    if (!r) return r;
    log_info("catalog", "deleted expansion {} from the shared catalog", target);
    return {};
}

std::vector<expansion_info> pg_expansion_store::list_expansions() const {
    std::lock_guard lock(_mu);
    std::vector<expansion_info> out;
    out.reserve(_state.by_target.size());
    for (const auto& [_, e] : _state.by_target) out.push_back(e);
    return out;
}

}  // namespace sluice::shared

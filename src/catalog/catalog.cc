#include "catalog/catalog.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <system_error>

#include <fmt/format.h>

#include "catalog/schema.h"
#include "catalog/sqlite_db.h"
#include "common/clock.h"
#include "common/logging.h"

namespace sluice::catalog {
namespace {

// How long a statement waits for another connection's lock before failing. Only other
// processes (tools, a second broker started by mistake) can hold one; 5 s is long enough
// for any catalog transaction and short enough to report a stuck peer.
constexpr int busy_timeout_ms = 5000;

result<void> fsync_dir(const std::filesystem::path& dir) {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0 || ::fsync(fd) != 0) {
        int e = errno;
        if (fd >= 0) ::close(fd);
        return {errc::io_error,
                fmt::format("fsync of directory {}: {}", dir.string(), std::strerror(e))};
    }
    ::close(fd);
    return {};
}

bool is_zero(const uuid& u) {
    return std::all_of(u.begin(), u.end(), [](uint8_t b) { return b == 0; });
}

}  // namespace

result<void> validate_new_topic(const topic_info& t) {
    if (auto r = validate_topic_name(t.name); !r) return r;
    if (t.partitions < 1) {
        return {errc::invalid_argument,
                fmt::format("topic '{}': partition count must be at least 1, got {}", t.name,
                            t.partitions)};
    }
    if (is_zero(t.id)) {
        return {errc::invalid_argument,
                fmt::format("topic '{}': the topic id is all-zero; assign random_uuid()", t.name)};
    }
    if (auto r = validate_topic_configs(t.configs); !r) {
        return {r.code(), fmt::format("topic '{}': {}", t.name, r.err().message)};
    }
    return {};
}

catalog::catalog(std::unique_ptr<detail::db> d) : _db(std::move(d)) {}

catalog::~catalog() = default;

result<std::unique_ptr<catalog>> catalog::open(const std::filesystem::path& path) {
    const std::string where = path.string();
    std::filesystem::path dir = path.parent_path();
    if (dir.empty()) dir = ".";
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
        return error{errc::io_error,
                     fmt::format("cannot create directory {}: {}", dir.string(), ec.message())};
    }

    auto d = detail::db::open(path);
    if (!d) return d.err();
    detail::db& db = **d;

    auto in_file = [&](result<void> r) -> result<void> {
        if (r) return r;
        return {r.code(), fmt::format("catalog {}: {}", where, r.err().message)};
    };
    if (auto r = in_file(db.exec(fmt::format("PRAGMA busy_timeout = {}", busy_timeout_ms))); !r) {
        return r.err();
    }
    // Check before any write, so that a newer or foreign file is left untouched.
    if (auto r = detail::check_file(db, where); !r) return r.err();

    // WAL cannot be enabled on some file systems (no shared memory); then fail loudly
    // rather than run with a journal mode the durability argument did not assume.
    auto mode = db.query_text("PRAGMA journal_mode = WAL");
    if (!mode) return error{mode.code(), fmt::format("catalog {}: {}", where, mode.err().message)};
    if (*mode != "wal") {
        return error{errc::io_error,
                     fmt::format("catalog {}: cannot enable WAL mode (got '{}')", where, *mode)};
    }
    // FULL: every commit syncs the WAL, so a committed topic survives power loss.
    if (auto r = in_file(db.exec("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON")); !r) {
        return r.err();
    }

    auto from = detail::migrate(db);
    if (!from) return error{from.code(), fmt::format("catalog {}: {}", where, from.err().message)};
    // The file (and its WAL) may have just been created; make their names durable too.
    if (auto r = fsync_dir(dir); !r) return r.err();

    std::unique_ptr<catalog> c(new catalog(std::move(*d)));
    if (auto r = c->load(); !r) {
        return error{r.code(), fmt::format("catalog {}: {}", where, r.err().message)};
    }
    // Version 0 is a file without tables: a new catalog, not an upgrade.
    if (*from == 0)
        log_info("catalog", "{}: schema created at version {}", where, schema_version);
    else if (*from != schema_version)
        log_info("catalog", "{}: schema migrated from version {} to {}", where, *from,
                 schema_version);
    log_info("catalog", "opened {}: schema version {}, {} topics, cluster id {}", where,
             schema_version, c->_by_name.size(), c->_cluster_id);
    return c;
}

result<void> catalog::load() {
    auto cid = _db->prepare("SELECT value FROM meta WHERE key = 'cluster_id'");
    if (!cid) return cid.err();
    auto row = cid->step();
    if (!row) return row.err();
    if (!*row) return {errc::corrupt, "the meta table has no cluster_id"};
    _cluster_id = cid->column_text(0);

    std::lock_guard lock(_mu);
    auto topics = _db->prepare("SELECT name, id, partitions, created_ms FROM topics");
    if (!topics) return topics.err();
    for (;;) {
        auto r = topics->step();
        if (!r) return r.err();
        if (!*r) break;
        topic_info t;
        t.name = topics->column_text(0);
        auto id = topics->column_blob(1);
        // The schema's CHECK makes this impossible unless the file was edited by hand.
        if (id.size() != t.id.size()) {
            return {errc::corrupt,
                    fmt::format("topic '{}' has an id of {} bytes", t.name, id.size())};
        }
        std::copy(id.begin(), id.end(), t.id.begin());
        t.partitions = static_cast<int32_t>(topics->column_int64(2));
        t.created_ms = topics->column_int64(3);
        _name_by_id[t.id] = t.name;
        _by_name.emplace(t.name, std::move(t));
    }

    auto configs = _db->prepare("SELECT topic, key, value FROM topic_configs");
    if (!configs) return configs.err();
    for (;;) {
        auto r = configs->step();
        if (!r) return r.err();
        if (!*r) break;
        auto it = _by_name.find(configs->column_text(0));
        // Foreign keys rule out orphans; skip one rather than refuse to start.
        if (it == _by_name.end()) continue;
        it->second.configs[configs->column_text(1)] = configs->column_text(2);
    }

    auto exps = _db->prepare(
        "SELECT target, topic, source, flatten, copy_source, schema, created_ms FROM expansions");
    if (!exps) return exps.err();
    for (;;) {
        auto r = exps->step();
        if (!r) return r.err();
        if (!*r) break;
        expansion_info e;
        e.target = exps->column_text(0);
        e.topic = exps->column_text(1);
        e.source = exps->column_text(2);
        e.flatten = exps->column_int64(3) != 0;
        e.copy_source = exps->column_int64(4) != 0;
        e.schema = exps->column_text(5);
        e.created_ms = exps->column_int64(6);
        _expansions.emplace(e.target, std::move(e));
    }
    return load_security();
}

result<void> catalog::create_expansion(const expansion_info& in) {
    expansion_info e = in;
    if (e.created_ms == 0) e.created_ms = now_ms();
    std::lock_guard lock(_mu);
    if (!_by_name.contains(e.topic))
        return {errc::not_found, fmt::format("topic '{}' does not exist", e.topic)};
    if (_expansions.contains(e.target))
        return {errc::already_exists,
                fmt::format("{} is already the target of an expansion of topic '{}'", e.target,
                            _expansions.at(e.target).topic)};
    auto st = _db->prepare(
        "INSERT INTO expansions (target, topic, source, flatten, copy_source, schema, "
        "created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!st) return st.err();
    st->bind(1, e.target).bind(2, e.topic).bind(3, e.source);
    st->bind(4, int64_t{e.flatten}).bind(5, int64_t{e.copy_source}).bind(6, e.schema);
    if (auto r = st->bind(7, e.created_ms).run(); !r) return r;
    log_info("catalog", "created expansion {} of topic '{}'", e.target, e.topic);
    _expansions.emplace(e.target, std::move(e));
    return {};
}

result<void> catalog::delete_expansion(const std::string& target) {
    std::lock_guard lock(_mu);
    if (!_expansions.contains(target))
        return {errc::not_found, fmt::format("no expansion has target {}", target)};
    auto st = _db->prepare("DELETE FROM expansions WHERE target = ?1");
    if (!st) return st.err();
    if (auto r = st->bind(1, target).run(); !r) return r;
    log_info("catalog", "deleted expansion {}", target);
    _expansions.erase(target);
    return {};
}

std::vector<expansion_info> catalog::list_expansions() const {
    std::lock_guard lock(_mu);
    std::vector<expansion_info> out;
    out.reserve(_expansions.size());
    for (const auto& [_, e] : _expansions) out.push_back(e);
    return out;
}

result<void> catalog::create_topic(const topic_info& in) {
    if (auto r = validate_new_topic(in); !r) return r;
    topic_info t = in;
    if (t.created_ms == 0) t.created_ms = now_ms();

    std::lock_guard lock(_mu);
    if (_by_name.contains(t.name)) {
        return {errc::already_exists, fmt::format("topic '{}' already exists", t.name)};
    }
    if (auto it = _name_by_id.find(t.id); it != _name_by_id.end()) {
        return {errc::already_exists, fmt::format("topic id {} is already used by topic '{}'",
                                                  uuid_to_string(t.id), it->second)};
    }

    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto ins = _db->prepare(
        "INSERT INTO topics (name, id, partitions, created_ms) VALUES (?1, ?2, ?3, ?4)");
    if (!ins) return ins.err();
    auto r = ins->bind(1, t.name)
                 .bind_blob(2, t.id)
                 .bind(3, int64_t{t.partitions})
                 .bind(4, t.created_ms)
                 .run();
    if (!r) return r;
    auto cfg = _db->prepare("INSERT INTO topic_configs (topic, key, value) VALUES (?1, ?2, ?3)");
    if (!cfg) return cfg.err();
    for (const auto& [k, v] : t.configs) {
        if (auto c = cfg->reset().bind(1, t.name).bind(2, k).bind(3, v).run(); !c) return c;
    }
    if (auto c = txn->commit(); !c) return c;

    log_info("catalog", "created topic '{}' (id {}, {} partitions, {} configs)", t.name,
             uuid_to_string(t.id), t.partitions, t.configs.size());
    _name_by_id[t.id] = t.name;
    _by_name.emplace(t.name, std::move(t));
    _generation.fetch_add(1);
    return {};
}

result<void> catalog::delete_topic(const std::string& name) {
    std::lock_guard lock(_mu);
    auto it = _by_name.find(name);
    if (it == _by_name.end()) {
        return {errc::not_found, fmt::format("topic '{}' does not exist", name)};
    }
    std::string users;
    for (const auto& [target, e] : _expansions)
        if (e.topic == name) users += (users.empty() ? "" : ", ") + target;
    if (!users.empty())
        return {errc::in_use,
                fmt::format("topic '{}' has expansions into {}; drop them first (sluice "
                            "expansion drop)",
                            name, users)};

    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    // Configs first: the foreign key forbids configs without their topic.
    for (const char* sql :
         {"DELETE FROM topic_configs WHERE topic = ?1",
          "DELETE FROM group_offsets WHERE topic = ?1", "DELETE FROM topics WHERE name = ?1"}) {
        auto st = _db->prepare(sql);
        if (!st) return st.err();
        if (auto r = st->bind(1, name).run(); !r) return r;
    }
    if (auto c = txn->commit(); !c) return c;

    log_info("catalog", "deleted topic '{}' (id {})", name, uuid_to_string(it->second.id));
    _name_by_id.erase(it->second.id);
    _by_name.erase(it);
    _generation.fetch_add(1);
    return {};
}

result<void> catalog::set_topic_configs(const std::string& name,
                                        const std::map<std::string, std::string>& configs) {
    if (auto r = validate_topic_configs(configs); !r) {
        return {r.code(), fmt::format("topic '{}': {}", name, r.err().message)};
    }
    std::lock_guard lock(_mu);
    auto it = _by_name.find(name);
    if (it == _by_name.end())
        return {errc::not_found, fmt::format("topic '{}' does not exist", name)};
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto del = _db->prepare("DELETE FROM topic_configs WHERE topic = ?1");
    if (!del) return del.err();
    if (auto r = del->bind(1, name).run(); !r) return r;
    auto ins = _db->prepare("INSERT INTO topic_configs (topic, key, value) VALUES (?1, ?2, ?3)");
    if (!ins) return ins.err();
    for (const auto& [k, v] : configs) {
        if (auto c = ins->reset().bind(1, name).bind(2, k).bind(3, v).run(); !c) return c;
    }
    if (auto c = txn->commit(); !c) return c;
    log_info("catalog", "topic '{}': {} configs set", name, configs.size());
    it->second.configs = configs;
    return {};
}

result<void> catalog::set_partitions(const std::string& name, int32_t partitions) {
    std::lock_guard lock(_mu);
    auto it = _by_name.find(name);
    if (it == _by_name.end())
        return {errc::not_found, fmt::format("topic '{}' does not exist", name)};
    if (partitions <= it->second.partitions) {
        return {errc::invalid_argument,
                fmt::format("topic '{}' has {} partitions; the new count {} must be larger", name,
                            it->second.partitions, partitions)};
    }
    auto txn = detail::write_txn::begin(*_db);
    if (!txn) return txn.err();
    auto st = _db->prepare("UPDATE topics SET partitions = ?2 WHERE name = ?1");
    if (!st) return st.err();
    if (auto r = st->bind(1, name).bind(2, int64_t{partitions}).run(); !r) return r;
    if (auto c = txn->commit(); !c) return c;
    log_info("catalog", "topic '{}': {} -> {} partitions", name, it->second.partitions, partitions);
    it->second.partitions = partitions;
    return {};
}

std::vector<topic_info> catalog::list_topics() const {
    std::lock_guard lock(_mu);
    std::vector<topic_info> out;
    out.reserve(_by_name.size());
    for (const auto& [_, t] : _by_name) out.push_back(t);
    return out;
}

std::optional<topic_info> catalog::find_topic(const std::string& name) const {
    std::lock_guard lock(_mu);
    auto it = _by_name.find(name);
    if (it == _by_name.end()) return std::nullopt;
    return it->second;
}

std::optional<topic_info> catalog::find_topic(const uuid& id) const {
    std::lock_guard lock(_mu);
    auto it = _name_by_id.find(id);
    if (it == _name_by_id.end()) return std::nullopt;
    return _by_name.at(it->second);
}

}  // namespace sluice::catalog

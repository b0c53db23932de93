#include "app/shared_serve.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/logging.h"
#include "shared/catalog_schema.h"
#include "shared/engine_env.h"
#include "shared/pg_offset_store.h"

namespace sluice::app {

void add_shared_serve_flags(CLI::App& cmd, shared_serve_options& o) {
    cmd.add_option("--shared-storage", o.storage,
                   "Shared mode: record batches go to this S3-compatible bucket and key prefix, "
                   "s3://BUCKET/PREFIX (with --shared-catalog; docs/shared-mode.md)");
    cmd.add_option("--shared-catalog", o.catalog,
                   "Shared mode: the PostgreSQL-compatible database holding offsets, the batch "
                   "index, topics, groups and producer state, postgresql://USER[:PASSWORD]@HOST:"
                   "PORT/DB (with --shared-storage)");
    cmd.add_option("--node-id", o.node_id,
                   "Shared mode: this broker's id (Kafka's node.id), unique among the live "
                   "brokers of the cluster")
        ->check(CLI::Range(0, 1 << 30))
        ->capture_default_str();
    cmd.add_option("--s3-endpoint", o.s3_endpoint,
                   "Shared mode: the object store's URL, http(s)://HOST:PORT. Default: "
                   "SLUICE_S3_ENDPOINT");
    cmd.add_option("--s3-region", o.s3_region,
                   "Shared mode: the region requests are signed for. Default: SLUICE_S3_REGION, "
                   "AWS_REGION, else us-east-1");
    cmd.add_option("--s3-access-key", o.s3_access_key,
                   "Shared mode: the access key id. Default: SLUICE_S3_ACCESS_KEY, else "
                   "AWS_ACCESS_KEY_ID");
    cmd.add_option("--s3-secret-key", o.s3_secret_key,
                   "Shared mode: the secret key (better in the environment or a config file "
                   "than on a command line). Default: SLUICE_S3_SECRET_KEY, else "
                   "AWS_SECRET_ACCESS_KEY");
    cmd.add_flag("--s3-virtual-hosted", o.s3_virtual_hosted,
                 "Shared mode: BUCKET.HOST/KEY URLs (AWS's style) instead of HOST/BUCKET/KEY");
    cmd.add_flag("--s3-unsigned-payload", o.s3_unsigned_payload,
                 "Shared mode: send bodies as UNSIGNED-PAYLOAD instead of signing their SHA-256 "
                 "(as AWS's SDKs do over HTTPS)");
    cmd.add_option("--produce-window-ms", o.produce_window_ms,
                   "Shared mode: how long the first batch of a window waits for others before "
                   "all of them are written as one object and committed")
        ->check(CLI::Range(int64_t{0}, int64_t{10000}))
        ->capture_default_str();
    cmd.add_option("--shared-windows-in-flight", o.windows_in_flight,
                   "Shared mode: produce windows between closing and answering: the next "
                   "window closes and uploads while the one before commits (commits stay in "
                   "window order; 1: one window at a time)")
        ->check(CLI::Range(int64_t{1}, int64_t{16}))
        ->capture_default_str();
    cmd.add_option("--broker-lease-ms", o.broker_lease_ms,
                   "Shared mode: the lease a broker holds its id with (renewed every third of "
                   "it); a broker that dies drops out of Metadata after at most this long")
        ->check(CLI::Range(int64_t{1000}, int64_t{600000}))
        ->capture_default_str();
    cmd.add_option("--maintenance-interval-ms", o.maintenance_interval_ms,
                   "Shared mode: how often merging, retention and the cleanup of unreferenced "
                   "objects run for each partition, cluster-wide (any broker takes a due job "
                   "under a lease in the database)")
        ->check(CLI::Range(int64_t{1000}, int64_t{86400000}))
        ->capture_default_str();
    cmd.add_option("--object-delete-grace-ms", o.object_delete_grace_ms,
                   "Shared mode: how long an object no batch references stays in the store "
                   "(for reads in flight), and how old an object the catalog does not know must "
                   "be before it is deleted as left by a crash")
        ->check(CLI::Range(int64_t{60000}, int64_t{86400000}))
        ->capture_default_str();
    cmd.add_option("--shared-cache-bytes", o.cache_bytes,
                   "Shared mode: the in-memory cache of object ranges read")
        ->capture_default_str();
    cmd.add_option("--shared-disk-cache-dir", o.disk_cache_dir,
                   "Shared mode: the directory of the cache's disk tier (object ranges read or "
                   "written, kept across restarts). Default: DATA_DIR/object-cache");
    cmd.add_option("--shared-disk-cache-bytes", o.disk_cache_bytes,
                   "Shared mode: the budget of the cache's disk tier; 0 turns it off")
        ->capture_default_str();
}

namespace {

std::string first_set(std::initializer_list<std::string> values) {
    for (const auto& v : values)
        if (!v.empty()) return v;
    return {};
}

std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v ? v : "";
}

}  // namespace

broker::metadata_stores shared_engines::stores(int32_t node_id) {
    return broker::shared_metadata_stores(*topics, *producer_ids, *broker_configs, *security, db,
                                          node_id);
}

broker::shared_mode shared_engines::mode(int32_t node_id, std::chrono::milliseconds poll) const {
    broker::shared_mode m;
    m.node_id = node_id;
    m.log = log.get();
    m.topics = topics.get();
    m.poll_interval = poll;
    return m;
}

log::partition_store* shared_sql_partitions::partition(const std::string& topic, int32_t p) {
    const auto t = _e.topics->find_topic(topic);
    if (!t || p < 0 || p >= t->partitions) return nullptr;
    return &_e.log->partition(shared::topic_id_hex(t->id), {topic, p});
}

result<std::unique_ptr<catalog::offset_store>> open_shared_offsets(const shared_engines& e) {
    auto s = shared::pg_offset_store::open(e.db);
    if (!s) return error{s.code(), "--shared-catalog: committed offsets: " + s.err().message};
    return std::unique_ptr<catalog::offset_store>(std::move(*s));
}

result<shared_engines> open_shared_engines(const shared_serve_options& o,
                                           const std::filesystem::path& data_dir) {
    if (o.storage.empty() || o.catalog.empty())
        return error{errc::invalid_argument,
                     "shared mode needs both --shared-storage s3://BUCKET/PREFIX and "
                     "--shared-catalog postgresql://..."};
    shared::s3_config s3 = shared::s3_config_from_env();
    if (auto r = shared::parse_s3_url(o.storage, s3); !r)
        return error{errc::invalid_argument, "--shared-storage: " + r.err().message};
    s3.endpoint = first_set({o.s3_endpoint, s3.endpoint});
    s3.region = first_set({o.s3_region, env("SLUICE_S3_REGION"), env("AWS_REGION"), "us-east-1"});
    s3.access_key = first_set({o.s3_access_key, s3.access_key, env("AWS_ACCESS_KEY_ID")});
    s3.secret_key = first_set({o.s3_secret_key, s3.secret_key, env("AWS_SECRET_ACCESS_KEY")});
    s3.path_style = !o.s3_virtual_hosted;
    if (o.s3_unsigned_payload) s3.sign_payload = false;
    if (s3.endpoint.empty())
        return error{errc::invalid_argument,
                     "shared mode needs the object store's URL: --s3-endpoint or "
                     "SLUICE_S3_ENDPOINT"};
    shared_engines e;
    e.db = shared::pg_config_from_env();
    e.db.url = o.catalog;
    e.where = fmt::format("s3://{}/{} at {}", s3.bucket, s3.prefix, s3.endpoint);
    auto store = shared::make_s3_object_store(s3);
    if (!store) return error{store.code(), "--shared-storage: " + store.err().message};
    e.store = std::move(*store);
    {
        auto db = shared::pg_database::connect(e.db);
        if (!db) return error{db.code(), "--shared-catalog: " + db.err().message};
        auto v = shared::ensure_catalog_schema(**db);
        if (!v) return error{v.code(), "--shared-catalog: schema: " + v.err().message};
        log_info("shared", "shared catalog at schema version {} (found {})",
                 shared::shared_catalog_version, *v);
    }
    auto topics = shared::pg_topic_store::open(e.db);
    if (!topics) return error{topics.code(), "--shared-catalog: topics: " + topics.err().message};
    e.topics = std::move(*topics);
    auto ids = shared::pg_producer_ids::open(e.db);
    if (!ids) return error{ids.code(), "--shared-catalog: producer ids: " + ids.err().message};
    e.producer_ids = std::move(*ids);
    auto configs = shared::pg_broker_config_store::open(e.db, o.node_id);
    if (!configs)
        return error{configs.code(), "--shared-catalog: broker configs: " + configs.err().message};
    e.broker_configs = std::move(*configs);
    auto security = shared::pg_security_store::open(e.db);
    if (!security)
        return error{security.code(),
                     "--shared-catalog: users and policies: " + security.err().message};
    e.security = std::move(*security);
    auto expansions = shared::pg_expansion_store::open(e.db);
    if (!expansions)
        return error{expansions.code(),
                     "--shared-catalog: expansions: " + expansions.err().message};
    e.expansions = std::move(*expansions);
    auto refresher = shared::pg_refresher::start(
        e.db, {{shared::security_channel, [s = e.security.get()] { return s->refresh(); }}});
    if (!refresher)
        return error{refresher.code(), "--shared-catalog: refresher: " + refresher.err().message};
    e.refresher = std::move(*refresher);
    shared::shared_log_config lc;
    lc.broker_id = o.node_id;
    lc.produce_window = std::chrono::milliseconds(o.produce_window_ms);
    lc.windows_in_flight = static_cast<size_t>(o.windows_in_flight);
    lc.cache_bytes = o.cache_bytes;
    lc.disk_cache_bytes = o.disk_cache_bytes;
    lc.disk_cache_dir = o.disk_cache_dir.empty() ? data_dir / "object-cache"
                                                 : std::filesystem::path(o.disk_cache_dir);
    e.object_prefix = lc.object_prefix;
    auto log = shared::shared_log::open(*e.store, e.db, lc);
    if (!log) return error{log.code(), "shared log: " + log.err().message};
    e.log = std::move(*log);
    return e;
}

result<std::unique_ptr<shared::pg_refresher>> follow_shared_expansions(
    shared_engines& e, std::function<void()> changed) {
    auto r = shared::pg_refresher::start(
        e.db, {{shared::expansions_channel,
                [s = e.expansions.get(), changed = std::move(changed)]() -> result<bool> {
                    auto moved = s->refresh();
                    if (moved && *moved) changed();
                    return moved;
                }}});
    if (!r) return error{r.code(), "--shared-catalog: expansions: " + r.err().message};
    return r;
}

result<std::unique_ptr<shared::broker_registry>> register_shared_broker(
    const shared_serve_options& o, const shared_engines& e, const std::string& host, int32_t port) {
    shared::broker_address a;
    a.broker_id = o.node_id;
    a.host = host;
    a.kafka_port = port;
    const auto lease = std::chrono::milliseconds(o.broker_lease_ms);
    // A broker restarted after kill -9 finds its id held until the old lease passes: it
    // waits that long (and a little more) rather than fail.
    const auto deadline = std::chrono::steady_clock::now() + lease + std::chrono::seconds(2);
    for (bool told = false;; told = true) {
        auto r = shared::broker_registry::register_broker(e.db, a, lease);
        if (r || r.code() != errc::in_use || std::chrono::steady_clock::now() > deadline) return r;
        if (!told) log_info("shared", "{}; waiting", r.err().message);
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
}

shared_maintenance::shared_maintenance(shared_engines& e, const shared::broker_registry& registry,
                                       shared::maintenance::settings s)
    : _engines(e),
      _registry(registry),
      _settings(std::move(s)),
      // Every 5 s, or every interval when that is shorter (a job could not run as often as
      // its interval says otherwise).
      _thread(std::min(std::chrono::milliseconds(5000), _settings.interval), [this] { pass(); }) {}

void shared_maintenance::pass() {
    if (!_registry.member()) return;  // its leases would be free to the others at once
    _settings.incarnation = _registry.incarnation();
    if (!_db) {
        auto db = shared::pg_database::connect(_engines.db);
        if (!db) {
            log_warn("shared", "background work: the shared catalog: {}", db.err().message);
            return;
        }
        _db = std::move(*db);
    }
    auto p = shared::maintenance::run_once(*_db, *_engines.store, _settings);
    if (!p) {
        log_warn("shared", "background work: {}", p.err().message);
        _db.reset();
        return;
    }
    for (const auto& j : p->jobs) {
        if (!j.ok)
            log_warn("shared", "background work: {} of {}:{} failed: {}", j.kind, j.topic_id,
                     j.partition, j.detail);
        else
            log_debug("shared", "background work: {} of {}:{}: {}", j.kind, j.topic_id, j.partition,
                      j.detail);
    }
}

std::unique_ptr<shared_maintenance> start_shared_maintenance(
    const shared_serve_options& o, shared_engines& e, const shared::broker_registry& registry,
    std::map<std::string, std::string> topic_defaults) {
    shared::maintenance::settings s;
    s.broker_id = o.node_id;
    s.incarnation = registry.incarnation();
    s.interval = std::chrono::milliseconds(o.maintenance_interval_ms);
    s.delete_grace = std::chrono::milliseconds(o.object_delete_grace_ms);
    s.object_prefix = e.object_prefix;
    s.topic_defaults = std::move(topic_defaults);
    return std::make_unique<shared_maintenance>(e, registry, std::move(s));
}

}  // namespace sluice::app

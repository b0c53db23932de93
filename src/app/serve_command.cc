#include "app/serve_command.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <fmt/format.h>
#include <pthread.h>
#include <sqlite3.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>

#include "app/broker_admin_http.h"
#include "app/duck_on_demand.h"
#include "app/metrics_endpoint.h"
#include "app/security_admin.h"
#include "app/serve_limits.h"
#include "app/serve_options.h"
#include "app/share_group_options.h"
#include "app/shared_serve.h"
#include "app/sql_bounds_options.h"
#include "app/sql_state.h"
#include "app/version_command.h"
#include "broker/broker.h"
#include "broker/broker_metrics.h"
#include "catalog/catalog.h"
#include "catalog/shm_vfs.h"
#include "common/logging.h"
#include "console/console.h"
#include "expansion/http_api.h"
#include "expansion/service.h"
#include "log/log_manager.h"
#include "net/event_loop.h"
#include "security/sasl.h"
#include "sql/duck/serving.h"
#include "sql/http/http_server.h"
#include "sql/pg/pg_server.h"

namespace sluice::app {
namespace {

// The SQL engine, DuckDB (docs/sql.md), in two steps: prepare() before the expansions
// open, since they store their targets columnar in the engine's own database
// (<data_dir>/sql-duck/sluice.duckdb, docs/expansions.md#storage), then open() once they
// have.
class sql_engine_choice {
  public:
    // listeners: whether the broker has a SQL listener (which needs the engine at once).
    sql::outcome<bool> prepare(const sql::engine_options& eo, const std::string& export_dir,
                               bool listeners) {
        std::filesystem::path exports;
        if (!export_dir.empty()) {
            std::error_code ec;
            exports = std::filesystem::weakly_canonical(std::filesystem::absolute(export_dir), ec);
            if (ec || !std::filesystem::is_directory(exports))
                return sql::query_error{
                    sql::failure::invalid_parameter,
                    fmt::format("--sql-export-dir {}: not a directory", export_dir)};
        }
        // Opened at start for the SQL listeners, else on first need (app/duck_on_demand.h).
        _duck = std::make_shared<duck_on_demand>(eo, exports);
        _targets = _duck->targets();
        _listeners = listeners;
        if (!listeners) return true;
        auto db = _duck->database("the SQL listeners");
        if (!db) return db.error();
        return true;
    }
    // Where the expansions store their targets.
    std::shared_ptr<expansion::target_backend> targets() const {
        return _targets;
    }
    // The engine the SQL listeners serve; null on DuckDB when there are none.
    sql::outcome<std::unique_ptr<sql::engine>> open(const sql::engine_options& eo) {
        if (!_listeners) return std::unique_ptr<sql::engine>();
        auto db = _duck->database("the SQL listeners");
        if (!db) return db.error();
        return sql::duck::open_serving_engine(eo, *db);
    }

  private:
    std::shared_ptr<expansion::target_backend> _targets;
    std::shared_ptr<duck_on_demand> _duck;
    bool _listeners = false;
};

// SIGTERM and SIGINT arrive as readable events on the loop, so shutdown runs on the
// loop thread like everything else.
class signal_watch : public net::io_handler {
  public:
    // Call block() before any thread starts: threads inherit the mask, so the signals
    // then reach only the signalfd.
    static sigset_t block() {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGTERM);
        sigaddset(&set, SIGINT);
        sigaddset(&set, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &set, nullptr);
        // A write to a peer that has gone answers EPIPE rather than killing the broker:
        // sendfile(2), which Fetch answers use for the log's bytes, has no MSG_NOSIGNAL
        // (a SIGPIPE once ended a broker in CI when a Kafka Streams application was
        // killed -9 while being answered).
        std::signal(SIGPIPE, SIG_IGN);
        return set;
    }
    signal_watch(net::event_loop& loop, const sigset_t& set, std::function<void(int)> fn)
        : _loop(loop), _fn(std::move(fn)) {
        _fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
        _loop.watch(_fd, EPOLLIN, this);
    }
    ~signal_watch() override {
        _loop.unwatch(_fd);
        close(_fd);
    }
    void on_io(uint32_t) override {
        signalfd_siginfo si{};
        while (read(_fd, &si, sizeof si) == sizeof si) _fn(static_cast<int>(si.ssi_signo));
    }

  private:
    net::event_loop& _loop;
    std::function<void(int)> _fn;
    int _fd = -1;
};

// The broker's view of the expansion service.
class expansion_bridge final : public broker::expansion_hooks {
  public:
    explicit expansion_bridge(expansion::service& s) : _s(s) {}
    bool expands(const std::string& topic) const override { return _s.expands(topic); }
    void on_high_watermark(const std::vector<topic_partition>& tps) override {
        _s.on_high_watermark(tps);
    }
    void when_expanded(const topic_partition& tp, offset_t last,
                       std::function<void()> fn) override {
        _s.when_expanded(tp, last, std::move(fn));
    }

  private:
    expansion::service& _s;
};

// One broker per data directory: a second one would interleave appends to the same
// segments. The lock lives as long as the process; the kernel drops it on any exit.
result<void> lock_data_dir(const std::filesystem::path& dir) {
    auto path = dir / ".lock";
    int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return {errc::io_error, "cannot open " + path.string() + ": " + std::strerror(errno)};
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        ::close(fd);
        return {errc::already_exists,
                "data dir " + dir.string() + " is in use by another sluice process"};
    }
    return {};  // fd stays open on purpose
}

// Listeners, TLS, SASL and the authorization mode, from the flags.
result<void> configure_security(const serve_options& o, broker::broker_config& cfg) {
    cfg.listeners.clear();
    if (o.listen.empty()) return {errc::invalid_argument, "--listen: at least one listener"};
    for (const auto& text : o.listen) {
        auto l = broker::parse_listener(text);
        if (!l) return {errc::invalid_argument, "--listen " + text + ": " + l.err().message};
        cfg.listeners.push_back(*l);
    }
    // --advertise HOST:PORT belongs to the PLAINTEXT listeners; PROTOCOL://HOST:PORT to
    // the listeners of that protocol.
    for (const auto& a : o.advertise) {
        auto l = broker::parse_listener(a);
        if (!l || l->address.port == 0) {
            return {errc::invalid_argument,
                    "--advertise wants [PROTOCOL://]HOST:PORT with a real port, got '" + a + "'"};
        }
        bool used = false;
        for (auto& lc : cfg.listeners) {
            if (lc.protocol != l->protocol) continue;
            lc.advertise.push_back(l->address);
            used = true;
        }
        if (!used) {
            return {errc::invalid_argument, "--advertise " + a + ": no " +
                                                std::string(broker::protocol_name(l->protocol)) +
                                                " listener"};
        }
    }
    bool tls = false, authenticates = false;
    for (const auto& lc : cfg.listeners) {
        tls = tls || lc.tls();
        authenticates = authenticates || lc.sasl();
    }
    auto& ts = cfg.tls_settings;
    ts.cert_file = o.tls_cert;
    ts.key_file = o.tls_key;
    ts.client_ca_file = o.tls_client_ca;
    using mode = net::tls_settings::client_auth_mode;
    mode http_auth = mode::none;
    for (auto [flag, text, out] :
         {std::tuple{"--tls-client-auth", &o.tls_client_auth, &ts.client_auth},
          std::tuple{"--http-tls-client-auth", &o.http_tls_client_auth, &http_auth}}) {
        if (*text == "none")
            *out = mode::none;
        else if (*text == "requested")
            *out = mode::requested;
        else if (*text == "required")
            *out = mode::required;
        else
            return {errc::invalid_argument,
                    std::string(flag) + " wants required, requested or none"};
        if (*out != mode::none && ts.client_ca_file.empty())
            return {errc::invalid_argument, std::string(flag) + " " + *text +
                                                " needs --tls-client-ca (the CA of client "
                                                "certificates)"};
    }
    if (tls && (ts.cert_file.empty() || ts.key_file.empty()))
        return {errc::invalid_argument,
                "an SSL or SASL_SSL listener needs --tls-cert and --tls-key"};
    if (ts.cert_file.empty() != ts.key_file.empty())
        return {errc::invalid_argument, "--tls-cert and --tls-key go together"};
    // A certificate serves the TLS listeners, HTTPS and the PostgreSQL wire's SSLRequest.
    if (!ts.cert_file.empty()) {
        auto mtls = net::tls_context::create_server(ts);
        if (!mtls) return mtls.err();
        cfg.ssl_listener_tls = *mtls;
        if (ts.client_auth == mode::none) {
            cfg.tls = *mtls;
        } else {
            net::tls_settings plain = ts;
            plain.client_auth = mode::none;
            auto ctx = net::tls_context::create_server(plain);
            if (!ctx) return ctx.err();
            cfg.tls = *ctx;
        }
        cfg.http_tls = http_auth == mode::none ? cfg.tls : cfg.ssl_listener_tls;
        if (http_auth != mode::none && http_auth != ts.client_auth) {
            net::tls_settings h = ts;
            h.client_auth = http_auth;
            auto ctx = net::tls_context::create_server(h);
            if (!ctx) return ctx.err();
            cfg.http_tls = *ctx;
        }
        // Mutual TLS authenticates the SSL listeners' clients, and HTTPS's.
        for (const auto& lc : cfg.listeners)
            authenticates = authenticates || (lc.protocol == broker::security_protocol::ssl &&
                                              ts.client_auth == mode::required);
        authenticates = authenticates || http_auth == mode::required;
    }
    if (http_auth != mode::none && o.http.rfind("https://", 0) != 0)
        return {errc::invalid_argument, "--http-tls-client-auth needs --http https://HOST:PORT"};
    cfg.sasl_mechanisms.clear();
    const auto known = security::supported_mechanisms();
    std::string_view list = o.sasl_mechanisms;
    while (!list.empty()) {
        auto comma = list.find(',');
        std::string m(list.substr(0, comma));
        list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
        if (m.empty()) continue;
        if (std::find(known.begin(), known.end(), m) == known.end())
            return {errc::invalid_argument, "--sasl-mechanisms: unknown mechanism '" + m +
                                                "' (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"};
        cfg.sasl_mechanisms.push_back(m);
    }
    if (cfg.sasl_mechanisms.empty() && std::any_of(cfg.listeners.begin(), cfg.listeners.end(),
                                                   [](const auto& lc) { return lc.sasl(); }))
        return {errc::invalid_argument, "--sasl-mechanisms: a SASL listener needs at least one"};
    cfg.sasl_session_lifetime_ms = o.sasl_session_lifetime_ms;
    cfg.authenticate = authenticates;
    if (o.authorization.empty()) {
        cfg.authorization =
            authenticates ? security::authz_mode::required : security::authz_mode::permissive;
    } else if (o.authorization == "required") {
        cfg.authorization = security::authz_mode::required;
    } else if (o.authorization == "permissive") {
        cfg.authorization = security::authz_mode::permissive;
    } else {
        return {errc::invalid_argument, "--authorization wants required or permissive"};
    }
    return {};
}

// Whether every fixed port is free, before the data directory is touched: a broker that
// cannot serve must leave nothing behind. Every port is tried, so that one start names
// all that are taken. A port taken between this probe and the real bind still fails
// the start, only later.
result<void> check_ports_free(const std::vector<std::pair<std::string, net::host_port>>& ports) {
    std::string taken;
    for (const auto& [flag, addr] : ports) {
        if (addr.port == 0) continue;
        auto s = net::open_listen_socket(addr, false);
        if (!s) {
            log_error("app", "{}: {}", flag, s.err().message);
            taken += (taken.empty() ? "" : ", ") + flag + " " + addr.to_string();
            continue;
        }
        ::close(s->fd);
    }
    if (taken.empty()) return {};
    return {errc::io_error,
            fmt::format("cannot listen on {}: choose other addresses with --listen, --pg and "
                        "--http, or with `make run KAFKA=127.0.0.1:19092 PG=127.0.0.1:15432 "
                        "HTTP=127.0.0.1:18080` (README.md)",
                        taken)};
}

int serve(const serve_options& o) {
    log_level lvl;
    if (!parse_log_level(o.log_level, lvl)) {
        log_error("app", "unknown log level '{}'", o.log_level);
        return 2;
    }
    set_log_level(lvl);
    log_info("app", "{} starting", version_line());
    broker::broker_config cfg;
    cfg.data_dir = o.data_dir;
    if (auto r = configure_security(o, cfg); !r) {
        log_error("app", "{}", r.err().message);
        return 2;
    }
    std::optional<net::host_port> pg_addr, http_addr;
    // --http https://HOST:PORT serves HTTPS with the TLS certificate.
    std::string http_text = o.http;
    bool https = false;
    for (std::string_view scheme : {"https://", "http://"}) {
        if (http_text.rfind(scheme, 0) == 0) {
            https = scheme == "https://";
            http_text = http_text.substr(scheme.size());
        }
    }
    if (https && !cfg.tls) {
        log_error("app", "--http https://...: needs --tls-cert and --tls-key");
        return 2;
    }
    for (auto [flag, text, out] : {std::tuple{"--pg", &o.pg, &pg_addr},
                                   std::tuple{"--http", &std::as_const(http_text), &http_addr}}) {
        if (text->empty()) continue;
        auto hp = net::parse_host_port(*text);
        if (!hp) {
            log_error("app", "{}: {}", flag, hp.err().message);
            return 2;
        }
        *out = *hp;
    }
    cfg.auto_create_topics = o.auto_create;
    if (o.default_partitions < 1 || o.default_partitions > broker::max_partitions_per_topic) {
        log_error("app", "--default-partitions must be 1..{}", broker::max_partitions_per_topic);
        return 2;
    }
    cfg.default_partitions = o.default_partitions;
    for (const auto& kv : o.topic_defaults) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) {
            log_error("app", "--topic-default wants KEY=VALUE, got '{}'", kv);
            return 2;
        }
        cfg.topic_defaults[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    // Kafka's log.cleaner.max.compaction.lag.ms: a broker-wide default, as --topic-default
    // max.compaction.lag.ms=N would set (which it overrides).
    if (o.max_compaction_lag_ms >= 0)
        cfg.topic_defaults["max.compaction.lag.ms"] = std::to_string(o.max_compaction_lag_ms);
    if (auto r = catalog::validate_topic_configs(cfg.topic_defaults); !r) {
        log_error("app", "--topic-default: {}", r.err().message);
        return 2;
    }
    if (auto r = catalog::validate_compaction_lags(cfg.topic_defaults, {}); !r) {
        log_error("app", "--topic-default / --max-compaction-lag-ms: {}", r.err().message);
        return 2;
    }
    cfg.max_open_files = o.max_open_files;
    cfg.queued_max_request_bytes = o.limits.queued_max_request_bytes;
    cfg.request_stall_timeout_ms = o.limits.request_stall_timeout_ms;
    cfg.max_in_flight_per_connection = o.limits.max_in_flight_requests_per_connection;
    cfg.max_in_flight_bytes_per_connection = o.limits.max_in_flight_bytes_per_connection;
    cfg.max_in_flight_bytes = o.limits.max_in_flight_bytes;
    cfg.fetch_session_cache_slots = o.limits.fetch_session_cache_slots;
    cfg.fetch_session_min_eviction_ms = o.limits.fetch_session_min_eviction_ms;
    cfg.connections_max_idle_ms = o.limits.connections_max_idle_ms;
    cfg.max_connections = o.limits.max_connections;
    cfg.max_connections_per_ip = o.limits.max_connections_per_ip;
    cfg.max_connections_per_ip_overrides = o.limits.max_connections_per_ip_overrides;
    if (auto r = broker::parse_ip_overrides(cfg.max_connections_per_ip_overrides); !r) {
        log_error("app", "--max-connections-per-ip-overrides: {}", r.err().message);
        return 2;
    }
    cfg.groups = o.groups;
    cfg.share_groups = o.share_groups;
    if (cfg.groups.consumer_heartbeat_interval_ms >= cfg.groups.consumer_session_timeout_ms) {
        log_error("app",
                  "--group-consumer-heartbeat-interval-ms ({}) must be below "
                  "--group-consumer-session-timeout-ms ({})",
                  cfg.groups.consumer_heartbeat_interval_ms,
                  cfg.groups.consumer_session_timeout_ms);
        return 2;
    }
    if (cfg.groups.min_session_timeout_ms > cfg.groups.max_session_timeout_ms) {
        log_error("app",
                  "--group-min-session-timeout-ms ({}) is above "
                  "--group-max-session-timeout-ms ({})",
                  cfg.groups.min_session_timeout_ms, cfg.groups.max_session_timeout_ms);
        return 2;
    }
    cfg.groups.offsets_retention_ms = o.offsets_retention_minutes * 60 * 1000;
    cfg.offsets_retention_check_interval_ms = o.offsets_retention_check_interval_ms;
    cfg.log_retention_check_interval_ms = o.log_retention_check_interval_ms;
    cfg.log_cleaner_backoff_ms = o.log_cleaner_backoff_ms;
    cfg.transaction_max_timeout_ms = o.transaction_max_timeout_ms;
    cfg.transaction_abort_check_interval_ms = o.transaction_abort_check_interval_ms;
    cfg.transactional_id_expiration_ms = o.transactional_id_expiration_ms;
    cfg.transaction_version = o.transaction_version;

    // Before SQLite's first use (the catalog's): its allocator then keeps no statistics,
    // which otherwise cost a global mutex on every allocation of every connection.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    // After it (this initializes SQLite) and before any connection opens: WAL indexes
    // allocated on disk before they are used (catalog/shm_vfs.h).
    if (!catalog::install_shm_vfs())
        log_warn("app", "SQLite's default VFS cannot be wrapped: WAL indexes are not preallocated");
    sigset_t signals_set = signal_watch::block();
    // 200,000 partitions need more descriptors than the usual soft limit of 1024 leaves
    // for sockets once the descriptor cache is full; take what the hard limit allows.
    raise_fd_limit();
    // Request and response buffers up to 32 MiB come from the heap and are reused
    // rather than mapped and faulted in afresh each time: on virtual machines the page
    // faults cost more than the copies (bench: consume 176 -> 770 MB/s client side).
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, 256 * 1024 * 1024);
    std::vector<std::pair<std::string, net::host_port>> ports;
    for (const auto& l : cfg.listeners) ports.emplace_back("--listen", l.address);
    if (pg_addr) ports.emplace_back("--pg", *pg_addr);
    if (http_addr) ports.emplace_back("--http", *http_addr);
    if (auto r = check_ports_free(ports); !r) {
        log_error("app", "{}", r.err().message);
        return 1;
    }
    std::error_code ec;
    std::filesystem::create_directories(cfg.data_dir, ec);
    if (ec) {
        log_error("app", "cannot create data dir {}: {}", cfg.data_dir.string(), ec.message());
        return 1;
    }
    if (auto r = lock_data_dir(cfg.data_dir); !r) {
        log_error("app", "{}", r.err().message);
        return 1;
    }
    // A WAL index opened on a full disk takes its room from the space reserve.
    static std::filesystem::path reserve_logs_dir;
    reserve_logs_dir = cfg.data_dir / "logs";
    catalog::set_shm_no_space_hook(
        [](void* dir) {
            return log::log_manager::release_spare_space_in(
                *static_cast<std::filesystem::path*>(dir));
        },
        &reserve_logs_dir);
    auto cat = catalog::catalog::open(cfg.data_dir / "catalog.db");
    if (!cat) {
        log_error("app", "catalog: {}", cat.err().message);
        return 1;
    }
    log::log_manager::options log_opts{cfg.data_dir, cfg.max_open_files,
                                       o.log_cleaner_io_bytes_per_sec};
    log_opts.flush_pass_interval = std::chrono::microseconds(o.flush_pass_interval_us);
    log_opts.producer_id_expiration_ms = o.producer_id_expiration_ms;
    log::log_manager logs(log_opts);
    net::event_loop loop;
    // Shared mode: the data, topics, offsets and groups are the shared engines'; the data
    // directory keeps the local catalog's users and policies only.
    std::optional<shared_engines> engines;
    if (o.shared.enabled()) {
        auto e = open_shared_engines(o.shared, cfg.data_dir);
        if (!e) {
            log_error("app", "shared mode: {}", e.err().message);
            return 1;
        }
        engines = std::move(*e);
    }
    broker::broker b(cfg, loop, **cat, logs,
                     engines ? engines->stores(o.shared.node_id)
                             : broker::local_metadata_stores(**cat, cfg.data_dir / "catalog.db"));
    if (engines) b.set_shared(engines->mode(o.shared.node_id, std::chrono::milliseconds(500)));
    // Topics are declared from the catalog before the logs open, so that the journal
    // replays into them (log_manager::open).
    if (auto r = b.load(); !r) {
        log_error("app", "{}", r.err().message);
        return 1;
    }
    if (auto r = logs.open(); !r) {
        log_error("app", "storage: {}", r.err().message);
        return 1;
    }
    // SQL: its own threads (one per connection), over the same logs and catalog.
    sql_state state(b);
    if (engines) {
        auto offsets = open_shared_offsets(*engines);
        if (!offsets) {
            log_error("app", "shared mode: {}", offsets.err().message);
            logs.close();
            return 1;
        }
        state.read_offsets_from(std::move(*offsets));
    }
    sql::engine_options eo;
    eo.data_dir = cfg.data_dir;
    eo.defaults.timeout = std::chrono::milliseconds(o.sql_timeout_ms);
    eo.defaults.max_rows = o.sql_max_rows;
    eo.bounds = o.sql_bounds;
    eo.logs = &logs;
    eo.catalog = cat->get();
    eo.state = &state;
    eo.gate = &b.access();
    // Shared mode: topics, users and policies of the shared catalog; partitions through
    // the partition-log interface of the shared log.
    std::optional<shared_sql_partitions> shared_partitions;
    if (engines) {
        shared_partitions.emplace(*engines);
        eo.topics = engines->topics.get();
        eo.security = engines->security.get();
        eo.partitions = &*shared_partitions;
    }
    sql_engine_choice sql_engine;
    if (auto r = sql_engine.prepare(eo, o.sql_export_dir, pg_addr || http_addr); !r) {
        log_error("app", "sql: {}", r.error().message);
        logs.close();
        return 1;
    }
    // Expansions catch up from the log before the broker serves anyone.
    // Shared mode: the definitions are the shared catalog's, the events the shared log's;
    // each broker expands them into its own copy of the targets (docs/expansions.md).
    expansion::service_options xo{cat->get(), cat->get(), &logs, sql_engine.targets()};
    if (engines) {
        xo.topics = engines->topics.get();
        xo.expansions = engines->expansions.get();
        xo.partitions = &*shared_partitions;
    }
    auto expansions = expansion::service::open(std::move(xo));
    if (!expansions) {
        log_error("app", "expansions: {}", expansions.err().message);
        logs.close();
        return 1;
    }
    expansion_bridge bridge(**expansions);
    b.set_expansions(&bridge);
    (*expansions)->start();
    std::unique_ptr<shared::pg_refresher> expansion_refresher;
    if (engines) {
        auto r = follow_shared_expansions(*engines,
                                          [s = expansions->get()] { s->definitions_changed(); });
        if (!r) {
            log_error("app", "shared mode: {}", r.err().message);
            logs.close();
            return 1;
        }
        expansion_refresher = std::move(*r);
    }
    auto bound = b.start();
    if (!bound) {
        log_error("app", "{}", bound.err().message);
        logs.close();
        return 1;
    }
    // Shared mode: this broker joins the live ones with its first listener's address.
    std::unique_ptr<shared::broker_registry> registry;
    std::unique_ptr<shared_maintenance> maintenance;
    if (engines) {
        const auto& self = bound->front().advertise.front();
        auto r = register_shared_broker(o.shared, *engines, self.host, self.port);
        if (!r) {
            log_error("app", "shared mode: broker id {}: {}", o.shared.node_id, r.err().message);
            logs.close();
            return 1;
        }
        registry = std::move(*r);
        b.join_cluster(*registry);
        maintenance = start_shared_maintenance(o.shared, *engines, *registry, cfg.topic_defaults);
        log_info("app", "shared mode: broker {} over {} and the shared catalog", o.shared.node_id,
                 engines->where);
    }
    // One line per listener on stdout: tests and scripts read the bound ports from them.
    std::string where;
    for (const auto& l : *bound) {
        std::printf("listening kafka %s\n", l.to_string().c_str());
        broker::count_connection(l, 0);  // its gauge shows from the first scrape
        where += (where.empty() ? "" : ", ") + l.to_string();
    }
    std::fflush(stdout);
    log_info("app", "sluice serving {} topics from {} on {}; authorization {}",
             b.topics().all().size(), cfg.data_dir.string(), where,
             cfg.authorization == security::authz_mode::required ? "required" : "permissive");

    eo.guard = expansions->get();
    auto eng = sql_engine.open(eo);
    if (!eng) {
        log_error("app", "sql: {}", eng.error().message);
        logs.close();
        return 1;
    }
    readiness ready;
    ready.set_not_ready("starting the SQL listeners");
    broker_collectors collectors(b, expansions->get(), o.metrics.max_partition_series);
    std::unique_ptr<sql::pg_server> pg;
    std::unique_ptr<sql::http_server> http;
    if (pg_addr) {
        sql::pg_options po;
        po.max_connections = o.sql_max_connections;
        po.max_starting = o.limits.pg_max_starting_connections;
        po.startup_timeout = std::chrono::milliseconds(o.limits.pg_startup_timeout_ms);
        po.idle_session_timeout = std::chrono::milliseconds(o.limits.pg_idle_session_timeout_ms);
        po.tls = cfg.tls;
        po.gate = &b.access();
        auto s = sql::pg_server::start(*pg_addr, **eng, po);
        if (!s) {
            log_error("app", "--pg: {}", s.err().message);
            logs.close();
            return 1;
        }
        pg = std::move(*s);
        std::printf("listening pg %s\n", pg->address().to_string().c_str());
    }
    if (http_addr) {
        sql::http_options ho;
        ho.max_connections = o.sql_max_connections;
        ho.header_timeout = std::chrono::milliseconds(o.limits.http_header_timeout_ms);
        if (https) ho.tls = cfg.http_tls;
        ho.gate = &b.access();
        // Orchestrators probe health without credentials; /metrics too when asked.
        ho.anonymous_paths.insert(ho.anonymous_paths.end(), {"/healthz", "/readyz"});
        // The console's files hold no data: its pages log in through the API.
        ho.anonymous_paths.insert(ho.anonymous_paths.end(), {"/ui", "/ui/*"});
        if (o.metrics.anonymous) ho.anonymous_paths.emplace_back("/metrics");
        auto s = sql::http_server::start(*http_addr, **eng, ho);
        if (!s) {
            log_error("app", "--http: {}", s.err().message);
            if (pg) pg->stop();
            logs.close();
            return 1;
        }
        http = std::move(*s);
        expansion::add_http_routes(*http, **expansions);
        add_security_routes(
            *http, engines ? static_cast<catalog::security_store&>(*engines->security) : **cat);
        add_metrics_routes(*http, ready, o.metrics);
        add_broker_admin_routes(*http, b);
        console::add_console_routes(*http);
        std::printf("listening http %s%s\n", https ? "https://" : "",
                    http->address().to_string().c_str());
    }
    std::fflush(stdout);
    // Storage recovered, expansions caught up, every listener bound.
    ready.set_ready();

    signal_watch signals(loop, signals_set, [&](int sig) {
        if (sig == SIGHUP) {
            b.reload_tls();
            return;
        }
        ready.set_not_ready("shutting down");
        log_info("app", "received {}; shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        b.shutdown([&] { loop.stop(); });
    });
    loop.run();
    // Queries end before the logs they read close.
    if (http) http->stop();
    if (pg) pg->stop();
    expansion_refresher.reset();
    (*expansions)->stop();
    maintenance.reset();
    if (registry) {
        registry->stop_renewing();
        if (auto r = registry->release(); !r)
            log_warn("app", "shared mode: the lease was not released: {}", r.err().message);
    }
    logs.close();
    log_info("app", "stopped cleanly");
    return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
    auto o = std::make_shared<serve_options>();
    auto* cmd = app.add_subcommand("serve", "Run a broker");
    add_serve_flags(*cmd, *o);
    cmd->callback([o, &exit_code] { exit_code = serve(*o); });
}

}  // namespace sluice::app

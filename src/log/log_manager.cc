#include "log/log_manager.h"

#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "common/clock.h"
#include "common/logging.h"

namespace sluice::log {

namespace {

constexpr const char* clean_marker_name = ".clean-shutdown";
constexpr const char* trash_dir_name = ".trash";
// Marker contents: a fixed line naming the format, so a stray file is not mistaken for
// one (docs/formats/data-dir.md).
constexpr std::string_view clean_marker_text = "sluice clean shutdown v1\n";
constexpr const char* boot_id_name = ".boot-id";
constexpr const char* journal_dir_name = ".journal";
constexpr const char* reserve_name = ".space-reserve";
// Threads besides the flusher that fsync a pass's segments; with the flusher, eight
// partitions' fdatasyncs go out at once.
constexpr size_t syncer_threads = 7;

// "sluice boot-id v1\n<the kernel's boot id>\n", or "" when the kernel does not tell. The
// kernel draws a new boot id at every boot, so a file holding the current one means the
// previous broker ran in this boot: if it did not stop cleanly, only the process crashed
// and the page cache kept everything it wrote (docs/formats/data-dir.md, "Boot id").
std::string boot_id_text() {
    auto f = open_file("/proc/sys/kernel/random/boot_id", O_RDONLY);
    if (!f) return {};
    uint8_t buf[64];  // a UUID: 36 characters and a newline
    auto n = read_at(**f, buf, sizeof buf, 0);
    if (!n) return {};
    std::string id(reinterpret_cast<const char*>(buf), *n);
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id.empty() ? std::string() : fmt::format("sluice boot-id v1\n{}\n", id);
}

// "<topic>-<partition>" → topic, partition; false for other names.
bool parse_partition_dir(const std::string& name, std::string& topic, int32_t& partition) {
    auto dash = name.rfind('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == name.size()) return false;
    auto [p, ec] = std::from_chars(name.data() + dash + 1, name.data() + name.size(), partition);
    if (ec != std::errc() || p != name.data() + name.size() || partition < 0) return false;
    topic = name.substr(0, dash);
    return true;
}

}  // namespace

log_manager::log_manager(options opts)
    : _opts(std::move(opts)), _ctx(_opts.data_dir / "logs", _opts.max_open_files) {
    _ctx.reporter = &_reporter;
    _ctx.dirty = this;
    _ctx.producer_id_expiration_ms = _opts.producer_id_expiration_ms;
    _ctx.load_retry_interval = _opts.load_retry_interval;
}

log_manager::~log_manager() {
    if (!_opened || _closed) return;
    // close() allocates and formats as it goes; whatever fails there must not leave a
    // destructor (std::terminate). The next start recovers what was not saved.
    try {
        close();
    } catch (const std::exception& e) {
        log_error("storage", "closing the logs failed: {}", e.what());
    } catch (...) {
        log_error("storage", "closing the logs failed");
    }
}

int32_t log_manager::index_interval_for(const std::string& dir_name) {
    std::string topic;
    int32_t partition;
    if (parse_partition_dir(dir_name, topic, partition)) {
        std::shared_lock lk(_topics_mu);
        if (auto it = _topics.find(topic); it != _topics.end())
            return it->second->config().index_interval_bytes;
    }
    return log_config{}.index_interval_bytes;
}

result<void> log_manager::recover_all(open_summary& sum, bool same_boot) {
    std::error_code ec;
    for (fs::directory_iterator it(_ctx.logs_dir, ec), end; !ec && it != end; it.increment(ec)) {
        std::string name = it->path().filename().string();
        std::string topic;
        int32_t partition;
        if (!it->is_directory() || !parse_partition_dir(name, topic, partition)) continue;
        ++sum.partitions_scanned;
        auto r = recover_partition(it->path(), index_interval_for(name), _ctx.files, same_boot,
                                   _reporter);
        _ctx.files.clear();
        if (!r) {
            ++sum.partitions_failed;
            // Its first load runs the recovery again (a full disk frees up, say), and until
            // one succeeds it is out of service (partition_log::ensure_loaded).
            if (partition_log* p = get(topic, partition)) {
                p->_recover_first = true;
                std::lock_guard lk(_ctx.retry_mu);
                _ctx.load_retries.insert({topic, partition});
            }
            log_error("storage", "{}: recovery failed: {}; out of service, retried", name,
                      r.err().message);
            continue;
        }
        if (r->repaired()) {
            ++sum.partitions_repaired;
            // Rebuilt indexes are what every unclean shutdown leaves: the summary line of
            // open() counts them. Lost or unsaved data gets a line of its own.
            log_at(r->worth_warning() ? log_level::warn : log_level::debug, "storage",
                   "{}: recovered: {}", name, r->describe());
        }
    }
    if (ec) return io_error_from_errno("list", _ctx.logs_dir, ec.value());
    return {};
}

result<void> log_manager::replay_journal(open_summary& sum) {
    const fs::path dir = _ctx.logs_dir / journal_dir_name;
    std::set<partition_log*> replayed;
    std::set<topic_partition> stopped;  // no later entry of theirs applies
    bool all_applied = true;
    auto scanned = journal::scan(dir, [&](const journal_entry& e) {
        ++sum.journal_entries;
        topic_partition tp{std::string(e.topic), e.partition};
        if (stopped.count(tp)) return true;
        auto t = topic(tp.topic);
        partition_log* p = t && t->config().id == e.id ? partition(*t, e.partition) : nullptr;
        if (!p) {
            ++sum.journal_entries_stale;
            return true;
        }
        const auto stop = [&](const std::string& why, bool lost) {
            const auto line = fmt::format("{}-{}: journal replay stops at offset {}: {}", tp.topic,
                                          tp.partition, e.base_offset, why);
            if (lost) {
                log_error("storage", "{}", line);
                all_applied = false;
            } else {
                log_warn("storage", "{}", line);
            }
            stopped.insert(tp);
            return true;
        };
        // On a full disk the space reserve may take what an OS crash lost.
        auto added = with_spare_space(
            [&] { return p->append_replayed(e.data, e.base_offset, e.append_time); });
        // Acknowledged records the partition lacks stay in the journal for the next start;
        // appends meanwhile would take their offsets, so the partition stops serving.
        if (!added && is_no_space(added.err())) {
            std::lock_guard lk(p->_mu);
            p->fail(added.err());
            p->_st->load_failed = false;  // not retried: a restart replays the journal
        }
        // A gap: records between the log end and the entry were in an append whose
        // partition fsync had not finished, so neither they nor this entry were acknowledged.
        if (!added) return stop(added.err().message, added.code() != errc::out_of_range);
        if (*added == 0) return true;  // the partition holds it (mostly so)
        ++sum.journal_entries_replayed;
        replayed.insert(p);
        return true;
    });
    if (!scanned) return scanned.err();
    if (!scanned->stop.empty())
        log_info("storage", "journal: read {} entries from {} files, up to: {}", scanned->entries,
                 scanned->files, scanned->stop);
    for (auto* p : replayed) {
        if (auto r = p->sync_files(); !r) all_applied = false;
    }
    sum.journal_partitions_replayed = replayed.size();
    // Records got back lose nothing: INFO (replay stops that lost some are ERROR above).
    if (sum.journal_entries_replayed > 0 || sum.journal_entries_stale > 0)
        log_info("storage",
                 "journal: {} entries replayed into {} partitions; {} entries of deleted topics "
                 "dropped",
                 sum.journal_entries_replayed, replayed.size(), sum.journal_entries_stale);
    // Everything the files held is in the partitions now, durably. When some partition
    // could not take its entries they stay for the next start; new files continue the
    // sequence after them.
    if (all_applied) {
        if (auto r = journal::remove_all(dir); !r) return r;
    } else {
        log_error("storage", "journal: keeping {} for the next start", dir.string());
    }
    _journal = std::make_unique<journal>(journal::options{dir, _opts.journal_file_bytes},
                                         scanned->found_any ? scanned->last_seq + 1 : 0);
    if (_opts.journal_max_append > 0) {
        _ctx.shared_journal = _journal.get();
        _ctx.journal_max_append = _opts.journal_max_append;
    }
    return {};
}

result<log_manager::open_summary> log_manager::open() {
    open_summary sum;
    std::error_code ec;
    bool fresh = fs::create_directories(_ctx.logs_dir, ec);
    if (ec) return io_error_from_errno("mkdir", _ctx.logs_dir, ec.value());
    if (fresh) {
        if (auto r = sync_dir(_opts.data_dir); !r) return r.err();
    }
    // Leftovers of a remove_topic interrupted by a crash.
    fs::remove_all(_ctx.logs_dir / trash_dir_name, ec);
    if (ec) log_warn("storage", "could not empty the trash: {}", ec.message());

    const std::string boot = boot_id_text();
    if (!boot.empty()) {
        auto prev = read_whole_file(_ctx.logs_dir / boot_id_name);
        sum.same_boot = prev && std::string_view(reinterpret_cast<const char*>(prev->data()),
                                                 prev->size()) == boot;
    }

    const fs::path marker = _ctx.logs_dir / clean_marker_name;
    auto text = read_whole_file(marker);
    if (text) {
        if (std::string_view(reinterpret_cast<const char*>(text->data()), text->size()) !=
            clean_marker_text)
            log_warn("storage", "{} has unexpected contents; trusting it", marker.string());
        // The marker must be gone for good before anything is appended, or a crash
        // later would be mistaken for a clean shutdown.
        fs::remove(marker, ec);
        if (ec) return io_error_from_errno("remove", marker, ec.value());
        if (auto r = sync_dir(_ctx.logs_dir); !r) return r.err();
        sum.clean_shutdown = true;
    } else if (text.code() != errc::not_found) {
        return text.err();
    } else if (fresh) {
        sum.clean_shutdown = true;
        sum.fresh = true;
    } else {
        log_info("storage", "no clean-shutdown marker in {}: recovering every partition ({})",
                 _ctx.logs_dir.string(),
                 sum.same_boot ? "the previous run crashed in this boot of the OS"
                               : "the OS may have crashed too");
        _ctx.same_boot = sum.same_boot;
        if (auto r = recover_all(sum, sum.same_boot); !r) return r.err();
        sum.bytes_truncated = _reporter.bytes_truncated.load();
        sum.indexes_rebuilt = _reporter.indexes_rebuilt.load();
        sum.corruptions = _reporter.corruptions.load();
        sum.append_time_estimates = _reporter.append_time_estimates.load();
    }
    // Not fsynced: a lost or torn write reads as another boot, the careful assumption.
    if (!boot.empty() && !sum.same_boot) {
        auto b = bytes(boot.begin(), boot.end());
        if (auto r = write_whole_file(_ctx.logs_dir / boot_id_name, b); !r)
            log_warn("storage", "{}", r.err().message);
    }
    if (auto r = replay_journal(sum); !r) return r.err();
    _opened = true;
    {
        std::lock_guard ret(_retention_mu);
        _retention_on = true;
    }
    _syncers = std::make_unique<worker_group>(syncer_threads);
    _flusher = std::thread([this] { flusher_loop(); });
    (void)refill_spare_space();
    log_info("storage",
             "logs opened at {}: {}, {} partitions recovered, {} repaired, {} failed, "
             "{} bytes truncated, {} indexes rebuilt",
             _ctx.logs_dir.string(),
             sum.fresh            ? "a new data directory"
             : sum.clean_shutdown ? "clean shutdown"
                                  : "unclean shutdown",
             sum.partitions_scanned, sum.partitions_repaired, sum.partitions_failed,
             sum.bytes_truncated, sum.indexes_rebuilt);
    return sum;
}

size_t log_manager::retry_failed_loads() {
    std::vector<topic_partition> due;
    {
        std::lock_guard lk(_ctx.retry_mu);
        due.assign(_ctx.load_retries.begin(), _ctx.load_retries.end());
    }
    size_t back = 0;
    for (const auto& tp : due) {
        partition_log* p = get(tp.topic, tp.partition);
        if (p == nullptr) {  // the topic was deleted (or shrank: it cannot)
            std::lock_guard lk(_ctx.retry_mu);
            _ctx.load_retries.erase(tp);
            continue;
        }
        if (p->available()) ++back;  // not before its retry time (ensure_loaded)
    }
    return back;
}

bool log_manager::refill_spare_space() {
    const fs::path p = _ctx.logs_dir / reserve_name;
    std::error_code ec;
    if (static_cast<int64_t>(fs::file_size(p, ec)) == reserve_bytes && !ec) return true;
    auto f = open_file(p, O_WRONLY | O_CREAT, 0644);
    if (!f) return false;
    // Allocated, not merely sized: a sparse file would free nothing when deleted.
    const int rc = ::posix_fallocate((*f)->fd(), 0, reserve_bytes);
    if (rc == 0) {
        log_info("storage", "space reserve of {} bytes in place ({})", reserve_bytes, p.string());
        return true;
    }
    // A part of it would take the room producers need now; it is made whole later.
    fs::remove(p, ec);
    log_debug("storage", "cannot make the space reserve {}: {}", p.string(), std::strerror(rc));
    return false;
}

bool log_manager::release_spare_space() {
    return release_spare_space_in(_ctx.logs_dir);
}

bool log_manager::release_spare_space_in(const fs::path& logs_dir) {
    const fs::path p = logs_dir / reserve_name;
    std::error_code ec;
    const auto size = fs::file_size(p, ec);
    if (ec || size == 0 || !fs::remove(p, ec)) return false;
    log_warn("storage", "disk full: released the space reserve ({} bytes) for a write that "
             "frees space; it is made again once there is room", size);
    return true;
}

void log_manager::add_topic(const std::string& topic, int32_t partitions, const log_config& cfg) {
    std::unique_lock lk(_topics_mu);
    auto& t = _topics[topic];
    if (!t)
        t = std::make_unique<topic_state>(topic, cfg);
    else
        t->set_config(cfg);
    while (static_cast<int32_t>(t->partitions.size()) < partitions)
        t->partitions.emplace_back(t.get(), static_cast<int32_t>(t->partitions.size()), &_ctx);
}

partition_log* log_manager::get(const std::string& topic, int32_t partition) {
    std::shared_lock lk(_topics_mu);
    auto it = _topics.find(topic);
    if (it == _topics.end() || partition < 0 ||
        partition >= static_cast<int32_t>(it->second->partitions.size()))
        return nullptr;
    return &it->second->partitions[static_cast<size_t>(partition)];
}

std::shared_ptr<topic_state> log_manager::topic(const std::string& name) {
    std::shared_lock lk(_topics_mu);
    auto it = _topics.find(name);
    return it == _topics.end() ? nullptr : it->second;
}

partition_log* log_manager::partition(topic_state& t, int32_t partition) {
    std::shared_lock lk(_topics_mu);  // add_topic grows the deque under the lock
    if (partition < 0 || partition >= static_cast<int32_t>(t.partitions.size())) return nullptr;
    return &t.partitions[static_cast<size_t>(partition)];
}

result<void> log_manager::remove_topic(const std::string& topic) {
    std::shared_ptr<topic_state> victim;
    {
        std::lock_guard pass(_pass_mu);
        {
            std::unique_lock lk(_topics_mu);
            auto it = _topics.find(topic);
            if (it == _topics.end()) return {errc::not_found, "unknown topic " + topic};
            victim = std::move(it->second);
            _topics.erase(it);
        }
        std::lock_guard q(_q_mu);
        std::erase_if(_dirty, [&](partition_log* p) { return p->topic() == victim.get(); });
        std::erase_if(_waiters, [&](waiter& w) {
            if (w.log->topic() != victim.get()) return false;
            _ready.emplace_back(std::move(w.done),
                                result<void>(errc::not_found, "topic " + topic + " was deleted"));
            return true;
        });
        _q_cv.notify_one();
    }
    {
        _clean_cancel.fetch_add(1);          // a compaction pass in the topic stops early
        std::lock_guard ret(_retention_mu);  // no retention pass is inside the topic
        _clean_cancel.fetch_sub(1);
        // Readers that still hold the topic (SQL scans) get not_found from here on.
        victim->removed.store(true);
        for (auto& p : victim->partitions) p.unload();
    }

    const fs::path trash = _ctx.logs_dir / trash_dir_name;
    std::error_code ec;
    fs::create_directories(trash, ec);
    if (ec) return io_error_from_errno("mkdir", trash, ec.value());
    const auto stamp = now_ms();
    std::vector<fs::path> moved;
    for (size_t i = 0; i < victim->partitions.size(); ++i) {
        const auto name = fmt::format("{}-{}", topic, i);
        const fs::path src = _ctx.logs_dir / name;
        if (!fs::exists(src, ec)) continue;
        // Renaming first makes the deletion atomic per partition: a crash leaves either
        // the whole directory or nothing under logs/, and open() empties the trash.
        fs::path dst = trash / fmt::format("{}.{}", name, stamp);
        fs::rename(src, dst, ec);
        if (ec) return io_error_from_errno("rename", src, ec.value());
        moved.push_back(std::move(dst));
    }
    if (auto r = sync_dir(_ctx.logs_dir); !r) return r;
    for (const auto& d : moved) {
        fs::remove_all(d, ec);
        if (ec) log_warn("storage", "could not remove {}: {}", d.string(), ec.message());
    }
    log_info("storage", "deleted topic {} ({} partition directories)", topic, moved.size());
    return {};
}

void log_manager::each_topic_for_background_work(
    const std::function<bool(const std::string&, const log_config&,
                             const std::vector<partition_log*>&)>& fn) {
    std::vector<std::string> names;
    {
        std::shared_lock lk(_topics_mu);
        for (const auto& [name, t] : _topics) names.push_back(name);
    }
    for (const auto& name : names) {
        // Per topic, so remove_topic waits for at most one topic's work.
        std::lock_guard ret(_retention_mu);
        if (!_retention_on) break;
        log_config cfg;
        std::vector<partition_log*> parts;
        {
            std::shared_lock lk(_topics_mu);
            auto it = _topics.find(name);
            if (it == _topics.end()) continue;
            cfg = it->second->config();
            for (auto& p : it->second->partitions) parts.push_back(&p);
        }
        if (!fn(name, cfg, parts)) break;
    }
}

log_manager::retention_stats log_manager::enforce_retention(timestamp_ms now) {
    retention_stats stats;
    (void)refill_spare_space();  // space freed since (by hand, or by the last pass)
    each_topic_for_background_work(
        [&](const std::string&, const log_config& cfg, const std::vector<partition_log*>& parts) {
            if (!cfg.delete_enabled || (cfg.retention_ms < 0 && cfg.retention_bytes < 0))
                return true;
            for (auto* p : parts) retain(*p, cfg, now, stats);
            return true;
        });
    return stats;
}

log_manager::compaction_stats log_manager::enforce_compaction(timestamp_ms now) {
    compaction_stats stats;
    io_throttle io(_opts.cleaner_io_bytes_per_sec, &_clean_cancel);
    each_topic_for_background_work([&](const std::string& name, const log_config& cfg,
                                       const std::vector<partition_log*>& parts) {
        if (!cfg.compact) return true;
        for (auto* p : parts) {
            if (io.cancelled()) return false;
            if (p->loaded() ? p->failure().has_value() : !p->compaction_candidate()) continue;
            auto r = p->clean(cfg, now, io);
            if (!r && r.code() == errc::shutting_down) return false;  // old segments stay
            if (!r) {
                ++stats.partitions_failed;
                log_warn("cleaner", "{}-{}: {}", name, p->partition(), r.err().message);
                continue;
            }
            if (!r->cleaned) continue;
            ++stats.partitions_cleaned;
            stats.segments_rewritten += r->segments_rewritten;
            stats.records_removed += r->records_removed;
            stats.bytes_read += r->bytes_read;
            stats.bytes_written += r->bytes_written;
            stats.bytes_reclaimed += r->bytes_reclaimed;
        }
        return true;
    });
    return stats;
}

void log_manager::retain(partition_log& p, const log_config& cfg, timestamp_ms now,
                         retention_stats& stats) {
    if (!p.loaded()) {
        if (!p.retention_candidate(cfg, now)) return;
        ++stats.partitions_loaded;
    } else if (p.failure()) {
        return;  // out of service (logged when it failed); a failed load is retried
    }
    // The log-start-offset file comes before the segments go: on a full disk it takes
    // the space reserve, and the deleted segments give the room back.
    auto r = with_spare_space([&] { return p.apply_retention(cfg, now); });
    if (!r) {
        ++stats.partitions_failed;
        log_warn("retention", "{}-{}: {}", p.topic()->name, p.partition(), r.err().message);
        return;
    }
    if (r->segments == 0) return;
    (void)refill_spare_space();
    ++stats.partitions_touched;
    stats.segments_deleted += r->segments;
    stats.bytes_deleted += r->bytes;
}

void log_manager::enqueue_dirty(partition_log* p) {
    std::lock_guard lk(_q_mu);
    _dirty.push_back(p);
    _q_cv.notify_one();
}

void log_manager::when_durable(partition_log* log, offset_t last_offset,
                               std::function<void(result<void>)> done) {
    // Read before taking _q_mu: appends hold a partition lock while taking _q_mu.
    const offset_t end = log->log_end_offset();
    std::unique_lock lk(_q_mu);
    if (!_opened || _stopping) {
        lk.unlock();
        done(result<void>(errc::shutting_down, "the log manager is closed"));
        return;
    }
    if (last_offset >= end) {
        _ready.emplace_back(std::move(done),
                            result<void>(errc::invalid_argument,
                                         fmt::format("offset {} was never appended", last_offset)));
    } else {
        _waiters.push_back({log, last_offset, std::move(done)});
        // Makes sure a pass looks at the partition even if an earlier pass took it.
        if (!log->_queued.exchange(true)) _dirty.push_back(log);
    }
    _q_cv.notify_one();
}

void log_manager::set_high_watermark_listener(
    std::function<void(const std::vector<topic_partition>&)> fn) {
    std::lock_guard lk(_q_mu);
    _listener = std::move(fn);
}

void log_manager::set_flush_paused(bool paused) {
    std::lock_guard lk(_q_mu);
    _paused = paused;
    _q_cv.notify_one();
}

uint64_t log_manager::flush_passes() const {
    std::lock_guard lk(_q_mu);
    return _passes;
}

void log_manager::flush_pass(std::vector<partition_log*>& dirty, std::vector<waiter>& waiters,
                             ready_list& ready, std::vector<waiter>& unresolved,
                             std::vector<topic_partition>& advanced,
                             std::vector<writeback>& writebacks) {
    std::lock_guard pass(_pass_mu);
    // Cleared before planning: an append racing with this pass re-queues the partition.
    for (auto* p : dirty) p->_queued.store(false);
    std::vector<std::pair<partition_log*, partition_log::sync_plan>> plans;
    plans.reserve(dirty.size());
    for (auto* p : dirty) {
        auto plan = p->plan_sync(false);
        if (plan && *plan) plans.emplace_back(p, std::move(**plan));
    }
    // One fdatasync covers the journal entries of every plan: each was written before its
    // partition's plan was taken. If it fails, the plans fsync their own files.
    bool journal_synced = false;
    if (_journal) {
        auto sealed = _journal->sync();
        journal_synced = sealed.ok();
        if (sealed) {
            for (auto& f : *sealed) _checkpoints.push_back({std::move(f)});
        }
    }
    // Plans that fsync their segment (appends the journal did not take) run side by
    // side: one after another, each fdatasync waits for its data, inode write and cache
    // flush before the next starts; issued together, they overlap (a fifth more
    // flat-out produce over 8 partitions, docs/benchmarks-history.md).
    std::vector<std::optional<result<bool>>> done(plans.size());
    std::vector<size_t> fsyncing;
    for (size_t i = 0; i < plans.size(); ++i)
        if (plans[i].second.files || !journal_synced) fsyncing.push_back(i);
    _syncers->run(fsyncing.size(), [&](size_t k) {
        auto& [p, plan] = plans[fsyncing[k]];
        done[fsyncing[k]] = p->finish_sync(plan, journal_synced);
    });
    for (size_t i = 0; i < plans.size(); ++i) {
        auto& [p, plan] = plans[i];
        auto r = done[i] ? std::move(*done[i]) : p->finish_sync(plan, journal_synced);
        if (r && *r) advanced.push_back(p->id());
        if (r && journal_synced && !plan.files) {
            if (auto range = p->take_writeback(plan))
                writebacks.push_back({std::move(plan.data), *range});
        }
    }
    for (auto& w : waiters) {
        if (w.log->_durable.load() > w.last_offset) {
            ready.emplace_back(std::move(w.done), result<void>());
        } else if (auto f = w.log->failure()) {
            ready.emplace_back(std::move(w.done), result<void>(*f));
        } else {
            unresolved.push_back(std::move(w));
        }
    }
}

void log_manager::checkpoint_step() {
    std::lock_guard pass(_pass_mu);
    // One partition between passes keeps the wait it adds to the next pass short; a
    // backlog of files (many partitions, or a burst) takes whole files.
    size_t budget = _checkpoints.size() > 2 ? SIZE_MAX : 1;
    while (budget > 0 && !_checkpoints.empty()) {
        auto& c = _checkpoints.front();
        const auto& parts = c.file.partitions;
        for (; budget > 0 && c.next < parts.size(); --budget) {
            const auto& tp = parts[c.next++];
            // Deleted since (its entries can no longer apply), or never loaded again.
            partition_log* p = get(tp.topic, tp.partition);
            if (p == nullptr || !p->loaded()) continue;
            if (auto r = p->sync_files(); !r) c.failed = true;
        }
        if (c.next < parts.size()) break;
        if (c.failed)
            log_error("storage", "journal: keeping {}: a partition it holds failed its fsync",
                      c.file.path.string());
        else
            _journal->recycle(c.file.path);
        _checkpoints.pop_front();
    }
}

void log_manager::flusher_loop() {
    using clock = std::chrono::steady_clock;
    std::unique_lock lk(_q_mu);
    clock::time_point last_pass_start;
    while (true) {
        const auto work = [&] { return !_dirty.empty() || !_waiters.empty() || !_ready.empty(); };
        // Appends that came during the last pass wait out the interval (options), so that
        // a trickle of requests makes fewer, fuller passes rather than one per request.
        // Waiters for data the last pass made durable need no fsync and go at once.
        const auto appended_since_last_pass = [&] {
            return std::any_of(_dirty.begin(), _dirty.end(), [](const partition_log* p) {
                return p->_leo.load() > p->_durable.load();
            });
        };
        if (_opts.flush_pass_interval.count() > 0 && appended_since_last_pass()) {
            const auto next = last_pass_start + _opts.flush_pass_interval;
            if (clock::now() < next) {
                lk.unlock();
                std::this_thread::sleep_until(next);
                lk.lock();
            }
        }
        _q_cv.wait(lk,
                   [&] { return _stopping || (!_paused && (work() || !_checkpoints.empty())); });
        if (!work()) {
            if (_stopping) break;  // drained; close() makes the rest durable
            lk.unlock();
            checkpoint_step();  // idle: the checkpoints go on without passes
            lk.lock();
            continue;
        }
        auto dirty = std::exchange(_dirty, {});
        auto waiters = std::exchange(_waiters, {});
        auto ready = std::exchange(_ready, {});
        auto listener = _listener;
        lk.unlock();
        last_pass_start = clock::now();

        std::vector<waiter> unresolved;
        std::vector<topic_partition> advanced;
        std::vector<writeback> writebacks;
        flush_pass(dirty, waiters, ready, unresolved, advanced, writebacks);
        for (auto& [done, r] : ready) done(std::move(r));
        if (listener && !advanced.empty()) listener(advanced);
        // Journaled data still has to reach its segment on disk before a checkpoint can
        // let the journal file go. Left to the kernel, it goes out in bursts of hundreds
        // of MB that hold up the journal's fdatasyncs for as long (p99 over 100 ms at 50
        // MB/s); started here, a few pages after every pass, each journal fdatasync
        // flushes little more than a pass's worth, and the checkpoint's fsync finds the
        // pages written. (Larger chunks, or a thread of its own, measured worse.)
        for (const auto& w : writebacks)
            (void)::sync_file_range(w.data->fd(), w.range.from, w.range.to - w.range.from,
                                    SYNC_FILE_RANGE_WRITE);
        writebacks.clear();
        if (!_checkpoints.empty()) checkpoint_step();

        lk.lock();
        ++_passes;
        for (auto& w : unresolved) {
            if (!w.log->_queued.exchange(true)) _dirty.push_back(w.log);
            _waiters.push_back(std::move(w));
        }
    }
}

void log_manager::close() {
    if (!_opened || _closed) return;
    _closed = true;
    stop_compaction();
    {
        // Waits for a running pass; none starts afterwards to delete files behind the
        // clean-shutdown marker.
        std::lock_guard ret(_retention_mu);
        _retention_on = false;
    }
    {
        std::lock_guard lk(_q_mu);
        _stopping = true;
    }
    _q_cv.notify_one();
    if (_flusher.joinable()) _flusher.join();

    bool clean = true;
    {
        // Recoveries still owed (start-up recovery failed, not retried with success yet)
        // must run again at the next start.
        std::lock_guard lk(_ctx.retry_mu);
        if (!_ctx.load_retries.empty()) clean = false;
    }
    {
        std::shared_lock lk(_topics_mu);
        for (auto& [name, t] : _topics) {
            for (auto& p : t->partitions) {
                if (!p.loaded()) continue;
                if (p.failure()) clean = false;
                if (auto r = p.save_for_shutdown(); !r) {
                    log_error("storage", "{}-{}: {}", name, p.partition(), r.err().message);
                    clean = false;
                }
            }
        }
    }
    // One syncfs makes the index files durable without an fsync per file.
    if (auto dir = open_file(_ctx.logs_dir, O_RDONLY | O_DIRECTORY); dir) {
        if (::syncfs((*dir)->fd()) != 0) clean = false;
    } else {
        clean = false;
    }
    _ctx.files.clear();
    // The syncfs made every partition durable, so the journal has nothing left to give.
    if (clean) {
        _ctx.shared_journal = nullptr;
        _journal.reset();
        if (auto r = journal::remove_all(_ctx.logs_dir / journal_dir_name); !r) {
            log_error("storage", "journal: {}", r.err().message);
            clean = false;
        }
    }
    if (!clean) {
        log_warn("storage", "closed without a clean-shutdown marker: next start recovers");
        return;
    }
    const fs::path marker = _ctx.logs_dir / clean_marker_name;
    auto text = bytes(clean_marker_text.begin(), clean_marker_text.end());
    result<void> r = write_whole_file(marker, text);
    if (r) {
        auto f = open_file(marker, O_RDONLY);
        r = f ? sync_data(**f) : result<void>(f.err());
    }
    if (r) r = sync_dir(_ctx.logs_dir);
    if (!r)
        log_warn("storage", "could not write the clean-shutdown marker: {}", r.err().message);
    else
        log_info("storage", "logs closed cleanly");
}

}  // namespace sluice::log

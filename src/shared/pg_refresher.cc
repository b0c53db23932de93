#include "shared/pg_refresher.h"

#include <algorithm>

#include <fmt/format.h>

#include "common/logging.h"

namespace sluice::shared {

result<int64_t> bump_change_version(pg_transaction& tx, const char* subject) {
    auto up = tx.exec("UPDATE sluice_change_versions SET version = version + 1 WHERE subject = $1",
                      {subject});
    if (!up) return up.err();
    if (up->affected != 1)
        return error{errc::corrupt,
                     fmt::format("sluice_change_versions has no row for '{}'", subject)};
    return read_change_version(tx, subject);
}

result<int64_t> read_change_version(pg_transaction& tx, const char* subject) {
    auto row = tx.exec("SELECT version FROM sluice_change_versions WHERE subject = $1", {subject});
    if (!row) return row.err();
    if (row->size() != 1)
        return error{errc::corrupt,
                     fmt::format("sluice_change_versions has no row for '{}'", subject)};
    return row->int64(0, 0);
}

result<std::unique_ptr<pg_refresher>> pg_refresher::start(const pg_config& config,
                                                          std::vector<subject> subjects,
                                                          std::chrono::milliseconds poll_interval) {
    std::vector<std::string> channels;
    channels.reserve(subjects.size());
    for (const auto& s : subjects) channels.push_back(s.channel);
    auto l = pg_listener::connect(config, std::move(channels));
    if (!l) return l.err();
    std::unique_ptr<pg_refresher> r(
        new pg_refresher(std::move(*l), std::move(subjects), poll_interval));
    r->_thread = std::thread([p = r.get()] { p->run(); });
    return r;
}

pg_refresher::~pg_refresher() {
    _stop = true;
    if (_thread.joinable()) _thread.join();
}

void pg_refresher::refresh(const subject& s) {
    auto r = s.refresh();
    _refreshes.fetch_add(1);
    if (!r) {
        log_warn("shared",
                 "refreshing what '{}' announces failed (tried again at the next poll): {}",
                 s.channel, r.err().message);
    } else if (*r) {
        log_debug("shared", "'{}' changed: read again", s.channel);
    }
}

void pg_refresher::run() {
    // Waits are sliced so that the destructor is not kept waiting.
    constexpr std::chrono::milliseconds slice{250};
    auto next_poll = std::chrono::steady_clock::now() + _poll;
    bool failing = false;
    while (!_stop) {
        auto now = std::chrono::steady_clock::now();
        auto until_poll = std::chrono::duration_cast<std::chrono::milliseconds>(next_poll - now);
        auto w = _listener->wait(std::clamp(until_poll, std::chrono::milliseconds(1), slice));
        if (_stop) break;
        if (!w) {
            if (!failing)
                log_warn("shared", "listening for catalog changes failed (polling meanwhile): {}",
                         w.err().message);
            failing = true;
            std::this_thread::sleep_for(slice);  // the database is away: do not spin
        } else {
            if (failing) log_info("shared", "listening for catalog changes again");
            failing = false;
        }
        if (w && w->reconnected) {
            for (const auto& s : _subjects) refresh(s);
            next_poll = std::chrono::steady_clock::now() + _poll;
            continue;
        }
        if (w) {
            for (const auto& s : _subjects) {
                bool named =
                    std::any_of(w->notifications.begin(), w->notifications.end(),
                                [&](const pg_notification& n) { return n.channel == s.channel; });
                if (named) refresh(s);
            }
        }
        if (std::chrono::steady_clock::now() >= next_poll) {
            for (const auto& s : _subjects) refresh(s);
            next_poll = std::chrono::steady_clock::now() + _poll;
        }
    }
}

}  // namespace sluice::shared

#include "expansion/checkpointer.h"

#include <utility>

#include "common/logging.h"

namespace sluice::expansion {

checkpointer::checkpointer() : _thread([this] { run(); }) {}

checkpointer::~checkpointer() {
    stop();
}

void checkpointer::request(const std::string& file) {
    {
        std::lock_guard lock(_mu);
        if (_stop || !_wanted.insert(file).second) return;
    }
    _cv.notify_one();
}

void checkpointer::stop() {
    {
        std::lock_guard lock(_mu);
        if (_stop) return;
        _stop = true;
    }
    _cv.notify_one();
    if (_thread.joinable()) _thread.join();
}

void checkpointer::run() {
    std::unique_lock lock(_mu);
    for (;;) {
        _cv.wait(lock, [&] { return _stop || !_wanted.empty(); });
        auto files = std::exchange(_wanted, {});
        const bool stopping = _stop;
        lock.unlock();
        for (const auto& f : files) checkpoint(f);
        lock.lock();
        if (stopping) break;
    }
    for (auto& [_, db] : _connections) sqlite3_close_v2(db);
    _connections.clear();
}

void checkpointer::checkpoint(const std::string& file) {
    sqlite3*& db = _connections[file];
    if (!db) {
        if (sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                            nullptr) != SQLITE_OK) {
            log_warn("expansion", "checkpoint of {}: cannot open: {}", file,
                     db ? sqlite3_errmsg(db) : "out of memory");
            sqlite3_close_v2(db);
            _connections.erase(file);
            return;
        }
        sqlite3_busy_timeout(db, 1000);
        sqlite3_exec(db, "PRAGMA synchronous=NORMAL", nullptr, nullptr, nullptr);
    }
    int wal = 0, copied = 0;
    // PASSIVE: copies what no reader still needs, without blocking the writer.
    const int rc = sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, &wal, &copied);
    if (rc != SQLITE_OK && rc != SQLITE_BUSY)
        log_warn("expansion", "checkpoint of {}: {}", file, sqlite3_errmsg(db));
    else
        log_debug("expansion", "checkpoint of {}: {} of {} WAL pages copied", file, copied, wal);
}

}  // namespace sluice::expansion

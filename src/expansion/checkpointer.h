#pragma once

// Checkpoints the WAL of the expansions' target files on a thread of its own. The
// expander's connections run with wal_autocheckpoint=0: left to SQLite, a commit that
// pushes the WAL past 1,000 pages runs the checkpoint itself, and its fsyncs then sit in
// the producers' acknowledgement path (docs/benchmarks-history.md (Expansions)). Here a PASSIVE
// checkpoint, on another connection, copies pages back while the expander goes on
// committing.

#include <sqlite3.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

namespace sluice::expansion {

class checkpointer {
  public:
    // The WAL size, in pages, past which a file is checkpointed (SQLite's default for
    // its automatic checkpoints).
    static constexpr int wal_pages = 1000;

    checkpointer();
    ~checkpointer();  // stop()
    checkpointer(const checkpointer&) = delete;
    checkpointer& operator=(const checkpointer&) = delete;

    // Asks for a checkpoint of `file` soon; thread-safe and cheap (a commit calls it).
    void request(const std::string& file);
    // Checkpoints what was asked for, then ends the thread and closes its connections.
    void stop();

  private:
    void run();
    void checkpoint(const std::string& file);

    std::mutex _mu;
    std::condition_variable _cv;
    std::set<std::string> _wanted;                 // guarded by _mu
    bool _stop = false;                            // guarded by _mu
    std::map<std::string, sqlite3*> _connections;  // the thread's own
    std::thread _thread;
};

}  // namespace sluice::expansion

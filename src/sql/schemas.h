#pragma once

// Users' own schemas. SQLite names a database by the schema its tables live in, so each
// user schema is a database file that every session attaches under that name:
// <dir>/main.db holds the default schema (`main`) and <dir>/schemas/<name>.db the schema
// <name> (docs/formats/sql-dir.md). CREATE SCHEMA and DROP SCHEMA come here.

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "sql/engine.h"

struct sqlite3;

namespace sluice::sql {

class schema_registry {
  public:
    static outcome<std::unique_ptr<schema_registry>> open(const std::filesystem::path& dir);

    std::filesystem::path main_path() const { return _dir / "main.db"; }
    std::filesystem::path path_of(const std::string& name) const;
    // Names of the user schemas besides main, sorted.
    std::vector<std::string> list() const;
    // Bumped by every create and drop, so sessions know when to re-attach.
    uint64_t generation() const { return _generation.load(); }

    // Why a name cannot be a user schema (empty when it can): letters, digits and '_',
    // not starting with a digit, at most 63 characters, and not one of the engine's own
    // schemas (main, temp, kafka_topics, system, pg_catalog, information_schema).
    static std::string check_name(const std::string& name);

    // Registers a new schema (its file is created when a session first attaches it).
    // false when it existed already.
    outcome<bool> create(const std::string& name);
    // Forgets the schema and deletes its file. false when it did not exist.
    outcome<bool> drop(const std::string& name);

    // Keeps one connection to the WAL database at `path` open for the registry's life
    // (once per path; later calls return at once). When the last connection of a process
    // closes, SQLite unmaps the WAL index, and the next connection truncates the -shm file
    // and extends it again, which a full disk refuses: every new session would then fail.
    // Held open, the index keeps its blocks and new sessions read while the disk is full.
    void keep_open(const std::string& path, const char* vfs);

    ~schema_registry();
    schema_registry(const schema_registry&) = delete;
    schema_registry& operator=(const schema_registry&) = delete;

  private:
    explicit schema_registry(std::filesystem::path dir) : _dir(std::move(dir)) {}

    std::filesystem::path _dir;
    mutable std::mutex _mu;
    std::vector<std::string> _names;  // sorted; guarded by _mu
    std::atomic<uint64_t> _generation{1};
    std::map<std::string, sqlite3*> _keepers;  // path -> open connection; guarded by _mu
};

}  // namespace sluice::sql

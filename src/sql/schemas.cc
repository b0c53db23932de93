#include "sql/schemas.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <algorithm>
#include <system_error>

namespace sluice::sql {

namespace fs = std::filesystem;

outcome<std::unique_ptr<schema_registry>> schema_registry::open(const fs::path& dir) {
    std::error_code ec;
    fs::create_directories(dir / "schemas", ec);
    if (ec)
        return query_error{
            failure::internal,
            fmt::format("cannot create {}: {}", (dir / "schemas").string(), ec.message())};
    std::unique_ptr<schema_registry> r(new schema_registry(dir));
    for (const auto& e : fs::directory_iterator(dir / "schemas", ec)) {
        auto name = e.path().filename().string();
        if (e.path().extension() != ".db") continue;  // -wal/-shm files, leftovers
        name = e.path().stem().string();
        if (check_name(name).empty()) r->_names.push_back(name);
    }
    if (ec)
        return query_error{
            failure::internal,
            fmt::format("cannot list {}: {}", (dir / "schemas").string(), ec.message())};
    std::sort(r->_names.begin(), r->_names.end());
    return r;
}

fs::path schema_registry::path_of(const std::string& name) const {
    return name == "main" ? main_path() : _dir / "schemas" / (name + ".db");
}

std::vector<std::string> schema_registry::list() const {
    std::lock_guard lk(_mu);
    return _names;
}

std::string schema_registry::check_name(const std::string& name) {
    if (name.empty() || name.size() > 63) return "a schema name has 1 to 63 characters";
    if (std::isdigit(static_cast<unsigned char>(name[0])))
        return "a schema name does not start with a digit";
    for (char c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_')
            return "a schema name holds only letters, digits and '_'";
    std::string lower = name;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    for (const char* reserved : {"main", "temp", "kafka_topics", "system", "pg_catalog",
                                 "information_schema"})
        if (lower == reserved) return fmt::format("schema {} belongs to the engine", reserved);
    return {};
}

outcome<bool> schema_registry::create(const std::string& name) {
    if (auto why = check_name(name); !why.empty())
        return query_error{failure::invalid_parameter,
                           fmt::format("invalid schema name '{}': {}", name, why)};
    std::lock_guard lk(_mu);
    auto it = std::lower_bound(_names.begin(), _names.end(), name);
    if (it != _names.end() && *it == name) return false;
    _names.insert(it, name);
    _generation.fetch_add(1);
    return true;
}

outcome<bool> schema_registry::drop(const std::string& name) {
    std::lock_guard lk(_mu);
    auto it = std::lower_bound(_names.begin(), _names.end(), name);
    if (it == _names.end() || *it != name) return false;
    if (auto k = _keepers.find(path_of(name).string()); k != _keepers.end()) {
        sqlite3_close_v2(k->second);
        _keepers.erase(k);
    }
    std::error_code ec;
    for (const char* suffix : {"", "-wal", "-shm", "-journal"})
        fs::remove(path_of(name).string() + suffix, ec);
    _names.erase(it);
    _generation.fetch_add(1);
    return true;
}

void schema_registry::keep_open(const std::string& path, const char* vfs) {
    std::lock_guard lk(_mu);
    if (_keepers.count(path)) return;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, vfs) !=
        SQLITE_OK) {
        sqlite3_close_v2(db);
        return;  // the sessions go on as before; the next one tries again
    }
    int on = 1;  // as every session: the -wal and -shm files outlive the last close
    (void)sqlite3_file_control(db, "main", SQLITE_FCNTL_PERSIST_WAL, &on);
    // One read maps the WAL index; the connection then holds no transaction (it never
    // blocks a checkpoint or a writer).
    if (sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr) !=
        SQLITE_OK) {
        sqlite3_close_v2(db);
        return;
    }
    _keepers.emplace(path, db);
}

schema_registry::~schema_registry() {
    for (auto& [path, db] : _keepers) sqlite3_close_v2(db);
}

}  // namespace sluice::sql

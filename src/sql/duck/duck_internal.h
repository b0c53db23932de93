#pragma once

// What src/sql/duck's files share beside duck_engine.h: the engine's DuckDB database and
// its sessions, and DuckDB's error kinds as the engine interface's. Includes DuckDB's
// headers: for src/sql/duck only.

#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_map>

#include "duckdb.hpp"
#include "sql/duck/duck_engine.h"
#include "sql/duck/table_access.h"
#include "sql/duck/topic_scan.h"

namespace sluice::sql::duck {

namespace d = ::duckdb;

// The sessions, by their connection's client context: how kafka_topic's bind finds the
// principal and the cut of the statement it serves.
struct engine::impl {
    std::shared_ptr<d::DuckDB> db;
    table_access access;               // reads of the database's tables (duck/table_access.h)
    std::filesystem::path export_dir;  // where COPY ... TO writes (options::export_dir)
    std::mutex mu;
    std::unordered_map<const d::ClientContext*, scan_session> sessions;

    scan_session find(d::ClientContext& c) {
        std::lock_guard lk(mu);
        const auto it = sessions.find(&c);
        return it == sessions.end() ? scan_session{} : it->second;
    }
};

// strerror(ENOSPC), which DuckDB's file errors carry.
inline constexpr const char* no_space_text = "No space left on device";

failure failure_of(d::ExceptionType t, const std::string& msg);

}  // namespace sluice::sql::duck

#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "sql/engine.h"

namespace sluice::sql::test {

// A fresh directory under the system temp dir, removed at the end of the test.
struct temp_dir {
    temp_dir() {
        path = std::filesystem::temp_directory_path() /
               ("sluice-sql-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~temp_dir() { std::filesystem::remove_all(path); }
    static int& counter() {
        static int n = 0;
        return n;
    }
    std::filesystem::path path;
};

// Runs every statement of `sql`; the rows of the last one that returned rows, each
// cell rendered as text ("NULL" for null, "x'..'" for blobs). Fails the test on error.
inline std::vector<std::vector<std::string>> query(session& s, std::string_view sql) {
    std::vector<std::vector<std::string>> rows;
    std::string_view rest = sql;
    while (!rest.empty()) {
        auto st = s.prepare(rest, &rest);
        if (!st) {
            ADD_FAILURE() << sql << ": " << st.error().message;
            return rows;
        }
        if (!*st) break;
        std::vector<std::vector<std::string>> these;
        for (;;) {
            auto state = (*st)->step();
            if (state == statement::step_state::failed) {
                ADD_FAILURE() << sql << ": " << (*st)->error().message;
                return rows;
            }
            if (state == statement::step_state::done) break;
            std::vector<std::string> row;
            for (const auto& v : (*st)->row()) {
                if (std::holds_alternative<std::monostate>(v))
                    row.push_back("NULL");
                else if (auto* i = std::get_if<int64_t>(&v))
                    row.push_back(std::to_string(*i));
                else if (auto* d = std::get_if<double>(&v))
                    row.push_back(std::to_string(*d));
                else if (auto* t = std::get_if<std::string>(&v))
                    row.push_back(*t);
                else {
                    const auto& b = std::get<bytes>(v);
                    row.push_back(std::string(b.begin(), b.end()));
                }
            }
            these.push_back(std::move(row));
        }
        if (!(*st)->columns().empty()) rows = std::move(these);
    }
    return rows;
}

// The error of the first failing statement of `sql`; kind internal with an empty
// message when none fails.
inline query_error failure_of(session& s, std::string_view sql) {
    std::string_view rest = sql;
    while (!rest.empty()) {
        auto st = s.prepare(rest, &rest);
        if (!st) return st.error();
        if (!*st) break;
        for (;;) {
            auto state = (*st)->step();
            if (state == statement::step_state::failed) return (*st)->error();
            if (state == statement::step_state::done) break;
        }
    }
    return {failure::internal, ""};
}

}  // namespace sluice::sql::test

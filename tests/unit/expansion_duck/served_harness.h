#pragma once

// The expansion service writing its targets into the SQL engine's DuckDB database, and a
// session of that engine reading them: what a broker with a SQL listener runs.

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "../expansion/service_harness.h"
#include "expansion/duck/duck_target.h"
#include "sql/duck/duck_engine.h"
#include "sql/duck/serving.h"

namespace sluice::expansion::test {

struct served_harness : service_harness {
    // Opens the service with its targets in `file` (eo as the fixture set it), then the
    // engine over the same database and one session. Call through ASSERT_NO_FATAL_FAILURE.
    void open_served(const std::filesystem::path& file) {
        make_targets = [this, file]() -> std::shared_ptr<target_backend> {
            eo.logs = logs.get();
            eo.catalog = cat.get();
            auto db = sql::duck::open_serving_database(eo, file);
            EXPECT_TRUE(db) << db.error().message;
            if (!db) return nullptr;
            duck = *db;
            auto t = duck_targets::open({.file = file, .database = duck->database()});
            EXPECT_TRUE(t) << t.err().message;
            store = t ? *t : nullptr;
            return store;
        };
        open_service();
        eo.guard = svc.get();
        auto e = sql::duck::open_serving_engine(eo, duck);
        ASSERT_TRUE(e) << e.error().message;
        eng = std::move(*e);
        auto s = eng->open_session();
        ASSERT_TRUE(s) << s.error().message;
        sess = std::move(*s);
    }
    void close_served() {
        sess.reset();
        eng.reset();
        close_service();
        store.reset();
        duck.reset();  // DuckDB lets one database of a process hold the file
    }

    sql::engine_options eo;
    std::shared_ptr<sql::duck::engine> duck;
    std::shared_ptr<duck_targets> store;  // the service's targets
    std::unique_ptr<sql::engine> eng;
    std::unique_ptr<sql::session> sess;
};

}  // namespace sluice::expansion::test

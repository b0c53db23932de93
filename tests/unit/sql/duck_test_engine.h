#pragma once

// The DuckDB serving engine for the front ends' tests: over a log manager of its own in
// o.data_dir (no topics; the engine reads topic tables through one), which `logs` keeps.
// Close `logs` after the engine is gone.

#include <memory>

#include "log/log_manager.h"
#include "sql/duck/serving.h"

namespace sluice::sql::test {

inline outcome<std::unique_ptr<engine>> open_duck_test_engine(
    engine_options o, std::unique_ptr<log::log_manager>& logs) {
    logs = std::make_unique<log::log_manager>(log::log_manager::options{o.data_dir});
    if (auto r = logs->open(); !r) return query_error{failure::internal, r.err().message};
    o.logs = logs.get();
    o.bounds.total_memory = uint64_t{256} << 20;  // a test's DuckDB needs no more
    return duck::open_serving_engine(o);
}

}  // namespace sluice::sql::test

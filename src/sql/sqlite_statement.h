#pragma once

#include <sqlite3.h>

#include <chrono>
#include <string>
#include <vector>

#include "sql/budget.h"
#include "sql/engine.h"

namespace sluice::sql {

class sqlite_session;

// A prepared SQLite statement, stepped under its session's limits.
class sqlite_statement final : public statement {
  public:
    // `text`: the statement as the user wrote it (SQLite's may have topic names
    // rewritten, sql/topic_names.h).
    sqlite_statement(sqlite_session& s, sqlite3_stmt* st, std::string text);
    ~sqlite_statement() override;

    const std::string& text() const override { return _text; }
    // The highest parameter number ($n), or SQLite's count for "?" parameters.
    int param_count() const override { return _param_count; }
    outcome<bool> bind(const std::vector<value>& params) override;
    const std::vector<column>& columns() const override { return _columns; }
    step_state step() override;
    const std::vector<value>& row() const override { return _row; }
    const query_error& error() const override { return _error; }
    int64_t changes() const override { return _changes; }
    std::string verb() const override;
    void reset() override;

  private:
    step_state fail(query_error e);
    // Counts the row's copies outside SQLite (row() and the front end's encoding of it)
    // against the session's memory; false when a bound refuses them.
    bool charge_row();
    void release_row();

    sqlite_session& _session;
    sqlite3_stmt* _st;
    std::string _text;
    std::vector<int> _param_numbers;  // SQLite's index - 1 -> the parameter's number
    int _param_count = 0;
    std::vector<column> _columns;
    std::vector<value> _row;
    query_error _error;
    uint64_t _rows = 0;
    int64_t _changes = 0;
    int64_t _total_changes_before = 0;  // the connection's total when the statement started
    // The session's account, kept here: accounts outlive sessions (sql/budget.h), so the
    // charge for a row can be given back even by a statement finalized after its session.
    budget_account* _account;
    uint64_t _row_charge = 0;  // bytes charged for the row held now
    uint32_t _row_generation = 0;
    bool _started = false;
    bool _finished = false;
    std::chrono::steady_clock::time_point _started_at;  // for metrics (sql_metrics.h)
};

}  // namespace sluice::sql

#pragma once

// An expansion's target table and its progress, in the SQLite file of the target's
// schema (docs/formats/expansion-progress.md). Rows and progress are written in one
// transaction, so that after a crash at any moment the table holds exactly the events
// below the stored progress: catching up from there neither misses nor doubles one.
//
// Not thread-safe: one thread at a time (the expander's, or the one creating or
// dropping the expansion).

#include <sqlite3.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "expansion/checkpointer.h"
#include "expansion/row_builder.h"
#include "expansion/schema.h"
#include "expansion/target_store.h"

namespace sluice::sql {
class schema_registry;
}

namespace sluice::expansion {

// The rows of `table` in the schema file `file` now, read on a connection of its own
// (WAL: no writer waits for it).
result<int64_t> count_rows(const std::filesystem::path& file, const std::string& table);

class target_table final : public target_store {
  public:
    // Opens the schema's file (`schema` names it in messages). With `create`, makes the
    // table when absent, or checks that an existing one is compatible: every column of
    // the layout present with a matching type, and no other column that an insert would
    // leave NULL against a NOT NULL constraint. Errors: invalid_argument (naming the
    // column), io_error.
    // With a checkpointer, the connection leaves WAL checkpoints to it.
    static result<std::unique_ptr<target_table>> open(const std::filesystem::path& file,
                                                      const std::string& schema,
                                                      const std::string& table, const layout& l,
                                                      bool create,
                                                      checkpointer* checkpoints = nullptr);
    ~target_table() override;
    target_table(const target_table&) = delete;
    target_table& operator=(const target_table&) = delete;

    result<progress_map> load_progress() override;
    result<void> begin() override;
    // Rows are written in groups of rows_per_insert.
    result<void> insert(int32_t partition, offset_t offset, timestamp_ms broker_time,
                        const expanded_row& row, std::optional<bytes_view> source,
                        std::optional<bytes_view> key) override;
    result<void> save_progress(int32_t partition, const partition_progress& p) override;
    result<void> commit() override;
    void rollback() override;
    bool in_txn() const override { return _in_txn; }
    result<int64_t> delete_from(int32_t partition, offset_t from) override;
    result<void> reset_progress(const progress_map& p) override;
    result<void> remove(bool drop_table) override;

    const std::string& name() const override { return _qualified; }

  private:
    target_table() = default;
    result<void> exec(const std::string& sql);
    error fail(const std::string& what) const;
    result<void> ensure_table(const layout& l, bool create);
    result<void> ensure_position_index();

    sqlite3* _db = nullptr;
    std::string _file;
    checkpointer* _checkpoints = nullptr;
    std::string _schema, _table, _qualified;  // _qualified: schema.table, for messages
    std::string _key;                         // the table's name in the progress table
    layout _layout;
    // Rows wait here until rows_per_insert of them go in one multi-row INSERT (or the
    // transaction commits): one statement per row costs SQLite a cursor open, seek and
    // close each time. Cells are held by value, bytes in one arena.
    static constexpr size_t rows_per_insert = 32;
    struct held_cell {
        cell::kind k;
        int64_t i;
        double d;
        size_t at, len;  // in _arena, for text and blobs
    };
    void hold_bytes(cell::kind k, std::string_view bytes);
    result<sqlite3_stmt*> insert_statement(size_t rows);
    result<void> flush();
    std::vector<held_cell> _held;
    std::string _arena;
    size_t _held_rows = 0;
    std::string _insert_head;                  // INSERT INTO main."t" (...) VALUES
    std::map<size_t, sqlite3_stmt*> _inserts;  // by row count
    sqlite3_stmt* _progress = nullptr;
    bool _in_txn = false;
};

// The SQLite targets: each in the file of its schema (sql::schema_registry), the WAL
// checkpointed by `checkpoints` (null: by SQLite itself).
class sqlite_targets final : public target_backend {
  public:
    sqlite_targets(std::shared_ptr<sql::schema_registry> schemas, checkpointer* checkpoints)
        : _schemas(std::move(schemas)), _checkpoints(checkpoints) {}
    const char* kind() const override { return "sqlite"; }
    result<std::unique_ptr<target_store>> open(const std::string& schema, const std::string& table,
                                               const layout& l, bool create) override;
    result<int64_t> count_rows(const std::string& schema, const std::string& table) override;

  private:
    std::shared_ptr<sql::schema_registry> _schemas;
    checkpointer* _checkpoints;
};

}  // namespace sluice::expansion

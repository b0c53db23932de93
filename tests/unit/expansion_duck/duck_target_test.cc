// Columnar expansion targets in a real DuckDB file: rows and their types, progress in the
// same transaction, a writer killed (SIGKILL) mid-transaction replaying exactly once,
// keyed targets with tombstones, deletes past a log's end, incompatible tables.

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include "../sql/sql_test_util.h"
#include "duckdb.hpp"
#include "expansion/duck/duck_target.h"
#include "expansion/row_builder.h"

namespace sluice::expansion {
namespace {

using sql::test::temp_dir;

constexpr const char* schema_json = R"({"fields": [{"name": "id", "type": "int64"},
    {"name": "name", "type": "string"}, {"name": "price", "type": "float64"},
    {"name": "ok", "type": "bool"}], "key": {"type": "string"}})";

std::string event(int64_t i) {
    return fmt::format(R"({{"id": {}, "name": "n{}", "price": {}.5, "ok": {}}})", i, i % 10, i,
                       i % 2 ? "true" : "false");
}

bytes_view view(const std::string& s) {
    return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

struct duck_target_fixture : ::testing::Test {
    void SetUp() override {
        auto s = parse_schema(schema_json);
        ASSERT_TRUE(s) << s.err().message;
        fields = *s;
        auto l = layout::make(fields, {.flatten = false, .copy_source = true});
        ASSERT_TRUE(l) << l.err().message;
        cols.emplace(*l);
        builder = std::make_unique<row_builder>(fields, *cols);
    }
    std::shared_ptr<duck_targets> open_backend() {
        auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
        EXPECT_TRUE(b) << b.err().message;
        return b ? *b : nullptr;
    }
    std::unique_ptr<target_store> open_target(duck_targets& b, bool create = true) {
        auto t = b.open("s", "events", *cols, create);
        EXPECT_TRUE(t) << t.err().message;
        return t ? std::move(*t) : nullptr;
    }
    // Expands events [from, to) of partition 0 in transactions of `per_commit`, each
    // with the progress, as the service does.
    void expand(target_store& t, int64_t from, int64_t to, int64_t per_commit) {
        for (int64_t at = from; at < to;) {
            const int64_t end = std::min(to, at + per_commit);
            auto r = t.in_transaction([&]() -> result<void> {
                for (int64_t i = at; i < end; ++i) {
                    const auto v = event(i);
                    const auto k = "k" + std::to_string(i % 100);
                    auto row = t.insert(0, i, 1000 + i, builder->build(view(v)), view(v), view(k));
                    if (!row) return row;
                }
                return t.save_progress(0, {.next = end});
            });
            ASSERT_TRUE(r) << r.err().message;
            at = end;
        }
    }
    std::string one(duck_targets& b, const std::string& sql) {
        auto r = b.query(sql);
        EXPECT_TRUE(r) << r.err().message;
        if (!r || r->empty() || r->at(0).empty()) return "<none>";
        return r->at(0).at(0).value_or("NULL");
    }

    temp_dir dir;
    schema fields;
    std::optional<layout> cols;
    std::unique_ptr<row_builder> builder;
};

TEST_F(duck_target_fixture, n_events_give_n_typed_rows_and_their_progress) {
    auto b = open_backend();
    ASSERT_TRUE(b);
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    expand(*t, 0, 10'000, 3'000);
    EXPECT_EQ(*b->count_rows("s", "events"), 10'000);
    EXPECT_EQ(one(*b, "SELECT sum(id) FROM s.events"), "49995000");
    EXPECT_EQ(one(*b, "SELECT count(DISTINCT _offset) FROM s.events"), "10000");
    EXPECT_EQ(one(*b, "SELECT sum(price) FROM s.events WHERE ok"), "25002500.0");
    EXPECT_EQ(one(*b,
                  "SELECT name || ' ' || _key || ' ' || decode(_source) FROM s.events "
                  "WHERE _offset = 7"),
              "n7 k7 " + event(7));
    EXPECT_EQ(one(*b,
                  "SELECT string_agg(data_type, ',' ORDER BY ordinal_position) FROM "
                  "information_schema.columns WHERE table_name = 'events'"),
              "BIGINT,BIGINT,BIGINT,BIGINT,VARCHAR,DOUBLE,BOOLEAN,BIGINT,BIGINT,BIGINT,BIGINT,"
              "BLOB,VARCHAR");
    auto p = t->load_progress();
    ASSERT_TRUE(p) << p.err().message;
    EXPECT_EQ(p->at(0).next, 10'000);
    // Reopened, the rows and progress are there.
    t.reset();
    b.reset();
    b = open_backend();
    t = open_target(*b, false);
    ASSERT_TRUE(t);
    EXPECT_EQ(t->load_progress()->at(0).next, 10'000);
    EXPECT_EQ(*b->count_rows("s", "events"), 10'000);
}

TEST_F(duck_target_fixture, a_rolled_back_transaction_leaves_nothing) {
    auto b = open_backend();
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    expand(*t, 0, 100, 100);
    ASSERT_TRUE(t->begin());
    const auto v = event(100);
    ASSERT_TRUE(t->insert(0, 100, 1, builder->build(view(v)), view(v), std::nullopt));
    ASSERT_TRUE(t->save_progress(0, {.next = 101}));
    t->rollback();
    EXPECT_EQ(*b->count_rows("s", "events"), 100);
    EXPECT_EQ(t->load_progress()->at(0).next, 100);
    expand(*t, 100, 200, 50);
    EXPECT_EQ(one(*b,
                  "SELECT count(*) = count(DISTINCT _offset) AND max(_offset) = 199 "
                  "FROM s.events"),
              "true");
}

// A writer process killed by SIGKILL in the middle of a transaction (rows appended and
// progress saved, not committed): the reopened file holds exactly the committed events,
// and expanding on from the stored progress gives each of N events exactly one row.
TEST_F(duck_target_fixture, a_killed_writer_replays_exactly_once) {
    constexpr int64_t n = 20'000;
    for (const int64_t killed_at : {7'000, 12'345}) {
        std::filesystem::remove_all(dir.path / "expansions.duckdb");
        std::filesystem::remove_all(dir.path / "expansions.duckdb.wal");
        const pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
            if (!b) ::_exit(2);
            auto t = (*b)->open("s", "events", *cols, true);
            if (!t) ::_exit(3);
            // Committed up to the last multiple of 1,000 below killed_at.
            const int64_t committed = killed_at / 1'000 * 1'000;
            expand(**t, 0, committed, 1'000);
            if (!(*t)->begin()) ::_exit(4);
            for (int64_t i = committed; i < killed_at; ++i) {
                const auto v = event(i);
                if (!(*t)->insert(0, i, 1, builder->build(view(v)), view(v), std::nullopt))
                    ::_exit(5);
            }
            if (!(*t)->save_progress(0, {.next = killed_at})) ::_exit(6);
            ::raise(SIGKILL);
            ::_exit(7);
        }
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
        auto b = open_backend();
        ASSERT_TRUE(b);
        auto t = open_target(*b, false);
        ASSERT_TRUE(t);
        auto p = t->load_progress();
        ASSERT_TRUE(p) << p.err().message;
        const int64_t from = p->at(0).next;
        EXPECT_EQ(from, killed_at / 1'000 * 1'000);
        EXPECT_EQ(*b->count_rows("s", "events"), from);
        expand(*t, from, n, 4'000);
        EXPECT_EQ(one(*b,
                      "SELECT format('{} {} {} {}', count(*), count(DISTINCT _offset), "
                      "min(_offset), max(_offset)) FROM s.events"),
                  fmt::format("{} {} 0 {}", n, n, n - 1));
    }
}

TEST_F(duck_target_fixture, keyed_targets_keep_every_event_and_tombstones) {
    auto b = open_backend();
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    const std::string a1 = R"({"id": 1, "name": "first"})", a2 = R"({"id": 1, "name": "second"})";
    const std::string bad_key = "\xff\xfe";
    ASSERT_TRUE(t->in_transaction([&]() -> result<void> {
        if (auto r = t->insert(0, 0, 10, builder->build(view(a1)), view(a1), view("a")); !r)
            return r;
        if (auto r = t->insert(0, 1, 11, builder->build(view(a2)), view(a2), view("a")); !r)
            return r;
        // A tombstone: no value.
        if (auto r = t->insert(0, 2, 12, builder->build(std::nullopt), std::nullopt, view("a")); !r)
            return r;
        if (auto r = t->insert(0, 3, 13, builder->build(view(a1)), view(a1), view(bad_key)); !r)
            return r;
        return t->save_progress(0, {.next = 4});
    }));
    // History, not state: every event's row, the tombstone's with every field NULL.
    auto rows = b->query(
        "SELECT _offset, _key, id, name, _parse_error, _type_errors, _source IS NULL "
        "FROM s.events ORDER BY _offset");
    ASSERT_TRUE(rows) << rows.err().message;
    using r = std::vector<std::optional<std::string>>;
    ASSERT_EQ(rows->size(), 4u);
    EXPECT_EQ(rows->at(0), (r{"0", "a", "1", "first", "0", "0", "false"}));
    EXPECT_EQ(rows->at(1), (r{"1", "a", "1", "second", "0", "0", "false"}));
    EXPECT_EQ(rows->at(2), (r{"2", "a", std::nullopt, std::nullopt, "0", "0", "true"}));
    // A key that is not UTF-8 is NULL and one more type error.
    EXPECT_EQ(rows->at(3), (r{"3", std::nullopt, "1", "first", "0", "1", "false"}));
    // The latest state per key, from the target alone: the tombstone deleted "a".
    EXPECT_EQ(one(*b,
                  "SELECT count(*) FROM (SELECT id FROM s.events WHERE _key IS NOT NULL "
                  "QUALIFY row_number() OVER (PARTITION BY _key ORDER BY _offset DESC) = 1) "
                  "WHERE id IS NOT NULL"),
              "0");
}

TEST_F(duck_target_fixture, rows_past_a_logs_end_are_deleted) {
    auto b = open_backend();
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    expand(*t, 0, 500, 500);
    auto n = t->delete_from(0, 420);
    ASSERT_TRUE(n) << n.err().message;
    EXPECT_EQ(*n, 80);
    EXPECT_EQ(*b->count_rows("s", "events"), 420);
}

TEST_F(duck_target_fixture, existing_tables_must_be_compatible) {
    auto b = open_backend();
    ASSERT_TRUE(b->query("CREATE SCHEMA s; CREATE TABLE s.events (_partition VARCHAR)"));
    auto t = b->open("s", "events", *cols, true);
    ASSERT_FALSE(t);
    EXPECT_EQ(t.err().code, errc::invalid_argument);
    EXPECT_NE(t.err().message.find("_partition"), std::string::npos) << t.err().message;
    auto missing = b->open("s", "other", *cols, false);
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.err().code, errc::not_found);
    // Dropping with the table removes both it and its progress.
    auto u = b->open("s", "fresh", *cols, true);
    ASSERT_TRUE(u) << u.err().message;
    ASSERT_TRUE((*u)->reset_progress({{0, {.next = 5}}}));
    ASSERT_TRUE((*u)->remove(true));
    EXPECT_FALSE(b->count_rows("s", "fresh"));
    EXPECT_EQ(one(*b, "SELECT count(*) FROM _sluice_expansion_progress WHERE target = 'fresh'"),
              "0");
}

TEST_F(duck_target_fixture, narrower_integer_columns_are_compatible) {
    auto b = open_backend();
    ASSERT_TRUE(b);
    // As a PostgreSQL user declares them: INTEGER and SMALLINT for BIGINT, VARCHAR(n).
    ASSERT_TRUE(b->query(
        "CREATE SCHEMA s; CREATE TABLE s.events (_partition INTEGER NOT NULL, "
        "_offset INTEGER NOT NULL, _timestamp_broker BIGINT NOT NULL, id SMALLINT, "
        "name VARCHAR(20), price DOUBLE, ok BOOLEAN, _missing_fields INTEGER, "
        "_excess_fields INTEGER, _type_errors INTEGER, _parse_error INTEGER, _source BLOB, "
        "_key VARCHAR, note VARCHAR DEFAULT 'x')"));
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    expand(*t, 0, 100, 40);
    EXPECT_EQ(one(*b, "SELECT count(*) || ' ' || sum(id) || ' ' || min(note) FROM s.events"),
              "100 4950 x");
    // A value outside a narrower column's range fails the commit, which leaves nothing.
    const auto v = event(40'000);
    const std::string k = "k";
    auto r = t->in_transaction([&]() -> result<void> {
        if (auto row = t->insert(0, 100, 1100, builder->build(view(v)), view(v), view(k)); !row)
            return row;
        return t->save_progress(0, {.next = 101});
    });
    EXPECT_FALSE(r);
    EXPECT_EQ(*b->count_rows("s", "events"), 100);
    EXPECT_EQ(t->load_progress()->at(0).next, 100);
}

// Format version 2 appends a progress row per save; each partition's latest counts, and
// the backend's thread deletes the superseded ones once 1,000 rows were appended (off the
// commits: a DELETE waits for a running checkpoint, appends do not).
TEST_F(duck_target_fixture, progress_rows_are_appended_the_latest_wins_and_old_ones_pruned) {
    auto b = open_backend();
    ASSERT_TRUE(b);
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    const auto save_all = [&](int64_t next) {
        return t->in_transaction([&]() -> result<void> {
            for (int32_t p = 0; p < 600; ++p)
                if (auto r = t->save_progress(p, {.next = next + p}); !r) return r;
            return t->save_progress(7, {.next = next * 1000});  // the same partition again
        });
    };
    ASSERT_TRUE(save_all(1));
    EXPECT_EQ(one(*b, "SELECT count(*) FROM _sluice_expansion_progress"), "601");
    ASSERT_TRUE(save_all(2));  // 1,202 rows appended: the thread prunes, every 200 ms
    std::string rows;
    for (int i = 0; i < 100 && rows != "600"; ++i) {
        if (i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
        rows = one(*b, "SELECT count(*) FROM _sluice_expansion_progress");
    }
    EXPECT_EQ(rows, "600");
    auto p = t->load_progress();
    ASSERT_TRUE(p) << p.err().message;
    EXPECT_EQ(p->size(), 600U);
    EXPECT_EQ(p->at(0).next, 2);
    EXPECT_EQ(p->at(599).next, 601);
    EXPECT_EQ(p->at(7).next, 2000);
    ASSERT_TRUE(save_all(3));
    t.reset();
    b.reset();
    b = open_backend();  // opening the target prunes too
    t = open_target(*b, false);
    ASSERT_TRUE(t);
    EXPECT_EQ(one(*b, "SELECT count(*) FROM _sluice_expansion_progress"), "600");
    EXPECT_EQ(t->load_progress()->at(7).next, 3000);
}

// A version-1 file (progress updated in place, no seq column) is upgraded when opened: its
// progress is kept and appended to from there.
TEST_F(duck_target_fixture, a_version_1_file_is_upgraded_with_its_progress) {
    {
        auto b = open_backend();
        auto t = open_target(*b);
        expand(*t, 0, 300, 100);
        t.reset();
        // Back to version 1's layout: one row per partition, no seq, no delta.
        for (const char* sql :
             {"DROP TABLE \"_sluice_delta:s.events\"",
              "DELETE FROM _sluice_expansion_progress WHERE seq < 3",
              "ALTER TABLE _sluice_expansion_progress DROP COLUMN seq",
              "UPDATE _sluice_meta SET value = '1' WHERE key = 'format_version'"})
            ASSERT_TRUE(b->query(sql)) << sql;
        EXPECT_EQ(one(*b, "SELECT count(*) FROM _sluice_expansion_progress"), "1");
    }
    auto b = open_backend();
    ASSERT_TRUE(b);
    EXPECT_EQ(one(*b, "SELECT value FROM _sluice_meta WHERE key = 'format_version'"), "3");
    EXPECT_EQ(one(*b, "SELECT seq FROM _sluice_expansion_progress"), "0");
    auto t = open_target(*b, false);
    ASSERT_TRUE(t);
    EXPECT_EQ(one(*b, "SELECT count(*) FROM \"_sluice_delta:s.events\""), "0");
    EXPECT_EQ(t->load_progress()->at(0).next, 300);
    expand(*t, 300, 500, 100);
    EXPECT_EQ(t->load_progress()->at(0).next, 500);
    EXPECT_EQ(*b->count_rows("s", "events"), 500);
}

// While the backend checkpoints, commits go to the target's delta (delta.h): every row is
// read through the target the moment its commit returns, filters included, and the
// checkpoint's end moves the delta's rows into the table, each once.
TEST_F(duck_target_fixture, commits_during_a_checkpoint_are_read_at_once_and_moved_after) {
    auto b = open_backend();
    auto t = open_target(*b);
    ASSERT_TRUE(t);
    expand(*t, 0, 150'000, 50'000);  // enough that a checkpoint takes a while
    std::atomic<bool> stop{false};
    std::thread checkpoints([&] {
        while (!stop)
            if (auto r = b->checkpoint(); !r) ADD_FAILURE() << r.err().message;
    });
    int64_t at = 150'000;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (b->checkpoints().moved_rows == 0 && std::chrono::steady_clock::now() < deadline) {
        expand(*t, at, at + 10, 10);
        at += 10;
        ASSERT_EQ(one(*b, "SELECT count(*) FROM s.events"), std::to_string(at));
        ASSERT_EQ(one(*b, fmt::format("SELECT count(*) || ' ' || sum(id) FROM s.events "
                                      "WHERE _offset >= {}",
                                      at - 10)),
                  fmt::format("10 {}", 10 * at - 55));
    }
    stop = true;
    checkpoints.join();
    EXPECT_GT(b->checkpoints().moved_rows, 0) << "no commit ran while a checkpoint did";
    EXPECT_EQ(one(*b, "SELECT count(*) FROM \"_sluice_delta:s.events\""), "0");
    EXPECT_EQ(one(*b, "SELECT count(*) = count(DISTINCT _offset) AND count(*) = max(_offset) + 1 "
                      "FROM s.events"),
              "true");
    EXPECT_EQ(t->load_progress()->at(0).next, at);
}

// Rows a delta held when the broker stopped (killed between a checkpoint and the move) are
// read through the target before it opens, and moved into it when it does; an expansion
// dropped without its table leaves them in the table and takes the delta with it.
TEST_F(duck_target_fixture, rows_left_in_a_delta_are_read_and_moved_when_the_target_opens) {
    {
        auto b = open_backend();
        auto t = open_target(*b);
        ASSERT_TRUE(t);
        expand(*t, 0, 100, 100);
    }
    {
        duckdb::DuckDB db((dir.path / "expansions.duckdb").string());
        duckdb::Connection con(db);  // without the delta reads: the table alone
        auto r = con.Query(
            "INSERT INTO \"_sluice_delta:s.events\" SELECT * REPLACE (_offset + 100 AS _offset) "
            "FROM s.events");
        ASSERT_FALSE(r->HasError()) << r->GetError();
    }
    auto b = open_backend();
    const auto counted = "SELECT count(*) || ' ' || count(DISTINCT _offset) || ' ' || "
                         "max(_offset) FROM s.events";
    EXPECT_EQ(one(*b, counted), "200 200 199");
    EXPECT_EQ(one(*b, "SELECT count(*) FROM s.events WHERE _offset BETWEEN 90 AND 109"), "20");
    auto t = open_target(*b, false);
    ASSERT_TRUE(t);
    EXPECT_EQ(one(*b, "SELECT count(*) FROM \"_sluice_delta:s.events\""), "0");
    EXPECT_EQ(one(*b, counted), "200 200 199");
    ASSERT_TRUE(t->remove(false));
    EXPECT_EQ(one(*b, "SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE '_sluice_delta%'"),
              "0");
    EXPECT_EQ(one(*b, counted), "200 200 199");
}

TEST_F(duck_target_fixture, a_file_of_another_format_version_is_refused) {
    {
        auto b = open_backend();
        ASSERT_TRUE(b->query("UPDATE _sluice_meta SET value = '99' WHERE key = 'format_version'"));
    }
    auto b = duck_targets::open({.file = dir.path / "expansions.duckdb"});
    ASSERT_FALSE(b);
    EXPECT_EQ(b.err().code, errc::unsupported);
}

}  // namespace
}  // namespace sluice::expansion

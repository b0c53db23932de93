// The copy of the SQLite engine's tables into the DuckDB engine's database
// (sql/duck_migration): the type mapping, values that do not fit, users' tables with their
// keys and defaults, an expansion target written by the SQLite store going on in DuckDB
// from its progress, the marker making it once, and a failed copy leaving nothing.

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fmt/format.h>

#include "../sql/sql_test_util.h"
#include "expansion/duck/duck_target.h"
#include "expansion/row_builder.h"
#include "sql/duck_migration/sqlite_to_duck.h"

namespace sluice::sql::duck_migration {
namespace {

using sql::test::temp_dir;

TEST(sqlite_to_duck, declared_types_map_to_duckdb_types) {
    const std::vector<std::pair<const char*, duck_type>> cases{
        {"INTEGER", duck_type::bigint},
        {"int", duck_type::bigint},
        {"BIGINT", duck_type::bigint},
        {"SMALLINT", duck_type::bigint},
        {"TEXT", duck_type::varchar},
        {"VARCHAR(40)", duck_type::varchar},
        {"character varying", duck_type::varchar},
        {"CLOB", duck_type::varchar},
        {"JSONB", duck_type::varchar},
        {"BLOB", duck_type::blob},
        {"bytea", duck_type::blob},
        {"REAL", duck_type::double_},
        {"DOUBLE PRECISION", duck_type::double_},
        {"FLOAT", duck_type::double_},
        {"NUMERIC(10,2)", duck_type::double_},
        {"DECIMAL", duck_type::double_},
        {"BOOLEAN", duck_type::boolean},
        {"bool", duck_type::boolean},
        {"DATE", duck_type::date},
        {"TIMESTAMP", duck_type::timestamp},
        {"DATETIME", duck_type::timestamp},
        {"TIMESTAMPTZ", duck_type::timestamptz},
        {"timestamp with time zone", duck_type::timestamptz},
        {"TIME", duck_type::time},
        {"", duck_type::dynamic},
        {"  ", duck_type::dynamic},
    };
    for (const auto& [declared, want] : cases)
        EXPECT_EQ(type_name(map_declared(declared)), type_name(want)) << declared;
}

TEST(sqlite_to_duck, values_fit_or_not) {
    using k = sqlite_value::kind;
    const sqlite_value i{k::integer, 7}, one{k::integer, 1}, big{k::integer, int64_t{1} << 60},
        r{k::real, 0, 2.5}, t{k::text, 0, 0, "abc"}, bad{k::text, 0, 0, "\xff\xfe"},
        b{k::blob, 0, 0, "\x01\x02"}, day{k::text, 0, 0, "2026-12-07"},
        ts{k::text, 0, 0, "2026-12-07 05:06:07.5"}, null{};
    EXPECT_TRUE(fits(duck_type::bigint, i));
    EXPECT_FALSE(fits(duck_type::bigint, r));
    EXPECT_FALSE(fits(duck_type::bigint, t));
    EXPECT_TRUE(fits(duck_type::double_, r));
    EXPECT_TRUE(fits(duck_type::double_, i));
    EXPECT_FALSE(fits(duck_type::double_, big));  // a double does not hold it exactly
    EXPECT_TRUE(fits(duck_type::boolean, one));
    EXPECT_FALSE(fits(duck_type::boolean, i));
    EXPECT_TRUE(fits(duck_type::varchar, t));
    EXPECT_TRUE(fits(duck_type::varchar, r));
    EXPECT_FALSE(fits(duck_type::varchar, bad));
    EXPECT_FALSE(fits(duck_type::varchar, b));
    EXPECT_TRUE(fits(duck_type::blob, bad));
    EXPECT_TRUE(fits(duck_type::blob, i));
    EXPECT_TRUE(fits(duck_type::date, day));
    EXPECT_FALSE(fits(duck_type::date, t));
    EXPECT_FALSE(fits(duck_type::date, i));
    EXPECT_TRUE(fits(duck_type::timestamp, ts));
    for (auto ty : {duck_type::bigint, duck_type::boolean, duck_type::date, duck_type::varchar})
        EXPECT_TRUE(fits(ty, null));
}

struct migration_fixture : ::testing::Test {
    void SetUp() override { std::filesystem::create_directories(dir.path / "sql" / "schemas"); }
    void sqlite(const std::string& file, const std::string& sql) {
        sqlite3* db = nullptr;
        ASSERT_EQ(sqlite3_open((dir.path / "sql" / file).c_str(), &db), SQLITE_OK);
        char* err = nullptr;
        const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
        EXPECT_EQ(rc, SQLITE_OK) << (err ? err : "");
        sqlite3_free(err);
        sqlite3_close(db);
    }
    std::filesystem::path file() const { return dir.path / "sql-duck" / "sluice.duckdb"; }
    result<report> run() { return migrate(dir.path, file(), uint64_t{256} << 20); }
    std::shared_ptr<expansion::duck_targets> open_duck() {
        auto b = expansion::duck_targets::open({.file = file()});
        EXPECT_TRUE(b) << b.err().message;
        return b ? *b : nullptr;
    }
    static std::string one(expansion::duck_targets& b, const std::string& sql) {
        auto r = b.query(sql);
        EXPECT_TRUE(r) << sql << ": " << r.err().message;
        if (!r || r->empty() || r->at(0).empty()) return "<none>";
        return r->at(0).at(0).value_or("NULL");
    }
    temp_dir dir;
};

TEST_F(migration_fixture, users_tables_are_copied_typed_once) {
    sqlite("main.db",
           "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL DEFAULT 'none', "
           "price REAL, qty INT, ok BOOLEAN, day DATE, raw BLOB, anything, label VARCHAR(8));"
           "INSERT INTO items VALUES (1, 'apple', 1.5, 3, 1, '2026-12-07', x'00ff', 5, 'a'),"
           "(2, 'pear', NULL, NULL, 0, NULL, NULL, 'text', 'b'),"
           "(7, 'fig', 2, -4, NULL, '2026-01-31', x'', NULL, 12);"
           "CREATE VIEW cheap AS SELECT * FROM items WHERE price < 2;"
           "CREATE INDEX items_qty ON items (qty);");
    sqlite("schemas/shop.db",
           "CREATE TABLE mixed (v INT, t TEXT, k TEXT PRIMARY KEY);"
           "INSERT INTO mixed VALUES (1, 'ok', 'a'), ('not a number', CAST(x'ff' AS TEXT), 'b');");
    auto r = run();
    ASSERT_TRUE(r) << r.err().message;
    EXPECT_TRUE(r->ran);
    EXPECT_EQ(r->tables, 2);
    EXPECT_EQ(r->rows, 5);
    {
        auto b = open_duck();
        ASSERT_TRUE(b);
        EXPECT_EQ(one(*b,
                      "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY "
                      "column_index) FROM duckdb_columns() WHERE table_name = 'items'"),
                  "id BIGINT, name VARCHAR, price DOUBLE, qty BIGINT, ok BOOLEAN, day DATE, "
                  "raw BLOB, anything VARCHAR, label VARCHAR");
        EXPECT_EQ(one(*b,
                      "SELECT string_agg(concat_ws('|', id, name, price, qty, ok, day, hex(raw), "
                      "anything, label), ';' ORDER BY id) FROM main.items"),
                  "1|apple|1.5|3|true|2026-12-07|00FF|5|a;2|pear|false|text|b;"
                  "7|fig|2.0|-4|2026-01-31||12");
        // The INTEGER PRIMARY KEY numbers new rows on from the highest; the default stays.
        ASSERT_TRUE(b->query("INSERT INTO main.items (price) VALUES (9)"));
        EXPECT_EQ(one(*b, "SELECT id || ' ' || name FROM main.items WHERE price = 9"), "8 none");
        EXPECT_FALSE(b->query("INSERT INTO main.items (id, name) VALUES (1, 'again')"));
        // Values that do not fit the declared type make the column wider, losing none.
        EXPECT_EQ(one(*b,
                      "SELECT string_agg(column_name || ' ' || data_type, ', ' ORDER BY "
                      "column_index) FROM duckdb_columns() WHERE table_name = 'mixed'"),
                  "v VARCHAR, t BLOB, k VARCHAR");
        EXPECT_EQ(one(*b, "SELECT string_agg(v || ' ' || hex(t), ',' ORDER BY k) FROM shop.mixed"),
                  "1 6F6B,not a number FF");
        // The marker and what was left out.
        EXPECT_EQ(one(*b,
                      "SELECT value FROM main._sluice_meta WHERE key = "
                      "'sqlite_migration_format'"),
                  "1");
        const auto rep =
            one(*b, "SELECT value FROM main._sluice_meta WHERE key = 'sqlite_migration'");
        EXPECT_NE(rep.find("view main.cheap not copied"), std::string::npos) << rep;
        EXPECT_NE(rep.find("index main.items_qty not copied"), std::string::npos) << rep;
        EXPECT_NE(rep.find("shop.mixed.v is VARCHAR"), std::string::npos) << rep;
        ASSERT_TRUE(b->query("DELETE FROM main.items"));
    }
    // Once: a second start copies nothing, even with the DuckDB table emptied.
    sqlite("main.db", "INSERT INTO items (id, name) VALUES (100, 'later');");
    auto again = run();
    ASSERT_TRUE(again) << again.err().message;
    EXPECT_FALSE(again->ran);
    auto b = open_duck();
    EXPECT_EQ(one(*b, "SELECT count(*) FROM main.items"), "0");
}

TEST_F(migration_fixture, a_failed_copy_leaves_nothing) {
    sqlite("main.db",
           "CREATE TABLE fine (a INT); INSERT INTO fine VALUES (1);"
           // 1 and '1' differ in SQLite; as the VARCHAR the column becomes, they collide.
           "CREATE TABLE clash (k PRIMARY KEY); INSERT INTO clash VALUES (1), ('1');");
    auto r = run();
    ASSERT_FALSE(r);
    EXPECT_NE(r.err().message.find("nothing was copied"), std::string::npos) << r.err().message;
    auto b = open_duck();
    ASSERT_TRUE(b);
    EXPECT_EQ(one(*b, "SELECT count(*) FROM duckdb_tables() WHERE table_name IN ('fine', 'clash')"),
              "0");
    EXPECT_EQ(one(*b, "SELECT count(*) FROM main._sluice_meta WHERE key LIKE 'sqlite_migration%'"),
              "0");
}

TEST_F(migration_fixture, an_expansion_target_goes_on_from_its_progress) {
    auto fields = expansion::parse_schema(
        R"({"fields": [{"name": "id", "type": "int64"}, {"name": "ok", "type": "bool"}],
            "key": {"type": "string"}})");
    ASSERT_TRUE(fields) << fields.err().message;
    auto l = expansion::layout::make(*fields, {.flatten = false, .copy_source = true});
    ASSERT_TRUE(l) << l.err().message;
    expansion::row_builder builder(*fields, *l);
    const auto expand = [&](expansion::target_store& t, int64_t from, int64_t to) {
        auto r = t.in_transaction([&]() -> result<void> {
            for (int64_t i = from; i < to; ++i) {
                const auto v =
                    fmt::format(R"({{"id": {}, "ok": {}}})", i, i % 2 ? "true" : "false");
                const auto k = "k" + std::to_string(i);
                const bytes_view vv{reinterpret_cast<const uint8_t*>(v.data()), v.size()};
                const bytes_view kv{reinterpret_cast<const uint8_t*>(k.data()), k.size()};
                if (auto row = t.insert(0, i, 1000 + i, builder.build(vv), vv, kv); !row)
                    return row;
            }
            return t.save_progress(0, {.next = to});
        });
        ASSERT_TRUE(r) << r.err().message;
    };
    // The file an older broker's SQLite engine wrote for an expansion's target, as
    // docs/formats/expansion-progress.md and sql-dir.md say: 100 events expanded.
    sqlite("schemas/cdc.db", R"(
        CREATE TABLE _sluice_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        INSERT INTO _sluice_meta VALUES ('expansion_progress_format', '1');
        CREATE TABLE _sluice_expansion_progress (target TEXT NOT NULL,
            partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
            backfill_start INTEGER NOT NULL, backfill_next INTEGER NOT NULL,
            backfill_end INTEGER NOT NULL, PRIMARY KEY (target, partition)) WITHOUT ROWID;
        CREATE TABLE events (_partition INTEGER NOT NULL, _offset INTEGER NOT NULL,
            _timestamp_broker INTEGER NOT NULL, id INTEGER, ok BOOLEAN,
            _missing_fields INTEGER NOT NULL, _excess_fields INTEGER NOT NULL,
            _type_errors INTEGER NOT NULL, _parse_error INTEGER NOT NULL, _source TEXT,
            _key TEXT);
        CREATE INDEX _sluice_position_events ON events (_partition, _offset);
        WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 99)
        INSERT INTO events SELECT 0, i, 1000 + i, i, i % 2, 0, 0, 0, 0,
            json_object('id', i, 'ok', json(CASE WHEN i % 2 THEN 'true' ELSE 'false' END)),
            'k' || i FROM n;
        INSERT INTO _sluice_expansion_progress VALUES ('events', 0, 100, 0, 0, 0);)");
    sqlite("main.db", "CREATE TABLE notes (n TEXT);");
    auto r = run();
    ASSERT_TRUE(r) << r.err().message;
    EXPECT_EQ(r->progress_rows, 1);
    auto b = open_duck();
    ASSERT_TRUE(b);
    auto t = b->open("cdc", "events", *l, false);
    ASSERT_TRUE(t) << t.err().message;
    EXPECT_EQ((*t)->load_progress()->at(0).next, 100);
    expand(**t, 100, 150);
    EXPECT_EQ(one(*b,
                  "SELECT count(*) = 150 AND count(DISTINCT _offset) = 150 AND sum(id) = 11175 AND "
                  "count(*) FILTER (WHERE ok) = 75 AND max(decode(_source)) LIKE '{%' "
                  "FROM cdc.events"),
              "true");
    EXPECT_EQ(one(*b, "SELECT _key FROM cdc.events WHERE _offset = 42"), "k42");
}

}  // namespace
}  // namespace sluice::sql::duck_migration

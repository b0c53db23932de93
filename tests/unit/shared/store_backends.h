#pragma once

// The metadata stores of both implementations behind one fixture template, so that one
// behavioural test runs against each: local_backend (the embedded SQLite catalog in a
// fresh directory) and pg_backend (the shared catalog in the PostgreSQL database named by
// SLUICE_TEST_PG_URL, its tables dropped and created again for every test;
// tests/integration/test_shared_stores.py starts Debian's PostgreSQL and runs this binary
// with it set, and fails if any test was skipped). reopen() makes every store again, as a
// restart does.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "catalog/catalog.h"
#include "catalog/group_store.h"
#include "catalog/offset_store.h"
#include "catalog/share_store.h"
#include "catalog/txn_store.h"
#include "shared/catalog_schema.h"
#include "shared/pg_expansion_store.h"
#include "shared/pg_group_store.h"
#include "shared/pg_metadata.h"
#include "shared/pg_offset_store.h"
#include "shared/pg_security_store.h"
#include "shared/pg_share_store.h"
#include "shared/pg_topic_store.h"
#include "shared/pg_txn_store.h"

namespace sluice::shared::testing {

// What a test sees of either implementation.
struct stores {
    catalog::topic_store* topics = nullptr;
    catalog::producer_id_allocator* producer_ids = nullptr;
    catalog::broker_config_store* broker_configs = nullptr;
    catalog::security_store* security = nullptr;
    catalog::expansion_store* expansions = nullptr;
    std::unique_ptr<catalog::offset_store> offsets;
    std::unique_ptr<group::state_store> groups;
    std::unique_ptr<txn::state_store> txns;
    std::unique_ptr<group::share::partition_store> shares;
};

class local_backend {
  public:
    static constexpr const char* name = "local";
    void set_up() {
        namespace fs = std::filesystem;
        std::string tmpl = (fs::path(::testing::TempDir()) / "stores.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
    }
    void tear_down() {
        _cat.reset();
        std::filesystem::remove_all(_dir);
    }
    void open(stores& s) {
        s = {};
        _cat.reset();
        auto c = catalog::catalog::open(_dir / "catalog.db");
        ASSERT_TRUE(c.ok()) << c.err().message;
        _cat = std::move(*c);
        s.topics = _cat.get();
        s.producer_ids = _cat.get();
        s.broker_configs = _cat.get();
        s.security = _cat.get();
        s.expansions = _cat.get();
        auto o = catalog::local_offset_store::open(_dir / "catalog.db");
        ASSERT_TRUE(o.ok()) << o.err().message;
        s.offsets = std::move(*o);
        auto g = catalog::group_store::open(_dir / "catalog.db");
        ASSERT_TRUE(g.ok()) << g.err().message;
        s.groups = std::move(*g);
        auto t = catalog::txn_store::open(_dir / "catalog.db");
        ASSERT_TRUE(t.ok()) << t.err().message;
        s.txns = std::move(*t);
        auto sh = catalog::share_store::open(_dir / "catalog.db");
        ASSERT_TRUE(sh.ok()) << sh.err().message;
        s.shares = std::move(*sh);
    }

  private:
    std::filesystem::path _dir;
    std::unique_ptr<catalog::catalog> _cat;
};

// The URL of the test database, or "" (then the PostgreSQL tests are skipped).
inline std::string test_pg_url() {
    const char* url = std::getenv("SLUICE_TEST_PG_URL");
    return url != nullptr ? url : "";
}

// An empty shared catalog at this build's version in the test database.
inline void reset_pg_catalog(const pg_config& cfg) {
    auto db = pg_database::connect(cfg);
    ASSERT_TRUE(db.ok()) << db.err().message;
    auto r = (*db)->exec("DROP SCHEMA public CASCADE");
    ASSERT_TRUE(r.ok()) << r.err().message;
    r = (*db)->exec("CREATE SCHEMA public");
    ASSERT_TRUE(r.ok()) << r.err().message;
    auto v = ensure_catalog_schema(**db);
    ASSERT_TRUE(v.ok()) << v.err().message;
}

class pg_backend {
  public:
    static constexpr const char* name = "postgresql";
    void set_up() {
        _cfg.url = test_pg_url();
        if (_cfg.url.empty()) GTEST_SKIP() << "SLUICE_TEST_PG_URL is not set";
        _cfg.retry_deadline = std::chrono::milliseconds(10000);
        reset_pg_catalog(_cfg);
    }
    void tear_down() {}
    void open(stores& s) {
        s = {};
        auto t = pg_topic_store::open(_cfg);
        ASSERT_TRUE(t.ok()) << t.err().message;
        _topics = std::move(*t);
        auto p = pg_producer_ids::open(_cfg, 3);  // small blocks: tests cross them
        ASSERT_TRUE(p.ok()) << p.err().message;
        _ids = std::move(*p);
        auto b = pg_broker_config_store::open(_cfg, 1);
        ASSERT_TRUE(b.ok()) << b.err().message;
        _configs = std::move(*b);
        auto sec = pg_security_store::open(_cfg);
        ASSERT_TRUE(sec.ok()) << sec.err().message;
        _security = std::move(*sec);
        auto exp = pg_expansion_store::open(_cfg);
        ASSERT_TRUE(exp.ok()) << exp.err().message;
        _expansions = std::move(*exp);
        s.topics = _topics.get();
        s.producer_ids = _ids.get();
        s.broker_configs = _configs.get();
        s.security = _security.get();
        s.expansions = _expansions.get();
        auto o = pg_offset_store::open(_cfg);
        ASSERT_TRUE(o.ok()) << o.err().message;
        s.offsets = std::move(*o);
        auto g = pg_group_store::open(_cfg);
        ASSERT_TRUE(g.ok()) << g.err().message;
        s.groups = std::move(*g);
        auto x = pg_txn_store::open(_cfg);
        ASSERT_TRUE(x.ok()) << x.err().message;
        s.txns = std::move(*x);
        auto sh = pg_share_store::open(_cfg);
        ASSERT_TRUE(sh.ok()) << sh.err().message;
        s.shares = std::move(*sh);
    }
    const pg_config& config() const { return _cfg; }

  private:
    pg_config _cfg;
    std::unique_ptr<pg_topic_store> _topics;
    std::unique_ptr<pg_producer_ids> _ids;
    std::unique_ptr<pg_broker_config_store> _configs;
    std::unique_ptr<pg_security_store> _security;
    std::unique_ptr<pg_expansion_store> _expansions;
};

// A test of the shared catalog alone: an empty catalog in the test database (skipped
// without one), and connections to it.
class pg_catalog_test : public ::testing::Test {
  protected:
    void SetUp() override {
        _cfg.url = test_pg_url();
        if (_cfg.url.empty()) GTEST_SKIP() << "SLUICE_TEST_PG_URL is not set";
        _cfg.retry_deadline = std::chrono::milliseconds(10000);
        reset_pg_catalog(_cfg);
    }
    std::unique_ptr<pg_database> connect() {
        auto db = pg_database::connect(_cfg);
        EXPECT_TRUE(db.ok()) << db.err().message;
        return db.ok() ? std::move(*db) : nullptr;
    }
    pg_config _cfg;
};

template <typename Backend>
class store_test : public ::testing::Test {
  protected:
    void SetUp() override {
        _backend.set_up();
        if (IsSkipped() || HasFatalFailure()) return;
        reopen();
    }
    void TearDown() override {
        _s = {};
        _backend.tear_down();
    }
    void reopen() { _backend.open(_s); }

    Backend _backend;
    stores _s;
};

struct backend_names {
    template <typename T>
    static std::string GetName(int) {
        return T::name;
    }
};
using backends = ::testing::Types<local_backend, pg_backend>;

}  // namespace sluice::shared::testing

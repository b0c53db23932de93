#pragma once

// A catalog file in a fresh directory with a store of type Store opened on it (group_store,
// txn_store: each opens its own connection to the catalog file); reopen() opens the store
// again, as a restart does.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "catalog/catalog.h"

namespace sluice::catalog {

template <typename Store>
class store_fixture : public ::testing::Test {
  protected:
    void SetUp() override {
        namespace fs = std::filesystem;
        std::string tmpl = (fs::path(::testing::TempDir()) / "store_test.XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        _dir = tmpl;
        auto c = catalog::open(_dir / "catalog.db");
        ASSERT_TRUE(c.ok()) << c.err().message;
        _cat = std::move(*c);
        reopen();
    }
    void TearDown() override {
        _store.reset();
        _cat.reset();
        std::filesystem::remove_all(_dir);
    }
    void reopen() {
        _store.reset();
        auto s = Store::open(_dir / "catalog.db");
        ASSERT_TRUE(s.ok()) << s.err().message;
        _store = std::move(*s);
    }
    // Everything the store holds; empty (and a failed test) when loading fails.
    auto load() {
        auto r = _store->load();
        EXPECT_TRUE(r.ok()) << r.err().message;
        return r.ok() ? *r : typename std::remove_cvref_t<decltype(*r)>{};
    }

    std::filesystem::path _dir;
    std::unique_ptr<catalog> _cat;
    std::unique_ptr<Store> _store;
};

}  // namespace sluice::catalog

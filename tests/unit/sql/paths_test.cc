// hide_paths: SQL error messages name no server path, and a short relative data
// directory ("data", "d") neither hangs the session (the placeholder contains it) nor
// eats the words of the message.

#include <gtest/gtest.h>

#include <string>

#include "sql/sqlite_session.h"

namespace sluice::sql {
namespace {

TEST(hide_paths, absolute_paths_anywhere) {
    EXPECT_EQ(hide_paths("unable to open database file: /var/lib/sluice/sql/schemas/x.db",
                         {"/var/lib/sluice", "/var/lib/sluice/sql"}),
              "unable to open database file: <data-dir>/schemas/x.db");
    EXPECT_EQ(hide_paths("/srv/d and /srv/d/sql/main.db", {"/srv/d"}), "<data-dir> and <data-dir>/sql/main.db");
}

TEST(hide_paths, relative_paths_only_as_paths) {
    // The placeholder contains "d", "data" and "a": each replaced once, never looped on.
    EXPECT_EQ(hide_paths("database or disk is full: d/sql/main.db", {"d", "d/sql"}),
              "database or disk is full: <data-dir>/main.db");
    EXPECT_EQ(hide_paths("no such table: data_points in 'data/sql/x.db'", {"data", "a"}),
              "no such table: data_points in '<data-dir>/sql/x.db'");
    EXPECT_EQ(hide_paths("near \"data\": syntax error", {"data"}), "near \"data\": syntax error");
    EXPECT_EQ(hide_paths("metadata/x", {"data"}), "metadata/x");
    EXPECT_EQ(hide_paths("x", {"", ".", "/"}), "x");
}

}  // namespace
}  // namespace sluice::sql

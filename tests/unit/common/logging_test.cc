#include "common/logging.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace sluice {
namespace {

TEST(logging, components_are_ordered_and_unique) {
    const auto& c = log_components();
    EXPECT_TRUE(std::is_sorted(c.begin(), c.end()));
    EXPECT_EQ(std::adjacent_find(c.begin(), c.end()), c.end());
}

TEST(logging, a_component_level_overrides_the_root_until_removed) {
    set_log_level(log_level::info);
    EXPECT_FALSE(log_enabled(log_level::debug, "group"));
    ASSERT_TRUE(set_component_level("group", log_level::debug));
    EXPECT_TRUE(log_enabled(log_level::debug, "group"));
    EXPECT_FALSE(log_enabled(log_level::debug, "fetch"));
    EXPECT_EQ(effective_level("group"), log_level::debug);
    // Quieter than the root too.
    ASSERT_TRUE(set_component_level("fetch", log_level::error));
    EXPECT_FALSE(log_enabled(log_level::warn, "fetch"));
    EXPECT_TRUE(log_enabled(log_level::warn, "net"));
    ASSERT_TRUE(set_component_level("group", std::nullopt));
    ASSERT_TRUE(set_component_level("fetch", std::nullopt));
    EXPECT_FALSE(log_enabled(log_level::debug, "group"));
    EXPECT_EQ(component_level("group"), std::nullopt);
    // An unknown component follows the root and cannot be given a level.
    EXPECT_FALSE(set_component_level("nosuch", log_level::trace));
    EXPECT_TRUE(log_enabled(log_level::info, "nosuch"));
    EXPECT_FALSE(log_enabled(log_level::debug, "nosuch"));
}

TEST(logging, fatal_writes_nothing_of_sluice) {
    ASSERT_TRUE(set_component_level("net", log_level::fatal));
    EXPECT_FALSE(log_enabled(log_level::error, "net"));
    ASSERT_TRUE(set_component_level("net", std::nullopt));
    log_level l;
    ASSERT_TRUE(parse_log_level("Fatal", l));
    EXPECT_EQ(l, log_level::fatal);
    EXPECT_STREQ(log_level_name(log_level::warn), "WARN");
}

}  // namespace
}  // namespace sluice

// keyed_log_throttle: one line per key and interval, with a bounded number of keys.

#include <gtest/gtest.h>

#include <string>

#include "net/log_throttle.h"

namespace sluice::net {
namespace {

using namespace std::chrono_literals;

TEST(keyed_log_throttle, once_per_key_and_interval) {
    keyed_log_throttle t(60s, 100);
    const auto t0 = keyed_log_throttle::clock::now();
    EXPECT_TRUE(t.allow("a", t0));
    EXPECT_FALSE(t.allow("a", t0 + 1s));
    EXPECT_TRUE(t.allow("b", t0 + 1s));
    EXPECT_FALSE(t.allow("a", t0 + 59s));
    EXPECT_TRUE(t.allow("a", t0 + 60s));
    EXPECT_FALSE(t.allow("b", t0 + 60s));
}

TEST(keyed_log_throttle, keys_are_bounded_and_the_rest_share_one_line) {
    keyed_log_throttle t(60s, 10);
    const auto t0 = keyed_log_throttle::clock::now();
    for (int i = 0; i < 10; ++i) EXPECT_TRUE(t.allow("topic-" + std::to_string(i), t0));
    // A client naming random topics: the table stays at its bound, one line a minute.
    int logged = 0;
    for (int i = 10; i < 10'000; ++i) logged += t.allow("topic-" + std::to_string(i), t0 + 1s);
    EXPECT_EQ(logged, 1);
    EXPECT_EQ(t.remembered(), 10u);
    // Once the remembered keys are past their interval they are forgotten for new ones.
    EXPECT_TRUE(t.allow("late", t0 + 61s));
    EXPECT_EQ(t.remembered(), 1u);
    EXPECT_FALSE(t.allow("late", t0 + 62s));
}

}  // namespace
}  // namespace sluice::net

// net::byte_budget: the request budget shared by Kafka connections.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "net/byte_budget.h"

namespace sluice::net {
namespace {

TEST(ByteBudget, AcquiresWhatFitsAndNothingBeyond) {
    byte_budget b(100);
    EXPECT_TRUE(b.try_acquire(60));
    EXPECT_TRUE(b.try_acquire(40));
    EXPECT_EQ(b.used(), 100u);
    EXPECT_FALSE(b.try_acquire(1));
    EXPECT_EQ(b.used(), 100u);  // a refusal takes nothing
    b.release(40);
    EXPECT_EQ(b.used(), 60u);
    EXPECT_FALSE(b.try_acquire(41));
    EXPECT_TRUE(b.try_acquire(40));
}

TEST(ByteBudget, MoreThanTheCapacityNeverFits) {
    byte_budget b(100);
    EXPECT_FALSE(b.try_acquire(101));
    EXPECT_EQ(b.used(), 0u);
}

// Waiters are granted in arrival order as bytes free, each once, and only when their
// whole request fits.
TEST(ByteBudget, WaitersAreGrantedInOrderAsBytesFree) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(90));
    std::vector<std::string> granted;
    ASSERT_FALSE(b.try_acquire(50));
    b.wait(50, [&] { granted.push_back("a50"); });
    ASSERT_FALSE(b.try_acquire(30));
    b.wait(30, [&] { granted.push_back("b30"); });
    EXPECT_EQ(b.waiting(), 2u);
    b.release(30);  // 40 free: a (50) does not fit, and b may not pass it
    EXPECT_TRUE(granted.empty());
    EXPECT_EQ(b.used(), 60u);
    b.release(60);  // 100 free: a then b
    EXPECT_EQ(granted, (std::vector<std::string>{"a50", "b30"}));
    EXPECT_EQ(b.used(), 80u);
    EXPECT_EQ(b.waiting(), 0u);
}

// Nobody jumps the queue: while one waits, a request that would fit is refused too, so
// that a large request is not starved by a stream of small ones.
TEST(ByteBudget, NoneJumpsTheQueue) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(80));
    bool big = false;
    ASSERT_FALSE(b.try_acquire(70));
    b.wait(70, [&] { big = true; });
    EXPECT_FALSE(b.try_acquire(10));  // 20 are free, but the 70 waits first
    b.release(80);
    EXPECT_TRUE(big);
    EXPECT_EQ(b.used(), 70u);
    EXPECT_TRUE(b.try_acquire(10));
}

// A waiter that leaves (its connection closed) takes nothing, and the one behind it is
// granted at once when it fits.
TEST(ByteBudget, CancelledWaiterLetsTheNextOneIn) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(50));
    bool first = false, second = false;
    auto id = b.wait(80, [&] { first = true; });
    b.wait(40, [&] { second = true; });
    EXPECT_TRUE(b.cancel(id));
    EXPECT_FALSE(first);
    EXPECT_TRUE(second);
    EXPECT_EQ(b.used(), 90u);
    EXPECT_FALSE(b.cancel(id));  // not waiting any more
}

// A granted waiter may give its bytes back from its callback (its connection closed
// meanwhile); the next waiter is then granted in the same pass, without recursion.
TEST(ByteBudget, GrantedWaiterMayReleaseFromItsCallback) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(100));
    bool second = false;
    b.wait(100, [&] { b.release(100); });
    b.wait(100, [&] { second = true; });
    b.release(100);
    EXPECT_TRUE(second);
    EXPECT_EQ(b.used(), 100u);
    EXPECT_EQ(b.waiting(), 0u);
}

// A small request takes what fits ahead of the waiters, never more than the capacity.
TEST(ByteBudget, SmallRequestsGoAheadOfWaitersWithinTheCapacity) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(50));
    bool granted = false;
    b.wait(80, [&] { granted = true; });
    EXPECT_FALSE(b.try_acquire(10));  // the line is respected
    EXPECT_TRUE(b.try_acquire_small(30));
    EXPECT_FALSE(b.try_acquire_small(21));  // 80 used
    EXPECT_EQ(b.used(), 80u);
    b.release(50);
    EXPECT_FALSE(granted);  // 30 still held: 80 does not fit yet
    b.release(30);
    EXPECT_TRUE(granted);
    EXPECT_EQ(b.used(), 80u);
}

// What waiting requests hold already is bounded by the capacity, apart from `used`.
TEST(ByteBudget, WaitingRoomHoldsAtMostTheCapacity) {
    byte_budget b(100);
    ASSERT_TRUE(b.try_acquire(100));
    EXPECT_TRUE(b.try_hold_waiting(60));
    EXPECT_FALSE(b.try_hold_waiting(41));
    EXPECT_EQ(b.held_waiting(), 60u);  // a refusal holds nothing
    EXPECT_TRUE(b.try_hold_waiting(40));
    b.release_waiting(60);
    EXPECT_EQ(b.held_waiting(), 40u);
    EXPECT_EQ(b.used(), 100u);
}

}  // namespace
}  // namespace sluice::net

// net::in_flight_bound: the bytes of requests read and not yet answered, all connections
// together, and which connections read on when they near it.

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "net/in_flight_bound.h"

namespace sluice::net {
namespace {

using account = in_flight_bound::account;

// A connection as the broker's session drives one: it reads a request while the bound
// lets it, and its `room` records that it was told to read again.
struct conn {
    conn(const std::shared_ptr<in_flight_bound>& b, std::string name,
         std::vector<std::string>* woken)
        : acct(b, [this, woken, name] {
              ++rooms;
              if (woken) woken->push_back(name);
          }) {}
    // Reads requests of n bytes until told to stop; returns how many it read.
    int read_while_allowed(size_t n, int most = 1000) {
        int read = 0;
        while (read < most) {
            acct.add(n);
            ++read;
            if (!acct.may_read()) break;
        }
        return read;
    }
    int rooms = 0;
    account acct;
};

TEST(InFlightBound, AccountsAddUpAndGiveBackAtTheEnd) {
    auto b = std::make_shared<in_flight_bound>(1000);
    {
        account a(b, {});
        account c(b, {});
        a.add(100);
        a.add(50);
        c.add(30);
        EXPECT_EQ(b->used(), 180u);
        EXPECT_EQ(b->holders(), 2u);
        a.release(100);
        EXPECT_EQ(a.held(), 50u);
        EXPECT_EQ(b->used(), 80u);
        c.release(30);
        EXPECT_EQ(b->holders(), 1u);
        EXPECT_EQ(b->peak(), 180u);
    }
    // A connection that closes gives back what it held.
    EXPECT_EQ(b->used(), 0u);
    EXPECT_EQ(b->holders(), 0u);
}

TEST(InFlightBound, BelowHalfEveryoneReadsAtTheBoundNobodyHoldingDoes) {
    auto b = std::make_shared<in_flight_bound>(1000);
    account a(b, {});
    a.add(499);
    EXPECT_TRUE(a.may_read());  // below half, its share does not matter
    a.add(400);
    EXPECT_TRUE(a.may_read());  // alone, its share is the whole bound
    a.add(101);
    EXPECT_FALSE(a.may_read());  // at the bound
    EXPECT_EQ(b->waiting(), 1u);
    EXPECT_EQ(b->stops(), 1u);
    EXPECT_FALSE(a.may_read());  // asking again while in line is not another stop
    EXPECT_EQ(b->stops(), 1u);
}

// A connection holding nothing may always read one request, however full the bound is.
TEST(InFlightBound, AConnectionHoldingNothingMayAlwaysReadOne) {
    auto b = std::make_shared<in_flight_bound>(1000);
    account greedy(b, {});
    greedy.add(5000);  // one request may pass the bound
    EXPECT_FALSE(greedy.may_read());
    account small(b, {});
    EXPECT_TRUE(small.may_read());
    small.add(10);
    EXPECT_FALSE(small.may_read());  // the second waits for the bound
    EXPECT_EQ(b->waiting(), 2u);
}

// From half the bound on, a connection over its fair share stops while the others read
// on, so that one greedy client cannot take the bound from them.
TEST(InFlightBound, OverItsShareAConnectionStopsFirst) {
    auto b = std::make_shared<in_flight_bound>(1000);
    std::vector<std::string> woken;
    conn greedy(b, "greedy", &woken);
    conn other(b, "other", &woken);
    other.acct.add(10);
    // Two connections hold something: shares of 500 each, applied from 500 on.
    EXPECT_EQ(greedy.read_while_allowed(100), 5);  // stops holding its share, 500
    EXPECT_EQ(b->fair_share(), 500u);
    EXPECT_EQ(b->used(), 510u);
    EXPECT_TRUE(other.acct.may_read());  // 10 is under its share: it reads on
    EXPECT_EQ(other.read_while_allowed(100), 5);  // until the bound stops it: 510 + 500
    EXPECT_EQ(b->used(), 1010u);
    EXPECT_EQ(other.acct.held(), 510u);
    EXPECT_EQ(b->waiting(), 2u);
    // An answer to `other` takes the total below the bound: `other` is under its share
    // and reads again; `greedy` still holds its own.
    other.acct.release(100);
    EXPECT_EQ(woken, std::vector<std::string>{"other"});
    EXPECT_EQ(b->waiting(), 1u);
    // Below half, every connection reads.
    greedy.acct.release(450);
    EXPECT_EQ(b->used(), 460u);
    EXPECT_EQ(woken, (std::vector<std::string>{"other", "greedy"}));
    EXPECT_EQ(b->waiting(), 0u);
}

// As answers go out the connections in line are told, in the order they stopped, each
// once; none is told while the bound is still spent.
TEST(InFlightBound, ConnectionsInLineReadAgainInOrderAsAnswersGoOut) {
    auto b = std::make_shared<in_flight_bound>(1000);
    std::vector<std::string> woken;
    conn first(b, "first", &woken);
    conn second(b, "second", &woken);
    conn third(b, "third", &woken);
    first.acct.add(400);
    second.acct.add(400);
    third.acct.add(400);
    EXPECT_FALSE(second.acct.may_read());
    EXPECT_FALSE(first.acct.may_read());
    EXPECT_FALSE(third.acct.may_read());
    third.acct.release(150);  // 1050: still at the bound
    EXPECT_TRUE(woken.empty());
    // 850, over half: shares of 333; second (200) and third (250) are under theirs, and
    // are told in the order they stopped; first (400) is not.
    second.acct.release(200);
    EXPECT_EQ(woken, (std::vector<std::string>{"second", "third"}));
    first.acct.release(300);  // 550: first (100) too
    EXPECT_EQ(woken, (std::vector<std::string>{"second", "third", "first"}));
    EXPECT_EQ(second.rooms + third.rooms + first.rooms, 3);
    EXPECT_EQ(b->waiting(), 0u);
}

// A connection in line whose requests are all answered may read again at once, even
// while the others keep the bound spent.
TEST(InFlightBound, AConnectionInLineThatHoldsNothingReadsAgain) {
    auto b = std::make_shared<in_flight_bound>(1000);
    conn greedy(b, "greedy", nullptr);
    conn small(b, "small", nullptr);
    greedy.acct.add(2000);
    small.acct.add(10);
    EXPECT_FALSE(small.acct.may_read());
    small.acct.release(10);
    EXPECT_EQ(small.rooms, 1);
    EXPECT_EQ(greedy.rooms, 0);
    EXPECT_EQ(b->waiting(), 0u);
    EXPECT_TRUE(small.acct.may_read());
}

// A connection that closes while in line leaves it; what it held lets the others read.
TEST(InFlightBound, AClosedConnectionLeavesTheLine) {
    auto b = std::make_shared<in_flight_bound>(1000);
    conn stays(b, "stays", nullptr);
    stays.acct.add(300);
    {
        conn leaves(b, "leaves", nullptr);
        leaves.acct.add(900);
        EXPECT_FALSE(leaves.acct.may_read());
        EXPECT_FALSE(stays.acct.may_read());
        EXPECT_EQ(b->waiting(), 2u);
    }
    EXPECT_EQ(b->used(), 300u);
    EXPECT_EQ(b->waiting(), 0u);
    EXPECT_EQ(stays.rooms, 1);
}

// The bound's promise, with many connections reading as it lets them and answers going
// out in between: the total never passes the bound plus one request per connection.
TEST(InFlightBound, HeldBytesStayWithinTheBoundPlusOneRequestPerConnection) {
    constexpr size_t cap = 10'000;
    constexpr size_t request = 700;
    auto b = std::make_shared<in_flight_bound>(cap);
    std::vector<std::unique_ptr<conn>> conns;
    for (int i = 0; i < 8; ++i) conns.push_back(std::make_unique<conn>(b, "c", nullptr));
    for (int round = 0; round < 200; ++round) {
        // Every connection not in line reads one request.
        for (auto& c : conns) {
            if (c->acct.in_line()) continue;
            c->acct.add(request);
            EXPECT_LE(b->used(), cap + conns.size() * request);
            (void)c->acct.may_read();
        }
        // One connection in turn gets its oldest request answered.
        auto& c = conns[round % conns.size()];
        c->acct.release(std::min(request, c->acct.held()));
    }
    EXPECT_LE(b->peak(), cap + conns.size() * request);
    EXPECT_GE(b->peak(), cap);  // the bound was reached, not just approached
    EXPECT_GT(b->stops(), 0u);
}

}  // namespace
}  // namespace sluice::net

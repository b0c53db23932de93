// Rendezvous placement: every broker computes the same owner; keys spread evenly; a
// broker leaving moves only its own keys, one joining takes about 1/N.

#include "shared/placement.h"

#include <gtest/gtest.h>

#include <map>

namespace sluice::shared {
namespace {

std::map<std::string, int32_t> owners(const std::vector<int32_t>& brokers, int keys) {
    std::map<std::string, int32_t> out;
    for (int i = 0; i < keys; ++i) {
        auto k = partition_key("0123456789abcdef0123456789abcdef", i);
        out[k] = *place(k, brokers);
    }
    return out;
}

TEST(placement, no_broker_no_owner_and_one_broker_owns_everything) {
    EXPECT_FALSE(place("p/x/0", {}).has_value());
    std::vector<int32_t> one{7};
    for (const auto& [_, b] : owners(one, 50)) EXPECT_EQ(b, 7);
}

TEST(placement, the_answer_depends_on_the_set_not_the_order) {
    std::vector<int32_t> a{1, 2, 3, 4};
    std::vector<int32_t> b{4, 2, 3, 1, 2};
    EXPECT_EQ(owners(a, 500), owners(b, 500));
    EXPECT_EQ(rank("g/app", a), rank("g/app", b));
    EXPECT_EQ(rank("g/app", b).size(), 4u);
    EXPECT_EQ(rank("g/app", a).front(), *place("g/app", a));
}

TEST(placement, the_hash_is_fixed) {
    // Brokers of any build must agree: these values may never change (computed
    // independently from the definition in placement.h).
    EXPECT_EQ(placement_weight("g/app", 1), 3186677766432852382ULL);
    EXPECT_EQ(placement_weight("g/app", 2), 5260171696592652439ULL);
    EXPECT_EQ(placement_weight("p/0123456789abcdef0123456789abcdef/0", 0), 18307050417746241180ULL);
    EXPECT_EQ(partition_key("ab", 3), "p/ab/3");
    EXPECT_EQ(group_key("app"), "g/app");
    EXPECT_EQ(transaction_key("app"), "t/app");
    std::vector<int32_t> three{0, 1, 2};
    EXPECT_EQ(place("g/orders-consumers", three), 1);
}

TEST(placement, keys_spread_evenly_over_the_brokers) {
    std::vector<int32_t> brokers{1, 2, 3};
    std::map<int32_t, int> count;
    for (const auto& [_, b] : owners(brokers, 3000)) ++count[b];
    for (int32_t b : brokers) {
        EXPECT_GT(count[b], 850) << "broker " << b;
        EXPECT_LT(count[b], 1150) << "broker " << b;
    }
    std::map<int32_t, int> groups;
    for (int i = 0; i < 3000; ++i)
        ++groups[*place(group_key("group-" + std::to_string(i)), brokers)];
    for (int32_t b : brokers) EXPECT_GT(groups[b], 850) << "broker " << b;
}

TEST(placement, a_broker_leaving_moves_only_its_keys_to_its_runner_up) {
    std::vector<int32_t> all{1, 2, 3, 4};
    std::vector<int32_t> without3{1, 2, 4};
    auto before = owners(all, 2000);
    auto after = owners(without3, 2000);
    int moved = 0;
    for (const auto& [k, b] : before) {
        if (b != 3) {
            EXPECT_EQ(after[k], b) << k;
        } else {
            ++moved;
            EXPECT_EQ(after[k], rank(k, all)[1]) << k;
        }
    }
    EXPECT_GT(moved, 400);
    // Joining again gives each key back to its old owner.
    EXPECT_EQ(owners(all, 2000), before);
}

TEST(placement, a_broker_joining_takes_about_a_share) {
    auto before = owners({1, 2, 3}, 3000);
    auto after = owners({1, 2, 3, 4}, 3000);
    int taken = 0;
    for (const auto& [k, b] : after) {
        if (b == 4)
            ++taken;
        else
            EXPECT_EQ(before[k], b) << k;  // nothing moves between the old brokers
    }
    EXPECT_GT(taken, 600);
    EXPECT_LT(taken, 900);
}

// A group key placed on `owner` among {1, 2, 3}.
std::string group_on(int32_t owner, const std::vector<int32_t>& live) {
    for (int i = 0;; ++i) {
        auto k = group_key("g" + std::to_string(i));
        if (place(k, live) == owner) return k;
    }
}

TEST(placement, a_group_is_coordinated_only_where_placement_puts_it) {
    const std::vector<int32_t> live{1, 2, 3};
    const auto k = group_on(2, live);
    EXPECT_EQ(coordination_of(k, {2, true, live, std::nullopt}), coordination::here);
    EXPECT_EQ(coordination_of(k, {1, true, live, std::nullopt}), coordination::elsewhere);
    EXPECT_EQ(coordination_of(k, {3, true, live, std::nullopt}), coordination::elsewhere);
}

TEST(placement, a_broker_whose_lease_lapsed_coordinates_nothing) {
    const std::vector<int32_t> live{1, 2, 3};
    for (int32_t owner : live) {
        const auto k = group_on(owner, live);
        EXPECT_EQ(coordination_of(k, {owner, false, live, std::nullopt}),
                  coordination::unavailable);
        EXPECT_EQ(coordination_of(k, {owner, true, live, std::nullopt}), coordination::here);
    }
}

TEST(placement, a_group_moving_here_is_loading_until_its_state_is_read) {
    // Broker 3 left: its groups fall to 1 and 2, which read them from the database first.
    const std::vector<int32_t> before{1, 2, 3};
    const std::vector<int32_t> after{1, 2};
    const auto moved = group_on(3, before);
    const int32_t heir = *place(moved, after);
    const auto kept = group_on(heir, before);
    const std::span<const int32_t> settled(before);
    EXPECT_EQ(coordination_of(moved, {heir, true, after, settled}), coordination::loading);
    EXPECT_EQ(coordination_of(kept, {heir, true, after, settled}), coordination::here);
    EXPECT_EQ(coordination_of(moved, {heir, true, after, std::nullopt}), coordination::here);
    // The other survivor is not its coordinator, loading or not.
    EXPECT_EQ(coordination_of(moved, {heir == 1 ? 2 : 1, true, after, settled}),
              coordination::elsewhere);
    // A broker that just started (settled: the others) loads every group placed on it.
    const std::vector<int32_t> others{1, 2};
    const auto mine = group_on(3, before);
    EXPECT_EQ(coordination_of(mine, {3, true, before, std::span<const int32_t>(others)}),
              coordination::loading);
}

}  // namespace
}  // namespace sluice::shared

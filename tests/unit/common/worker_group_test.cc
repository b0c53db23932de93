#include "common/worker_group.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace sluice {
namespace {

TEST(worker_group, every_item_runs_once_in_every_run) {
    worker_group g(3);
    for (size_t n : {0, 1, 2, 3, 4, 7, 100}) {
        std::vector<std::atomic<int>> calls(n);
        g.run(n, [&](size_t i) { calls[i].fetch_add(1); });
        for (size_t i = 0; i < n; ++i) EXPECT_EQ(calls[i].load(), 1) << "n " << n << " item " << i;
    }
}

// Items that block run side by side: each of four waits until all four have started,
// which can only happen with three workers and the caller inside at once.
TEST(worker_group, blocking_items_overlap) {
    worker_group g(3);
    std::mutex mu;
    std::set<std::thread::id> threads;
    std::atomic<int> started{0};
    std::atomic<int> met{0};
    g.run(4, [&](size_t) {
        {
            std::lock_guard lk(mu);
            threads.insert(std::this_thread::get_id());
        }
        started.fetch_add(1);
        const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (started.load() < 4 && std::chrono::steady_clock::now() < give_up)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        if (started.load() == 4) met.fetch_add(1);
    });
    EXPECT_EQ(met.load(), 4);
    EXPECT_EQ(threads.size(), 4u);
}

// run() returns only after every item has returned, also when a worker is slow to
// take its share; the next run starts clean.
TEST(worker_group, run_waits_for_the_slowest_item) {
    worker_group g(2);
    for (int round = 0; round < 50; ++round) {
        std::atomic<int> done{0};
        g.run(3, [&](size_t i) {
            if (i == 2) std::this_thread::sleep_for(std::chrono::milliseconds(1));
            done.fetch_add(1);
        });
        ASSERT_EQ(done.load(), 3) << "round " << round;
    }
}

}  // namespace
}  // namespace sluice

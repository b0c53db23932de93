// net::event_loop: tasks posted from other threads, deferred flushes.

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "net/event_loop.h"

namespace sluice::net {
namespace {

// One wake-up is written per batch of posts: every task of a burst from several threads
// must still run, including those posted while the loop is draining an earlier batch.
TEST(EventLoop, EveryPostedTaskRunsOnce) {
    event_loop loop;
    std::thread runner([&] { loop.run(); });
    constexpr int threads = 4;
    constexpr int per_thread = 20000;
    std::vector<int> seen(threads * per_thread, 0);  // loop thread only
    std::atomic<int> ran{0};
    std::vector<std::thread> posters;
    posters.reserve(threads);
    for (int t = 0; t < threads; ++t) {
        posters.emplace_back([&, t] {
            for (int i = 0; i < per_thread; ++i) {
                loop.post([&, k = t * per_thread + i] {
                    ++seen[static_cast<size_t>(k)];
                    ran.fetch_add(1);
                });
            }
        });
    }
    for (auto& p : posters) p.join();
    for (int spins = 0; ran.load() < threads * per_thread && spins < 5000; ++spins)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    loop.stop();
    runner.join();
    EXPECT_EQ(ran.load(), threads * per_thread);
    for (size_t k = 0; k < seen.size(); ++k) ASSERT_EQ(seen[k], 1) << "task " << k;
}

struct counting_handler : io_handler {
    explicit counting_handler(event_loop& l) : loop(l) {}
    void on_io(uint32_t) override {}
    void on_flush() override {
        if (++flushes == 1 && then) loop.defer_flush(then);
    }
    event_loop& loop;
    std::shared_ptr<counting_handler> then;  // deferred by the first flush
    int flushes = 0;
};

// A deferred flush runs in the iteration that asked for it, after its posted tasks, and
// one asked for by a flush runs before the loop waits again.
TEST(EventLoop, DeferredFlushRunsAfterTheIterationsTasks) {
    event_loop loop;
    auto h = std::make_shared<counting_handler>(loop);
    h->then = std::make_shared<counting_handler>(loop);
    std::vector<std::string> order;
    std::atomic<bool> done{false};
    loop.post([&] {
        loop.defer_flush(h);
        order.push_back("task 1");
    });
    loop.post([&] {
        order.push_back("task 2 sees " + std::to_string(h->flushes) + " flushes");
        loop.post([&] {
            order.push_back("next iteration sees " + std::to_string(h->flushes) + " flushes");
            order.push_back("and the chained one " + std::to_string(h->then->flushes));
            done = true;
            loop.stop();
        });
    });
    loop.run();
    EXPECT_TRUE(done.load());
    EXPECT_EQ(order,
              (std::vector<std::string>{"task 1", "task 2 sees 0 flushes",
                                        "next iteration sees 1 flushes", "and the chained one 1"}));
}

}  // namespace
}  // namespace sluice::net

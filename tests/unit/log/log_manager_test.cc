#include "log/log_manager.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <future>
#include <thread>

#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;
using test::append_durable;

class log_manager_test : public ::testing::Test {
  protected:
    void SetUp() override {
        mgr = std::make_unique<log_manager>(log_manager::options{dir.path, 64});
        ASSERT_TRUE(mgr->open().ok());
    }
    test::temp_dir dir;
    std::unique_ptr<log_manager> mgr;
};

TEST_F(log_manager_test, high_watermark_advances_only_after_the_flush) {
    mgr->add_topic("t", 2, {});
    auto* p = mgr->get("t", 0);
    // Shared with the listener, which the flusher thread may still be running (it is
    // called after the waiters) when this test body returns.
    struct seen {
        std::mutex mu;
        std::vector<topic_partition> woken;
    };
    auto s = std::make_shared<seen>();
    mgr->set_high_watermark_listener([s](const std::vector<topic_partition>& tps) {
        std::lock_guard lk(s->mu);
        s->woken.insert(s->woken.end(), tps.begin(), tps.end());
    });
    mgr->set_flush_paused(true);
    auto a = test::append(*p, make_batch(5, 1));
    ASSERT_TRUE(a.ok());
    auto fired = std::make_shared<std::atomic<int>>(0);
    auto on_other_thread = std::make_shared<std::atomic<bool>>(false);
    const auto test_thread = std::this_thread::get_id();
    mgr->when_durable(p, a->last_offset, [=](result<void> r) {
        EXPECT_TRUE(r.ok());
        *on_other_thread = std::this_thread::get_id() != test_thread;
        ++*fired;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_EQ(fired->load(), 0);
    // Readable at once (Kafka with one replica), durable only after the pass.
    EXPECT_EQ(p->high_watermark(), 5);
    EXPECT_EQ(p->durable_offset(), 0);
    EXPECT_EQ(p->log_end_offset(), 5);
    mgr->set_flush_paused(false);
    ASSERT_TRUE(test::wait_durable(*mgr, p, a->last_offset).ok());
    EXPECT_EQ(fired->load(), 1);
    EXPECT_TRUE(on_other_thread->load());
    EXPECT_EQ(p->durable_offset(), 5);
    EXPECT_EQ(p->high_watermark(), 5);
    // The listener runs after the waiters of the same pass: wait for it (bounded).
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
        {
            std::lock_guard lk(s->mu);
            if (!s->woken.empty()) break;
        }
        ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "listener never called";
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::lock_guard lk(s->mu);
    EXPECT_EQ(s->woken.front(), (topic_partition{"t", 0}));
}

TEST_F(log_manager_test, one_pass_covers_every_append_before_it) {
    mgr->add_topic("t", 50, {});
    mgr->set_flush_paused(true);
    auto before = mgr->flush_passes();
    std::atomic<int> done{0};
    for (int i = 0; i < 50; ++i) {
        auto* p = mgr->get("t", i);
        auto a = test::append(*p, make_batch(1, 1));
        ASSERT_TRUE(a.ok());
        mgr->when_durable(p, a->last_offset, [&](result<void> r) {
            EXPECT_TRUE(r.ok());
            done++;
        });
    }
    mgr->set_flush_paused(false);
    for (int i = 0; i < 500 && done.load() < 50; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(done.load(), 50);
    EXPECT_EQ(mgr->flush_passes() - before, 1u);
}

// A manager with a flush pass interval, and one partition to append to.
class log_manager_pacing : public ::testing::Test {
  protected:
    void start(std::chrono::microseconds interval) {
        log_manager::options opts{dir.path, 64};
        opts.flush_pass_interval = interval;
        mgr = std::make_unique<log_manager>(opts);
        ASSERT_TRUE(mgr->open().ok());
        mgr->add_topic("t", 1, {});
        p = mgr->get("t", 0);
    }
    void TearDown() override {
        if (mgr) mgr->close();
    }
    test::temp_dir dir;
    std::unique_ptr<log_manager> mgr;
    partition_log* p = nullptr;
};

// Appends that arrive while a pass runs wait for the pass interval; here each append
// is made by the durability callback of the one before, inside the pass.
TEST_F(log_manager_pacing, passes_with_work_waiting_are_spaced_by_the_interval) {
    start(std::chrono::milliseconds(200));
    ASSERT_NE(p, nullptr);
    constexpr int links = 4;
    auto all_done = std::make_shared<std::promise<void>>();
    auto finished = all_done->get_future();
    std::function<void(int)> link = [&](int i) {
        auto a = test::append(*p, make_batch(1, 1));
        ASSERT_TRUE(a.ok());
        mgr->when_durable(p, a->last_offset, [&, i](result<void> r) {
            EXPECT_TRUE(r.ok());
            if (i + 1 < links)
                link(i + 1);
            else
                all_done->set_value();
        });
    };
    const auto passes_before = mgr->flush_passes();
    const auto began = std::chrono::steady_clock::now();
    link(0);
    ASSERT_EQ(finished.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    const auto took = std::chrono::steady_clock::now() - began;
    // The last pass starts at least (links - 1) intervals after the first.
    EXPECT_GE(took, std::chrono::milliseconds(200 * (links - 1)));
    EXPECT_GE(mgr->flush_passes() - passes_before, static_cast<uint64_t>(links - 1));
}

// After idle a pass starts at once, however recent the last one: with a 60 s interval,
// the 5 s waits would time out otherwise. Each append and its waiter go to the flusher
// together (paused), so one pass answers them, and the next append waits for that
// pass's end: an append during a pass is not after idle.
TEST_F(log_manager_pacing, a_pass_after_idle_is_not_delayed) {
    start(std::chrono::seconds(60));
    ASSERT_NE(p, nullptr);
    for (int i = 0; i < 3; ++i) {
        mgr->set_flush_paused(true);
        const auto passes = mgr->flush_passes();
        auto a = test::append(*p, make_batch(1, 1));
        ASSERT_TRUE(a.ok());
        auto durable = std::make_shared<std::promise<result<void>>>();
        auto answered = durable->get_future();
        mgr->when_durable(p, a->last_offset, [durable](result<void> r) { durable->set_value(r); });
        mgr->set_flush_paused(false);
        ASSERT_EQ(answered.wait_for(std::chrono::seconds(5)), std::future_status::ready);
        EXPECT_TRUE(answered.get().ok());
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (mgr->flush_passes() == passes && std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        ASSERT_EQ(mgr->flush_passes(), passes + 1);
    }
    EXPECT_EQ(p->high_watermark(), 3);
}

// A waiter that arrives during a pass for data that pass made durable needs no fsync:
// it is answered at once, not after the interval.
TEST_F(log_manager_pacing, a_waiter_for_durable_data_is_not_delayed) {
    start(std::chrono::seconds(60));
    ASSERT_NE(p, nullptr);
    auto a = test::append(*p, make_batch(2, 1));
    ASSERT_TRUE(a.ok());
    auto second = std::make_shared<std::promise<result<void>>>();
    auto answered = second->get_future();
    mgr->when_durable(p, a->last_offset, [&, second](result<void> r) {
        EXPECT_TRUE(r.ok());
        // On the flusher, inside the pass.
        mgr->when_durable(p, a->last_offset, [second](result<void> r2) { second->set_value(r2); });
    });
    ASSERT_EQ(answered.wait_for(std::chrono::seconds(5)), std::future_status::ready);
    EXPECT_TRUE(answered.get().ok());
}

TEST_F(log_manager_test, when_durable_rejects_unknown_offsets_and_closed_manager) {
    mgr->add_topic("t", 1, {});
    auto* p = mgr->get("t", 0);
    auto r = test::wait_durable(*mgr, p, 0);
    EXPECT_EQ(r.code(), errc::invalid_argument);
    append_durable(*mgr, p, make_batch(1, 1));
    mgr->close();
    bool called = false;
    mgr->when_durable(p, 0, [&](result<void> res) {
        EXPECT_EQ(res.code(), errc::shutting_down);
        called = true;
    });
    EXPECT_TRUE(called);
}

TEST_F(log_manager_test, remove_topic_deletes_its_data) {
    mgr->add_topic("gone", 3, {});
    mgr->add_topic("kept", 1, {});
    for (int i = 0; i < 3; ++i) append_durable(*mgr, mgr->get("gone", i), make_batch(2, 1));
    append_durable(*mgr, mgr->get("kept", 0), make_batch(2, 1));
    ASSERT_TRUE(fs::exists(test::partition_dir(dir.path, "gone", 2)));
    ASSERT_TRUE(mgr->remove_topic("gone").ok());
    EXPECT_EQ(mgr->get("gone", 0), nullptr);
    for (int i = 0; i < 3; ++i) EXPECT_FALSE(fs::exists(test::partition_dir(dir.path, "gone", i)));
    EXPECT_TRUE(fs::is_empty(dir.path / "logs" / ".trash"));
    EXPECT_EQ(mgr->remove_topic("gone").code(), errc::not_found);
    EXPECT_EQ(mgr->get("kept", 0)->high_watermark(), 2);
    mgr->add_topic("gone", 1, {});  // a new topic of the same name starts empty
    EXPECT_EQ(mgr->get("gone", 0)->log_end_offset(), 0);
}

TEST_F(log_manager_test, concurrent_appends_reads_and_flushes_stay_consistent) {
    log_config cfg;
    cfg.segment_bytes = 4096;  // rolls while the flusher and a reader run
    mgr->add_topic("t", 4, cfg);
    std::atomic<bool> stop{false};
    std::atomic<int> acked{0};
    std::thread reader([&] {
        while (!stop.load()) {
            for (int i = 0; i < 4; ++i) {
                auto* p = mgr->get("t", i);
                auto hw = p->high_watermark();
                if (hw == 0) continue;
                auto r = p->read(hw - 1, 1 << 16, true);
                ASSERT_TRUE(r.ok()) << r.err().message;
                ASSERT_TRUE(protocol::validate_batches(r->data, {}).ok());
                EXPECT_LT(test::batches_of(r->data).back().last_offset(), r->high_watermark);
            }
        }
    });
    constexpr int rounds = 300;
    for (int n = 0; n < rounds; ++n) {
        for (int i = 0; i < 4; ++i) {
            auto* p = mgr->get("t", i);
            auto a = test::append(*p, make_batch(3, n, 40));
            ASSERT_TRUE(a.ok());
            mgr->when_durable(p, a->last_offset, [&](result<void> r) {
                EXPECT_TRUE(r.ok());
                acked++;
            });
        }
    }
    for (int i = 0; i < 1000 && acked.load() < rounds * 4; ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop = true;
    reader.join();
    EXPECT_EQ(acked.load(), rounds * 4);
    for (int i = 0; i < 4; ++i) {
        EXPECT_EQ(mgr->get("t", i)->high_watermark(), rounds * 3);
        EXPECT_GT(mgr->get("t", i)->segment_count(), 5u);
    }
}

TEST_F(log_manager_test, declared_partitions_cost_little_memory_and_no_disk) {
    constexpr int n = 20000;
    malloc_trim(0);
    auto before = mallinfo2().uordblks;
    mgr->add_topic("big", n, {});
    auto after = mallinfo2().uordblks;
    double per_partition = static_cast<double>(after - before) / n;
    RecordProperty("bytes_per_declared_partition", std::to_string(per_partition));
    std::printf("[ measure  ] %.1f bytes per declared partition (sizeof partition_log %zu)\n",
                per_partition, sizeof(partition_log));
    EXPECT_LT(per_partition, 160.0);
    // Asking an unused partition for its offsets creates nothing on disk.
    EXPECT_EQ(mgr->get("big", 19999)->high_watermark(), 0);
    std::vector<std::string> names;  // only the broker's own files (data-dir.md)
    for (const auto& e : fs::directory_iterator(dir.path / "logs"))
        names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{".boot-id", ".space-reserve"}));
    // A partition that has data costs a few hundred bytes more, not kilobytes of index.
    auto* p = mgr->get("big", 7);
    append_durable(*mgr, p, make_batch(10, 1));
    std::printf("[ measure  ] %zu bytes for a loaded partition with one small segment\n",
                p->memory_bytes());
    EXPECT_LT(p->memory_bytes(), 2048u);
}

}  // namespace
}  // namespace sluice::log

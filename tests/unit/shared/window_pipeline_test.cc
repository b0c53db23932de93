// window_pipeline (src/shared/window_pipeline.h): several produce windows in flight,
// commits in window order, and the rule for failures. The commit stage here checks
// idempotent sequences with log::producer_state, as the database's commit does
// (batch_index.cc), over an in-memory partition.

#include "shared/window_pipeline.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "log/producer_state.h"
#include "protocol/record_batch.h"

namespace sluice::shared {
namespace {

using namespace std::chrono_literals;

int partition_a = 0, partition_b = 0;  // their addresses name two partitions

struct append {
    const void* partition;
    int64_t producer;  // -1: not idempotent
    int32_t sequence;
    std::string value;
};

struct outcome {
    std::string value;
    std::string verdict;  // "appended", "out_of_order", "duplicate", or "error: ..."
    int64_t offset = -1;
};

struct test_window final : window_pipeline::window {
    std::vector<append> appends;
};

// A log of two partitions behind a pipeline whose stages the test holds back or fails.
class pipeline_fixture {
  public:
    explicit pipeline_fixture(size_t in_flight)
        : pipeline(in_flight,
                   {[this](window_pipeline::window& w) { return upload(w); },
                    [this](window_pipeline::window& w) { return commit(w); },
                    [this](window_pipeline::window& w, const error& e) { fail(w, e); }}) {}

    // Closes a window of `appends` (stamped now) and hands it to the pipeline.
    uint64_t close(std::vector<append> appends) {
        auto w = std::make_unique<test_window>();
        for (auto& a : appends) {
            window_pipeline::window::entry e{pipeline.stamp(), {}};
            if (a.producer >= 0) e.depends_on.push_back({a.partition, a.producer});
            w->entries.push_back(std::move(e));
        }
        w->appends = std::move(appends);
        pipeline.wait_for_room();
        std::lock_guard lk(mu);
        const uint64_t seq = next++;
        gates[seq];  // made before the upload can look for it
        pipeline.submit(std::move(w));
        return seq;
    }
    // What each stage of window `seq` does when it runs: the upload waits until released.
    void release_upload(uint64_t seq, bool ok = true) { gate(seq).upload.set_value(ok); }
    void fail_commit(uint64_t seq) {
        std::lock_guard lk(mu);
        failing_commits.insert(seq);
    }
    // Waits until `n` appends are answered.
    std::vector<outcome> answers(size_t n) {
        std::unique_lock lk(mu);
        EXPECT_TRUE(cv.wait_for(lk, 10s, [&] { return answered.size() >= n; }));
        return answered;
    }

    std::mutex mu;
    std::condition_variable cv;
    std::vector<uint64_t> commit_order;  // windows whose commit stage ran
    std::vector<outcome> answered;       // in answer order
    window_pipeline pipeline;            // last: stopped first

  private:
    struct gates_of {
        std::promise<bool> upload;
        std::shared_future<bool> uploaded = upload.get_future().share();
    };
    gates_of& gate(uint64_t seq) {
        std::lock_guard lk(mu);
        return gates[seq];
    }
    result<void> upload(window_pipeline::window& w) {
        auto released = gate(w.seq).uploaded;
        if (released.wait_for(10s) != std::future_status::ready || !released.get())
            return error{errc::io_error, "PUT failed: 503 SlowDown"};
        return {};
    }
    result<void> commit(window_pipeline::window& base) {
        auto& w = static_cast<test_window&>(base);
        std::lock_guard lk(mu);
        commit_order.push_back(w.seq);
        if (failing_commits.count(w.seq)) return error{errc::io_error, "COMMIT: connection lost"};
        for (size_t i = 0; i < w.appends.size(); ++i) {
            const auto& a = w.appends[i];
            if (w.cancelled[i]) {
                answered.push_back({a.value, "error: " + w.cancelled[i]->message});
                continue;
            }
            auto& log = logs[a.partition];
            protocol::batch_header h;
            h.producer_id = a.producer;
            h.producer_epoch = a.producer >= 0 ? 0 : -1;
            h.base_sequence = a.producer >= 0 ? a.sequence : -1;
            h.last_offset_delta = 0;
            if (a.producer >= 0) {
                auto c = log.state.check(h);
                if (c.verdict == log::sequence_verdict::duplicate) {
                    answered.push_back({a.value, "duplicate", c.original.first_offset});
                    continue;
                }
                if (c.verdict != log::sequence_verdict::append) {
                    answered.push_back({a.value, "out_of_order"});
                    continue;
                }
                log.state.apply(h, log.next, 0);
            }
            log.values.push_back(a.value);
            answered.push_back({a.value, "appended", log.next++});
        }
        cv.notify_all();
        return {};
    }
    void fail(window_pipeline::window& base, const error& e) {
        auto& w = static_cast<test_window&>(base);
        std::lock_guard lk(mu);
        for (size_t i = 0; i < w.appends.size(); ++i)
            answered.push_back(
                {w.appends[i].value, "error: " + (w.cancelled[i] ? *w.cancelled[i] : e).message});
        cv.notify_all();
    }

    struct partition_log {
        log::producer_state state;
        std::vector<std::string> values;
        int64_t next = 0;
    };
    std::map<const void*, partition_log> logs;
    std::map<uint64_t, gates_of> gates;
    std::set<uint64_t> failing_commits;
    uint64_t next = 0;
};

bool is_error(const outcome& o) {
    return o.verdict.rfind("error: ", 0) == 0;
}

const outcome& of(const std::vector<outcome>& all, const std::string& value) {
    for (const auto& o : all)
        if (o.value == value) return o;
    static outcome none{"", "unanswered"};
    return none;
}

TEST(window_pipeline, a_later_upload_done_first_still_commits_after) {
    pipeline_fixture f(3);
    const uint64_t w0 = f.close({{&partition_a, 7, 0, "a0"}});
    const uint64_t w1 = f.close({{&partition_a, 7, 1, "a1"}, {&partition_b, -1, 0, "b0"}});
    EXPECT_EQ(f.pipeline.in_flight(), 2u);  // both uploading at once
    f.release_upload(w1);
    std::this_thread::sleep_for(50ms);
    {
        std::lock_guard lk(f.mu);
        EXPECT_TRUE(f.commit_order.empty());  // window 1 waits for window 0's commit
    }
    f.release_upload(w0);
    auto got = f.answers(3);
    EXPECT_EQ(f.commit_order, (std::vector<uint64_t>{w0, w1}));
    // Sequences 0 and 1 of producer 7 in consecutive windows: both appended, in order.
    EXPECT_EQ(of(got, "a0").verdict, "appended");
    EXPECT_EQ(of(got, "a0").offset, 0);
    EXPECT_EQ(of(got, "a1").verdict, "appended");
    EXPECT_EQ(of(got, "a1").offset, 1);
    EXPECT_EQ(of(got, "b0").verdict, "appended");
    EXPECT_EQ(got[0].value, "a0");  // answered in window order
}

TEST(window_pipeline, a_failed_commit_cancels_the_same_producers_batches_behind_it) {
    pipeline_fixture f(2);
    f.fail_commit(0);
    const uint64_t w0 = f.close({{&partition_a, 7, 0, "a0"}, {&partition_b, 8, 0, "b0"}});
    const uint64_t w1 = f.close({{&partition_a, 7, 1, "a1"},    // depends on a0
                                 {&partition_b, 7, 0, "b7-0"},  // same producer, other partition
                                 {&partition_a, 9, 0, "a9-0"},  // other producer, same partition
                                 {&partition_a, -1, 0, "plain"}});
    f.release_upload(w1);
    f.release_upload(w0);
    auto got = f.answers(6);
    EXPECT_TRUE(is_error(of(got, "a0"))) << of(got, "a0").verdict;
    EXPECT_TRUE(is_error(of(got, "b0")));
    // a1 is not committed after a failed a0 (it would be out of order): a retriable error.
    EXPECT_TRUE(is_error(of(got, "a1"))) << of(got, "a1").verdict;
    EXPECT_NE(of(got, "a1").verdict.find("window 0"), std::string::npos) << of(got, "a1").verdict;
    for (const char* v : {"b7-0", "a9-0", "plain"}) EXPECT_EQ(of(got, v).verdict, "appended") << v;

    // The producer retries a0 then a1: both land, in order, at the partition's next offsets.
    const uint64_t w2 = f.close({{&partition_a, 7, 0, "a0 again"}});
    const uint64_t w3 = f.close({{&partition_a, 7, 1, "a1 again"}});
    f.release_upload(w3);
    f.release_upload(w2);
    got = f.answers(8);
    EXPECT_EQ(of(got, "a0 again").verdict, "appended");
    EXPECT_EQ(of(got, "a1 again").verdict, "appended");
    EXPECT_EQ(of(got, "a1 again").offset, of(got, "a0 again").offset + 1);
}

TEST(window_pipeline, a_failed_upload_cancels_dependents_in_the_window_still_gathering) {
    pipeline_fixture f(1);  // one in flight: the next window waits for room, gathering
    const uint64_t w0 = f.close({{&partition_a, 7, 5, "a5"}});
    // a6 arrived (stamped) while window 0 was uploading; its window closes after the failure.
    auto w1 = std::async(std::launch::async, [&] { return f.close({{&partition_a, 7, 6, "a6"}}); });
    std::this_thread::sleep_for(50ms);
    EXPECT_EQ(f.pipeline.in_flight(), 1u);
    f.release_upload(w0, false);
    f.release_upload(w1.get());
    auto got = f.answers(2);
    EXPECT_NE(of(got, "a5").verdict.find("503"), std::string::npos) << of(got, "a5").verdict;
    // Not "out_of_order" from the sequence check: cancelled, retriable, as its predecessor.
    EXPECT_TRUE(is_error(of(got, "a6"))) << of(got, "a6").verdict;
}

TEST(window_pipeline, what_arrives_after_the_failure_is_not_cancelled) {
    pipeline_fixture f(2);
    f.fail_commit(0);
    const uint64_t w0 = f.close({{&partition_a, 7, 0, "a0"}});
    f.release_upload(w0);
    f.answers(1);
    // The retry, sent once the failure was answered.
    const uint64_t w1 = f.close({{&partition_a, 7, 0, "a0 retried"}});
    f.release_upload(w1);
    auto got = f.answers(2);
    EXPECT_EQ(of(got, "a0 retried").verdict, "appended");
    EXPECT_EQ(of(got, "a0 retried").offset, 0);
}

TEST(window_pipeline, no_more_than_the_limit_in_flight) {
    pipeline_fixture f(2);
    const uint64_t w0 = f.close({{&partition_a, -1, 0, "x0"}});
    const uint64_t w1 = f.close({{&partition_a, -1, 0, "x1"}});
    auto third = std::async(std::launch::async, [&] {
        return f.close({{&partition_a, -1, 0, "x2"}});
    });
    EXPECT_EQ(third.wait_for(100ms), std::future_status::timeout);  // waits for room
    f.release_upload(w0);
    f.answers(1);
    const uint64_t w2 = third.get();
    f.release_upload(w1);
    f.release_upload(w2);
    auto got = f.answers(3);
    EXPECT_EQ(of(got, "x0").offset, 0);
    EXPECT_EQ(of(got, "x1").offset, 1);
    EXPECT_EQ(of(got, "x2").offset, 2);
}

}  // namespace
}  // namespace sluice::shared

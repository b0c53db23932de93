// Partitions out of service and back (docs/operations.md, "Full disk"): a failed load is
// retried, and recovery's log lines are INFO unless data was lost. The full-disk cases
// themselves run on a loop-mounted file system: tests/integration/test_full_disk.py.

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "common/logging.h"
#include "log/file_io.h"
#include "log_test_util.h"

namespace sluice::log {
namespace {

using sluice::testing::make_batch;
using test::append_durable;

class out_of_service : public ::testing::Test {
  protected:
    void open(std::chrono::milliseconds retry) {
        log_manager::options o{dir.path, 16};
        o.load_retry_interval = retry;
        mgr = std::make_unique<log_manager>(o);
        mgr->add_topic("t", 2, cfg);
        auto r = mgr->open();
        ASSERT_TRUE(r.ok()) << r.err().message;
        summary = *r;
    }
    void close(bool clean) {
        mgr->close();
        mgr.reset();
        if (!clean) fs::remove(dir.path / "logs" / ".clean-shutdown");
    }
    partition_log* p(int i = 0) { return mgr->get("t", i); }
    fs::path part(int i = 0) const { return test::partition_dir(dir.path, "t", i); }

    test::temp_dir dir;
    log_config cfg;
    std::unique_ptr<log_manager> mgr;
    log_manager::open_summary summary;
};

// What open() logs, at INFO and above.
struct captured_log {
    captured_log() {
        saved = current_log_level();
        set_log_level(log_level::info);
        ::testing::internal::CaptureStderr();
    }
    std::string take() {
        auto s = ::testing::internal::GetCapturedStderr();
        set_log_level(saved);
        return s;
    }
    log_level saved;
};

size_t count_lines_with(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
        ++n;
    return n;
}

TEST_F(out_of_service, a_failed_load_is_retried_and_the_partition_comes_back) {
    cfg.retention_ms = -1;
    open(std::chrono::milliseconds(200));
    for (int i = 0; i < 5; ++i) append_durable(*mgr, p(), make_batch(2, 1));
    append_durable(*mgr, p(1), make_batch(3, 1));
    close(true);
    // A log-start-offset that cannot be read (a directory: EISDIR) fails the load.
    const fs::path bad = part() / "log-start-offset";
    fs::create_directory(bad);
    open(std::chrono::milliseconds(200));
    auto a = p()->available();
    ASSERT_FALSE(a.ok());
    EXPECT_EQ(a.code(), errc::io_error);
    EXPECT_NE(a.err().message.find("log-start-offset"), std::string::npos) << a.err().message;
    EXPECT_EQ(p()->read(0, 1 << 20, true).code(), errc::io_error);
    EXPECT_TRUE(p(1)->available().ok());  // the other partition serves
    EXPECT_EQ(p(1)->high_watermark(), 3);
    // Not before the retry interval, even once the cause is gone...
    fs::remove(bad);
    EXPECT_FALSE(p()->available().ok());
    // ...and after it, without a restart.
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    ASSERT_TRUE(p()->available().ok());
    EXPECT_EQ(p()->high_watermark(), 10);
    auto r = p()->read(0, 1 << 20, true);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(test::batches_of(r->data).size(), 5u);
    auto more = test::append(*p(), make_batch(1, 1));
    ASSERT_TRUE(more.ok()) << more.err().message;
    EXPECT_EQ(more->base_offset, 10);
}

TEST_F(out_of_service, a_partition_whose_startup_recovery_failed_recovers_at_its_retry) {
    cfg.retention_ms = -1;
    open(std::chrono::milliseconds(0));
    for (int i = 0; i < 3; ++i) append_durable(*mgr, p(), make_batch(2, 1));
    close(false);
    const fs::path bad = part() / "log-start-offset";
    fs::create_directory(bad);
    open(std::chrono::milliseconds(0));
    EXPECT_EQ(summary.partitions_failed, 1u);
    EXPECT_FALSE(p()->available().ok());
    fs::remove(bad);
    ASSERT_TRUE(p()->available().ok());
    EXPECT_EQ(p()->high_watermark(), 6);
}

TEST_F(out_of_service, the_background_retry_brings_back_partitions_nobody_uses) {
    cfg.retention_ms = -1;
    open(std::chrono::milliseconds(0));
    for (int i = 0; i < 4; ++i) append_durable(*mgr, p(), make_batch(2, 1));
    append_durable(*mgr, p(1), make_batch(3, 1));
    close(false);  // both recoveries fail at start-up; t-1 is used, and fails again
    fs::create_directory(part() / "log-start-offset");
    fs::create_directory(part(1) / "log-start-offset");
    open(std::chrono::milliseconds(0));
    EXPECT_FALSE(p(1)->available().ok());
    // A stop now must not write the clean-shutdown marker: the recoveries are owed.
    close(true);
    open(std::chrono::milliseconds(0));
    EXPECT_FALSE(summary.clean_shutdown);
    EXPECT_EQ(summary.partitions_failed, 2u);
    EXPECT_EQ(mgr->retry_failed_loads(), 0u);  // the causes are still there
    fs::remove(part() / "log-start-offset");
    fs::remove(part(1) / "log-start-offset");
    EXPECT_EQ(mgr->retry_failed_loads(), 2u);
    // Loaded by the retry: neither is asked to load again here.
    EXPECT_TRUE(p()->loaded());
    EXPECT_EQ(p()->high_watermark(), 8);
    EXPECT_EQ(p(1)->high_watermark(), 3);
    EXPECT_EQ(mgr->retry_failed_loads(), 0u);  // the list is empty again
}

TEST_F(out_of_service, the_space_reserve_is_given_up_once_for_a_write_refused_for_space) {
    open(std::chrono::milliseconds(0));
    const fs::path reserve = dir.path / "logs" / ".space-reserve";
    ASSERT_EQ(static_cast<int64_t>(fs::file_size(reserve)), log_manager::reserve_bytes);
    int calls = 0;
    auto full_once = [&]() -> result<void> {
        if (++calls == 1) return error{errc::io_error, "write: No space left on device", ENOSPC};
        return {};
    };
    EXPECT_TRUE(mgr->with_spare_space(full_once).ok());
    EXPECT_EQ(calls, 2);
    EXPECT_FALSE(fs::exists(reserve));
    // Without a reserve, and for failures that are not for space, no second attempt.
    calls = 0;
    EXPECT_FALSE(mgr->with_spare_space(full_once).ok());
    EXPECT_EQ(calls, 1);
    EXPECT_TRUE(mgr->refill_spare_space());
    calls = 0;
    auto broken = [&]() -> result<void> {
        ++calls;
        return error{errc::io_error, "write: Input/output error", EIO};
    };
    EXPECT_FALSE(mgr->with_spare_space(broken).ok());
    EXPECT_EQ(calls, 1);
    EXPECT_EQ(static_cast<int64_t>(fs::file_size(reserve)), log_manager::reserve_bytes);
}

TEST_F(out_of_service, reading_a_directory_as_a_file_is_an_error_not_a_huge_allocation) {
    auto r = read_whole_file(dir.path);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.code(), errc::io_error);
}

TEST_F(out_of_service, recovery_after_a_crash_logs_rebuilt_indexes_at_info_in_one_summary) {
    cfg.retention_ms = -1;
    open(std::chrono::milliseconds(0));
    for (int i = 0; i < 4; ++i) {
        append_durable(*mgr, p(), make_batch(2, 1));
        append_durable(*mgr, p(1), make_batch(2, 1));
    }
    close(false);  // kill -9: the active segments' indexes were never written
    for (int i = 0; i < 2; ++i) fs::remove(part(i) / "00000000000000000000.index");
    captured_log cap;
    open(std::chrono::milliseconds(0));
    const auto out = cap.take();
    EXPECT_EQ(summary.indexes_rebuilt, 2);
    EXPECT_EQ(count_lines_with(out, " WARN "), 0u) << out;
    EXPECT_EQ(count_lines_with(out, " ERROR "), 0u) << out;
    EXPECT_EQ(count_lines_with(out, "2 indexes rebuilt"), 1u) << out;
    EXPECT_EQ(p()->high_watermark(), 8);
}

TEST_F(out_of_service, recovery_that_truncates_data_says_so_at_warn) {
    cfg.retention_ms = -1;
    open(std::chrono::milliseconds(0));
    for (int i = 0; i < 3; ++i) {
        append_durable(*mgr, p(), make_batch(2, 1));
        append_durable(*mgr, p(1), make_batch(2, 1));
    }
    close(false);
    {  // a torn write after the last batch of t-0
        std::ofstream f(part() / "00000000000000000000.log", std::ios::binary | std::ios::app);
        f << std::string(30, '\x07');
    }
    captured_log cap;
    open(std::chrono::milliseconds(0));
    const auto out = cap.take();
    EXPECT_EQ(count_lines_with(out, " WARN "), 1u) << out;
    EXPECT_EQ(count_lines_with(out, "t-0: recovered: truncated 30 bytes"), 1u) << out;
    EXPECT_EQ(p()->high_watermark(), 6);
    EXPECT_EQ(p(1)->high_watermark(), 6);
}

}  // namespace
}  // namespace sluice::log

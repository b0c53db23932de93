// sluice-cleanbench: cleaner throughput, in process. Fills one partition of a compacted
// topic with keyed records (a fixed key space, so most records are superseded), then
// times one compaction pass and prints MB/s of segment data read and written.
//
//   sluice-cleanbench [--dir DIR] [--mb 256] [--keys 10000] [--value-bytes 100]
//                     [--segment-mb 64] [--io-budget-mb 0]

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <span>
#include <string>

#include "bench_cli.h"
#include "common/clock.h"
#include "log/log_manager.h"
#include "protocol/record_batch.h"
#include "support/batch_builder.h"

using namespace sluice;

namespace {

struct options {
    std::string dir = "/tmp/sluice-cleanbench";
    int64_t mb = 256;
    int64_t keys = 10000;
    int64_t value_bytes = 100;
    int64_t segment_mb = 64;
    int64_t io_budget_mb = 0;  // 0: unlimited
};

[[noreturn]] void die(const std::string& msg) {
    bench::die("sluice-cleanbench", msg);
}

options parse(int argc, char** argv) {
    options o;
    bench::parse_flags("sluice-cleanbench", argc, argv,
                       [&](const std::string& f, const std::string& v) {
                           if (f == "--dir")
                               o.dir = v;
                           else if (f == "--mb")
                               o.mb = std::stoll(v);
                           else if (f == "--keys")
                               o.keys = std::stoll(v);
                           else if (f == "--value-bytes")
                               o.value_bytes = std::stoll(v);
                           else if (f == "--segment-mb")
                               o.segment_mb = std::stoll(v);
                           else if (f == "--io-budget-mb")
                               o.io_budget_mb = std::stoll(v);
                           else
                               return false;
                           return true;
                       });
    return o;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    std::filesystem::remove_all(o.dir);
    std::filesystem::create_directories(o.dir);
    log::log_manager mgr({o.dir, 64, o.io_budget_mb << 20});
    log::log_config cfg;
    cfg.compact = true;
    cfg.delete_enabled = false;
    cfg.segment_bytes = o.segment_mb << 20;
    cfg.min_cleanable_dirty_ratio = 0;
    mgr.add_topic("bench", 1, cfg);
    if (auto r = mgr.open(); !r) die(r.err().message);
    auto* p = mgr.get("bench", 0);
    const std::string value(static_cast<size_t>(o.value_bytes), 'v');
    const int64_t target = o.mb << 20;
    int64_t written = 0;
    int64_t n = 0;
    const timestamp_ms now = now_ms();
    while (written < target) {
        std::vector<testing::test_record> recs;
        for (int i = 0; i < 100; ++i, ++n)
            recs.push_back({"key-" + std::to_string(n % o.keys), value, now, {}});
        bytes b = testing::build_batch(recs);
        auto v = protocol::validate_batches(b, {});
        if (!v) die(v.err().message);
        written += static_cast<int64_t>(b.size());
        if (auto r = p->append(std::span<uint8_t>(b), *v, now); !r) die(r.err().message);
    }
    // Let the flusher make it durable (the cleaner only reads below the high watermark).
    while (p->high_watermark() < p->log_end_offset())
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    const auto t0 = std::chrono::steady_clock::now();
    auto st = mgr.enforce_compaction(now + 1);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double mb_read = static_cast<double>(st.bytes_read) / (1 << 20);
    std::printf(
        "records %lld, keys %lld: read %.1f MB, wrote %.1f MB, removed %lld records in %.2f s: "
        "%.1f MB/s read (%.1f MB/s of log cleaned)\n",
        static_cast<long long>(n), static_cast<long long>(o.keys), mb_read,
        static_cast<double>(st.bytes_written) / (1 << 20),
        static_cast<long long>(st.records_removed), secs, mb_read / secs,
        static_cast<double>(written) / (1 << 20) / secs);
    mgr.close();
    std::filesystem::remove_all(o.dir);
    return st.partitions_failed == 0 ? 0 : 1;
}

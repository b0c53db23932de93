// sluice-fsyncbench: what one flush pass costs the disk under a data directory, for the
// write patterns the broker chooses between (docs/benchmarks-history.md, "Produce latency with
// many partitions"). Each pass appends `--chunk` bytes to each of `--files` files, then
// fdatasyncs them (one after another, or from one thread each with --parallel 1), and
// the pass time is recorded. --prewrite 1 writes the files whole first, so a pass
// overwrites blocks that exist and the file size never changes (as a recycled journal
// file); 0 extends the files (as a segment does).
//
//   sluice-fsyncbench --dir /var/lib/sluice --files 8 --chunk 6000 --prewrite 0
//
// Prints one line: RESULT files=... p50_ms=... p99_ms=... p999_ms=...

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_cli.h"

namespace {

constexpr const char* tool = "sluice-fsyncbench";

void check(bool ok, const std::string& what) {
    if (!ok) sluice::bench::die(tool, what + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
    std::string dir = "/tmp";
    int files = 8;
    size_t chunk = 6000;
    bool prewrite = false;
    bool parallel = false;
    int passes = 2000;
    sluice::bench::parse_flags(tool, argc, argv, [&](const std::string& f, const std::string& v) {
        if (f == "--dir")
            dir = v;
        else if (f == "--files")
            files = std::stoi(v);
        else if (f == "--chunk")
            chunk = std::stoul(v);
        else if (f == "--prewrite")
            prewrite = v == "1";
        else if (f == "--parallel")
            parallel = v == "1";
        else if (f == "--passes")
            passes = std::stoi(v);
        else
            return false;
        return true;
    });
    if (files < 1 || passes < 10 || chunk < 1) sluice::bench::die(tool, "bad sizes");

    std::vector<char> buf(std::max<size_t>(chunk, 1 << 20), 'x');
    std::vector<int> fds;
    std::vector<std::string> paths;
    const auto total = static_cast<off_t>(chunk) * passes;
    for (int i = 0; i < files; ++i) {
        paths.push_back(dir + "/sluice-fsyncbench-" + std::to_string(getpid()) + "-" +
                        std::to_string(i));
        int fd = ::open(paths.back().c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        check(fd >= 0, "open " + paths.back());
        if (prewrite) {
            for (off_t off = 0; off < total; off += static_cast<off_t>(buf.size()))
                check(::pwrite(fd, buf.data(), buf.size(), off) > 0, "pwrite");
            check(::fsync(fd) == 0, "fsync");
        }
        fds.push_back(fd);
    }

    std::vector<double> ms;
    ms.reserve(static_cast<size_t>(passes));
    for (int p = 0; p < passes; ++p) {
        const auto off = static_cast<off_t>(chunk) * p;
        for (int fd : fds) check(::pwrite(fd, buf.data(), chunk, off) > 0, "pwrite");
        const auto t0 = std::chrono::steady_clock::now();
        if (parallel) {
            std::vector<std::thread> ts;
            for (int fd : fds) ts.emplace_back([fd] { (void)::fdatasync(fd); });
            for (auto& t : ts) t.join();
        } else {
            for (int fd : fds) check(::fdatasync(fd) == 0, "fdatasync");
        }
        ms.push_back(
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count());
    }
    for (size_t i = 0; i < fds.size(); ++i) {
        ::close(fds[i]);
        ::unlink(paths[i].c_str());
    }
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) {
        return ms[static_cast<size_t>(q * static_cast<double>(ms.size() - 1))];
    };
    std::printf(
        "RESULT files=%d chunk=%zu prewrite=%d parallel=%d passes=%d p50_ms=%.3f p99_ms=%.3f "
        "p999_ms=%.3f\n",
        files, chunk, prewrite ? 1 : 0, parallel ? 1 : 0, passes, at(0.5), at(0.99), at(0.999));
    return 0;
}

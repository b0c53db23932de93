#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace sluice {

// A fixed set of threads that run the items of one batch side by side with the caller:
// for blocking calls (fdatasync) that are faster issued together than one after another.
// One run at a time; run() is not reentrant.
class worker_group {
  public:
    explicit worker_group(size_t threads);
    ~worker_group();
    worker_group(const worker_group&) = delete;
    worker_group& operator=(const worker_group&) = delete;

    // Calls fn(i) once for every i in [0, n), on the group's threads and the caller's,
    // and returns when every call has returned. fn must not throw.
    void run(size_t n, const std::function<void(size_t)>& fn);

  private:
    void work();
    void take_items();

    std::mutex _mu;
    std::condition_variable _start;
    std::condition_variable _done;
    // The current run: set under _mu before _generation moves, and left alone until
    // every worker has finished with it.
    const std::function<void(size_t)>* _fn = nullptr;
    size_t _n = 0;
    std::atomic<size_t> _next{0};
    uint64_t _generation = 0;
    size_t _finished = 0;  // workers done with the current generation
    bool _stop = false;
    std::vector<std::thread> _threads;
};

}  // namespace sluice

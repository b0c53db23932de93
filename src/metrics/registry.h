#pragma once

// Metrics of the process: counters, gauges and histograms in families of labelled
// series, and collectors that compute families at scrape time (offsets, lag, bytes on
// disk), rendered in the Prometheus text format (text_writer.h) for GET /metrics.
//
// Cost on the hot path: an update is one relaxed atomic add on a series the caller
// resolved once (a reference that stays valid for the process's life); finding a series
// by its label values takes the family's mutex, so callers cache what they find (per
// topic, per API) rather than look it up per request. Series are not sharded per thread:
// the Kafka path runs on one event-loop thread and the flusher on one more, so a series'
// cache line rarely bounces; each series sits on its own cache line all the same.
//
// Series are never removed and counters never go down while the process runs: a topic
// deleted and created again continues its counters.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/text_writer.h"

namespace sluice::metrics {

class counter {
  public:
    void inc(uint64_t n = 1) { _v.fetch_add(n, std::memory_order_relaxed); }
    uint64_t value() const { return _v.load(std::memory_order_relaxed); }

  private:
    alignas(64) std::atomic<uint64_t> _v{0};
};

class gauge {
  public:
    void set(double v) { _v.store(v, std::memory_order_relaxed); }
    void add(double d) { _v.fetch_add(d, std::memory_order_relaxed); }
    double value() const { return _v.load(std::memory_order_relaxed); }

  private:
    alignas(64) std::atomic<double> _v{0};
};

// A duration in seconds, the unit of every duration histogram.
inline double seconds(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double>(d).count();
}

// Buckets by upper bound (le): an observation counts in the first bucket whose bound is
// at or above it, +Inf last.
class histogram {
  public:
    explicit histogram(std::shared_ptr<const std::vector<double>> bounds);
    void observe(double v);
    void observe(std::chrono::steady_clock::duration d) { observe(seconds(d)); }
    // The time from `started` to now.
    void observe_since(std::chrono::steady_clock::time_point started) {
        observe(std::chrono::steady_clock::now() - started);
    }
    const std::vector<double>& bounds() const { return *_bounds; }
    // Counts per bound, cumulative, the last for +Inf; and the sum of observations.
    std::vector<uint64_t> cumulative() const;
    double sum() const { return _sum.load(std::memory_order_relaxed); }

  private:
    std::shared_ptr<const std::vector<double>> _bounds;
    std::unique_ptr<std::atomic<uint64_t>[]> _counts;  // bounds + 1 (+Inf)
    alignas(64) std::atomic<double> _sum{0};
};

// Bucket bounds for durations in seconds, from 100 µs to 10 s.
std::vector<double> duration_buckets();

// One family of series of type T, keyed by the values of its labels (in the order of
// the family's label names).
template <typename T>
class family {
  public:
    template <typename... Args>
    family(std::string name, std::string help, std::vector<std::string> labels, Args... args)
        : _name(std::move(name)),
          _help(std::move(help)),
          _labels(std::move(labels)),
          _make([args...] { return std::make_unique<T>(args...); }) {}

    // The series of these label values (as many as the family has labels); made at the
    // first call. The reference stays valid for the family's life.
    T& with(const std::vector<std::string>& values) {
        std::lock_guard lk(_mu);
        auto& slot = _series[values];
        if (!slot) slot = _make();
        return *slot;
    }

    // The series of each value of a family with one label, in the order given: resolved
    // once, so that the hot path indexes an array (an outcome, a phase) with no lookup.
    template <size_t N>
    std::array<T*, N> each_of(const std::array<const char*, N>& values) {
        std::array<T*, N> out{};
        for (size_t i = 0; i < N; ++i) out[i] = &with({values[i]});
        return out;
    }

    const std::string& name() const { return _name; }
    const std::string& help() const { return _help; }
    const std::vector<std::string>& label_names() const { return _labels; }
    // Calls fn(values, series) for each series, in label order.
    template <typename Fn>
    void each(Fn&& fn) const {
        std::lock_guard lk(_mu);
        for (const auto& [values, s] : _series) fn(values, *s);
    }

  private:
    const std::string _name;
    const std::string _help;
    const std::vector<std::string> _labels;
    std::function<std::unique_ptr<T>()> _make;
    mutable std::mutex _mu;
    std::map<std::vector<std::string>, std::unique_ptr<T>> _series;
};

class registry;

// A collector registered with add_collector; removing it (reset or destruction) waits
// for a scrape running it to finish, so what it reads may go away afterwards.
class collector_handle {
  public:
    collector_handle() = default;
    collector_handle(registry* r, uint64_t id) : _r(r), _id(id) {}
    collector_handle(collector_handle&& o) noexcept : _r(o._r), _id(o._id) { o._r = nullptr; }
    collector_handle& operator=(collector_handle&& o) noexcept;
    ~collector_handle() { reset(); }
    void reset();

  private:
    registry* _r = nullptr;
    uint64_t _id = 0;
};

class registry {
  public:
    // Families, made at the first call with a name; later calls with the same name
    // return it (their help and labels must be the same).
    family<counter>& counters(const std::string& name, const std::string& help,
                              std::vector<std::string> labels = {});
    family<gauge>& gauges(const std::string& name, const std::string& help,
                          std::vector<std::string> labels = {});
    family<histogram>& histograms(const std::string& name, const std::string& help,
                                  std::vector<std::string> labels,
                                  std::vector<double> bounds = duration_buckets());
    // The one series of a family without labels.
    counter& counter_of(const std::string& name, const std::string& help) {
        return counters(name, help).with({});
    }
    histogram& histogram_of(const std::string& name, const std::string& help) {
        return histograms(name, help, {}).with({});
    }

    // Writes families computed at scrape time, after the registered ones; runs on the
    // scraping thread.
    using collector = std::function<void(text_writer&)>;
    [[nodiscard]] collector_handle add_collector(collector c);

    // Every family in the text format: registered ones by name, then the collectors'.
    std::string render() const;

  private:
    friend class collector_handle;
    void remove_collector(uint64_t id);

    mutable std::mutex _mu;  // families and collectors lists
    std::map<std::string, std::unique_ptr<family<counter>>> _counters;
    std::map<std::string, std::unique_ptr<family<gauge>>> _gauges;
    std::map<std::string, std::unique_ptr<family<histogram>>> _histograms;
    // Held while collectors run, so that removing one waits for a scrape.
    mutable std::mutex _collect_mu;
    std::map<uint64_t, collector> _collectors;
    uint64_t _next_id = 1;
};

// The process's registry: what the broker's modules count into and GET /metrics shows.
registry& global();

}  // namespace sluice::metrics

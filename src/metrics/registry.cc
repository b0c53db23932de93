#include "metrics/registry.h"

#include <algorithm>

namespace sluice::metrics {

histogram::histogram(std::shared_ptr<const std::vector<double>> bounds)
    : _bounds(std::move(bounds)),
      _counts(std::make_unique<std::atomic<uint64_t>[]>(_bounds->size() + 1)) {}

void histogram::observe(double v) {
    const auto& b = *_bounds;
    // Buckets are upper bounds: v lands in the first bound >= v.
    size_t i = static_cast<size_t>(std::lower_bound(b.begin(), b.end(), v) - b.begin());
    _counts[i].fetch_add(1, std::memory_order_relaxed);
    _sum.fetch_add(v, std::memory_order_relaxed);
}

std::vector<uint64_t> histogram::cumulative() const {
    std::vector<uint64_t> out(_bounds->size() + 1);
    uint64_t total = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        total += _counts[i].load(std::memory_order_relaxed);
        out[i] = total;
    }
    return out;
}

std::vector<double> duration_buckets() {
    return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
            0.025,  0.05,    0.1,    0.25,  0.5,    1,     2.5, 5, 10};
}

collector_handle& collector_handle::operator=(collector_handle&& o) noexcept {
    if (this != &o) {
        reset();
        _r = o._r;
        _id = o._id;
        o._r = nullptr;
    }
    return *this;
}

void collector_handle::reset() {
    if (_r) _r->remove_collector(_id);
    _r = nullptr;
}

family<counter>& registry::counters(const std::string& name, const std::string& help,
                                    std::vector<std::string> labels) {
    std::lock_guard lk(_mu);
    auto& f = _counters[name];
    if (!f) f = std::make_unique<family<counter>>(name, help, std::move(labels));
    return *f;
}

family<gauge>& registry::gauges(const std::string& name, const std::string& help,
                                std::vector<std::string> labels) {
    std::lock_guard lk(_mu);
    auto& f = _gauges[name];
    if (!f) f = std::make_unique<family<gauge>>(name, help, std::move(labels));
    return *f;
}

family<histogram>& registry::histograms(const std::string& name, const std::string& help,
                                        std::vector<std::string> labels,
                                        std::vector<double> bounds) {
    std::lock_guard lk(_mu);
    auto& f = _histograms[name];
    if (!f) {
        std::sort(bounds.begin(), bounds.end());
        auto shared = std::make_shared<const std::vector<double>>(std::move(bounds));
        f = std::make_unique<family<histogram>>(name, help, std::move(labels), shared);
    }
    return *f;
}

collector_handle registry::add_collector(collector c) {
    std::lock_guard lk(_collect_mu);
    uint64_t id = _next_id++;
    _collectors.emplace(id, std::move(c));
    return {this, id};
}

void registry::remove_collector(uint64_t id) {
    std::lock_guard lk(_collect_mu);
    _collectors.erase(id);
}

namespace {

template <typename T>
std::vector<label> labels_of(const family<T>& f, const std::vector<std::string>& values) {
    std::vector<label> out;
    out.reserve(values.size());
    for (size_t i = 0; i < values.size() && i < f.label_names().size(); ++i)
        out.emplace_back(f.label_names()[i], values[i]);
    return out;
}

}  // namespace

std::string registry::render() const {
    std::string out;
    text_writer w(out);
    // Families outlive the registry's lock (never removed), so their pointers may be
    // taken under it and read after.
    std::vector<const family<counter>*> cs;
    std::vector<const family<gauge>*> gs;
    std::vector<const family<histogram>*> hs;
    {
        std::lock_guard lk(_mu);
        for (const auto& [n, f] : _counters) cs.push_back(f.get());
        for (const auto& [n, f] : _gauges) gs.push_back(f.get());
        for (const auto& [n, f] : _histograms) hs.push_back(f.get());
    }
    for (const auto* f : cs) {
        w.family(f->name(), f->help(), metric_type::counter);
        f->each([&](const auto& values, const counter& c) {
            auto ls = labels_of(*f, values);
            w.sample(f->name(), ls, c.value());
        });
    }
    for (const auto* f : gs) {
        w.family(f->name(), f->help(), metric_type::gauge);
        f->each([&](const auto& values, const gauge& g) {
            auto ls = labels_of(*f, values);
            w.sample(f->name(), ls, g.value());
        });
    }
    for (const auto* f : hs) {
        w.family(f->name(), f->help(), metric_type::histogram);
        f->each([&](const auto& values, const histogram& h) {
            auto ls = labels_of(*f, values);
            auto cum = h.cumulative();
            w.histogram(f->name(), ls, h.bounds(), cum, h.sum());
        });
    }
    std::lock_guard lk(_collect_mu);
    for (const auto& [id, c] : _collectors) c(w);
    return out;
}

registry& global() {
    static registry* r = new registry;  // never destroyed: threads may count until exit
    return *r;
}

}  // namespace sluice::metrics

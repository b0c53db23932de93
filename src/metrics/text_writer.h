#pragma once

// The Prometheus text exposition format (version 0.0.4), written family by family:
//
//   # HELP <name> <help, with \ and newline escaped>
//   # TYPE <name> counter|gauge|histogram
//   <name>[{label="value",...}] <value>
//
// Label values escape \, " and newline; integers print as integers, other values in
// the shortest form that reads back exactly, and +Inf, -Inf, NaN as Prometheus spells
// them. A histogram's series are <name>_bucket{...,le="<bound>"} (cumulative, the last
// le="+Inf"), <name>_sum and <name>_count.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::metrics {

enum class metric_type { counter, gauge, histogram };
std::string_view type_name(metric_type t);

// A label's name and value.
using label = std::pair<std::string_view, std::string_view>;

class text_writer {
  public:
    explicit text_writer(std::string& out) : _out(out) {}

    // Starts a family: its HELP and TYPE lines. `name` is the family's name (without
    // _bucket/_sum/_count for a histogram).
    void family(std::string_view name, std::string_view help, metric_type type);

    // One sample line; `name` is the series' name (the family's, or its _bucket, _sum,
    // _count for a histogram).
    void sample(std::string_view name, std::span<const label> labels, double value);
    void sample(std::string_view name, std::span<const label> labels, uint64_t value);
    void sample(std::string_view name, std::span<const label> labels, int64_t value);

    // A histogram's series: `bounds` ascending (without +Inf), `cumulative` one count per
    // bound and one more for +Inf (the total).
    void histogram(std::string_view name, std::span<const label> labels,
                   std::span<const double> bounds, std::span<const uint64_t> cumulative,
                   double sum);

  private:
    void head(std::string_view name, std::span<const label> labels,
              std::pair<std::string_view, std::string_view> extra = {});

    std::string& _out;
};

// The value as the format writes it ("+Inf", "1.5", "42").
std::string format_value(double v);

}  // namespace sluice::metrics

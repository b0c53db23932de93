#include "metrics/text_writer.h"

#include <fmt/format.h>

#include <cmath>

namespace sluice::metrics {
namespace {

void escape_label_value(std::string& out, std::string_view v) {
    for (char c : v) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '"': out += "\\\""; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
}

void escape_help(std::string& out, std::string_view v) {
    for (char c : v) {
        switch (c) {
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            default: out += c;
        }
    }
}

}  // namespace

std::string_view type_name(metric_type t) {
    switch (t) {
        case metric_type::counter: return "counter";
        case metric_type::gauge: return "gauge";
        case metric_type::histogram: return "histogram";
    }
    return "untyped";
}

std::string format_value(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
    // Whole numbers within 2^53 print without an exponent or a fraction.
    if (std::fabs(v) < 9007199254740992.0 && v == std::floor(v))
        return fmt::format("{}", static_cast<int64_t>(v));
    return fmt::format("{}", v);  // shortest round-trip form
}

void text_writer::family(std::string_view name, std::string_view help, metric_type type) {
    _out += "# HELP ";
    _out += name;
    _out += ' ';
    escape_help(_out, help);
    _out += "\n# TYPE ";
    _out += name;
    _out += ' ';
    _out += type_name(type);
    _out += '\n';
}

void text_writer::head(std::string_view name, std::span<const label> labels,
                       std::pair<std::string_view, std::string_view> extra) {
    _out += name;
    if (labels.empty() && extra.first.empty()) {
        _out += ' ';
        return;
    }
    _out += '{';
    bool first = true;
    auto put = [&](std::string_view n, std::string_view v) {
        if (!first) _out += ',';
        first = false;
        _out += n;
        _out += "=\"";
        escape_label_value(_out, v);
        _out += '"';
    };
    for (const auto& [n, v] : labels) put(n, v);
    if (!extra.first.empty()) put(extra.first, extra.second);
    _out += "} ";
}

void text_writer::sample(std::string_view name, std::span<const label> labels, double value) {
    head(name, labels);
    _out += format_value(value);
    _out += '\n';
}

void text_writer::sample(std::string_view name, std::span<const label> labels, uint64_t value) {
    head(name, labels);
    fmt::format_to(std::back_inserter(_out), "{}\n", value);
}

void text_writer::sample(std::string_view name, std::span<const label> labels, int64_t value) {
    head(name, labels);
    fmt::format_to(std::back_inserter(_out), "{}\n", value);
}

void text_writer::histogram(std::string_view name, std::span<const label> labels,
                            std::span<const double> bounds, std::span<const uint64_t> cumulative,
                            double sum) {
    std::string series(name);
    const size_t base = series.size();
    series += "_bucket";
    for (size_t i = 0; i <= bounds.size() && i < cumulative.size(); ++i) {
        std::string le = i < bounds.size() ? format_value(bounds[i]) : "+Inf";
        head(series, labels, {"le", le});
        fmt::format_to(std::back_inserter(_out), "{}\n", cumulative[i]);
    }
    series.resize(base);
    series += "_sum";
    sample(series, labels, sum);
    series.resize(base);
    series += "_count";
    sample(series, labels, cumulative.empty() ? uint64_t{0} : cumulative.back());
}

}  // namespace sluice::metrics

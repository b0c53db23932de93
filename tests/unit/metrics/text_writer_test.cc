#include "metrics/text_writer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

namespace sluice::metrics {
namespace {

TEST(TextWriter, FamilyHeadEscapesHelp) {
    std::string out;
    text_writer w(out);
    w.family("x_total", "a \\ back\nslash", metric_type::counter);
    EXPECT_EQ(out, "# HELP x_total a \\\\ back\\nslash\n# TYPE x_total counter\n");
}

TEST(TextWriter, SampleWithoutLabels) {
    std::string out;
    text_writer w(out);
    w.sample("up", {}, uint64_t{1});
    w.sample("temp", {}, -2.5);
    w.sample("delta", {}, int64_t{-7});
    EXPECT_EQ(out, "up 1\ntemp -2.5\ndelta -7\n");
}

TEST(TextWriter, LabelValuesAreEscaped) {
    std::string out;
    text_writer w(out);
    std::vector<label> ls{{"topic", "a\"b\\c\nd"}, {"partition", "3"}};
    w.sample("m", ls, uint64_t{5});
    EXPECT_EQ(out, "m{topic=\"a\\\"b\\\\c\\nd\",partition=\"3\"} 5\n");
}

TEST(TextWriter, SpecialValues) {
    EXPECT_EQ(format_value(std::numeric_limits<double>::infinity()), "+Inf");
    EXPECT_EQ(format_value(-std::numeric_limits<double>::infinity()), "-Inf");
    EXPECT_EQ(format_value(std::nan("")), "NaN");
    EXPECT_EQ(format_value(3.0), "3");
    EXPECT_EQ(format_value(0.0001), "0.0001");
    EXPECT_EQ(format_value(1e20), "1e+20");
}

TEST(TextWriter, HistogramSeries) {
    std::string out;
    text_writer w(out);
    std::vector<double> bounds{0.5, 1};
    std::vector<uint64_t> cum{1, 3, 4};
    std::vector<label> ls{{"api", "Produce"}};
    w.histogram("d_seconds", ls, bounds, cum, 7.25);
    EXPECT_EQ(out,
              "d_seconds_bucket{api=\"Produce\",le=\"0.5\"} 1\n"
              "d_seconds_bucket{api=\"Produce\",le=\"1\"} 3\n"
              "d_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 4\n"
              "d_seconds_sum{api=\"Produce\"} 7.25\n"
              "d_seconds_count{api=\"Produce\"} 4\n");
}

}  // namespace
}  // namespace sluice::metrics

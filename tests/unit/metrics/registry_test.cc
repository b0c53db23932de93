#include "metrics/registry.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace sluice::metrics {
namespace {

TEST(Registry, CountersByLabels) {
    registry r;
    auto& f = r.counters("req_total", "Requests.", {"api", "error"});
    f.with({"Produce", "NONE"}).inc();
    f.with({"Produce", "NONE"}).inc(2);
    f.with({"Fetch", "NONE"}).inc();
    // The same label values give the same series.
    EXPECT_EQ(&f.with({"Produce", "NONE"}), &f.with({"Produce", "NONE"}));
    EXPECT_EQ(r.render(),
              "# HELP req_total Requests.\n# TYPE req_total counter\n"
              "req_total{api=\"Fetch\",error=\"NONE\"} 1\n"
              "req_total{api=\"Produce\",error=\"NONE\"} 3\n");
}

TEST(Registry, SameNameSameFamily) {
    registry r;
    auto& a = r.counters("c_total", "C.");
    auto& b = r.counters("c_total", "C.");
    EXPECT_EQ(&a, &b);
}

TEST(Registry, FamilyWithoutSeriesStillShowsItsHead) {
    registry r;
    r.counters("sluice_auth_failures_total", "Failed logins.", {"listener"});
    EXPECT_EQ(r.render(),
              "# HELP sluice_auth_failures_total Failed logins.\n"
              "# TYPE sluice_auth_failures_total counter\n");
}

TEST(Registry, Gauges) {
    registry r;
    auto& g = r.gauges("open", "Open connections.", {"listener"}).with({"PLAINTEXT://x:1"});
    g.add(3);
    g.add(-1);
    EXPECT_EQ(g.value(), 2);
    EXPECT_NE(r.render().find("open{listener=\"PLAINTEXT://x:1\"} 2\n"), std::string::npos);
}

TEST(Histogram, BucketsAreUpperBoundsAndCumulative) {
    registry r;
    auto& h = r.histograms("lat_seconds", "Latency.", {}, {1, 0.1, 0.5}).with({});
    h.observe(0.1);   // le 0.1 (a bound includes its own value)
    h.observe(0.2);   // le 0.5
    h.observe(0.7);   // le 1
    h.observe(30);    // +Inf only
    EXPECT_EQ(h.cumulative(), (std::vector<uint64_t>{1, 2, 3, 4}));
    EXPECT_DOUBLE_EQ(h.sum(), 31.0);
    std::string text = r.render();
    EXPECT_NE(text.find("# TYPE lat_seconds histogram\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.1\"} 1\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"0.5\"} 2\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_bucket{le=\"+Inf\"} 4\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_sum 31\n"), std::string::npos);
    EXPECT_NE(text.find("lat_seconds_count 4\n"), std::string::npos);
}

TEST(Histogram, ObservesDurationsInSeconds) {
    registry r;
    auto& h = r.histograms("d_seconds", "Durations.", {}, {0.01, 1}).with({});
    h.observe(std::chrono::milliseconds(250));
    h.observe_since(std::chrono::steady_clock::now() - std::chrono::seconds(2));
    EXPECT_EQ(h.cumulative(), (std::vector<uint64_t>{0, 1, 2}));
    EXPECT_GE(h.sum(), 2.25);
    EXPECT_LT(h.sum(), 60.0);
}

TEST(Family, EachOfResolvesOneSeriesPerValueInOrder) {
    registry r;
    auto& f = r.counters("ends_total", "Ends.", {"outcome"});
    auto by = f.each_of<2>({"ok", "failed"});
    by[1]->inc(3);
    EXPECT_EQ(by[0], &f.with({"ok"}));
    EXPECT_EQ(f.with({"failed"}).value(), 3u);
    EXPECT_NE(r.render().find("ends_total{outcome=\"ok\"} 0\n"), std::string::npos);
}

TEST(Registry, CollectorsRunAtScrapeAndGoAway) {
    registry r;
    int value = 1;
    {
        auto h = r.add_collector([&](text_writer& w) {
            w.family("computed", "At scrape time.", metric_type::gauge);
            w.sample("computed", {}, int64_t{value});
        });
        EXPECT_NE(r.render().find("computed 1\n"), std::string::npos);
        value = 5;
        EXPECT_NE(r.render().find("computed 5\n"), std::string::npos);
    }
    EXPECT_EQ(r.render().find("computed"), std::string::npos);
}

TEST(Registry, CountersFromManyThreadsAddUp) {
    registry r;
    auto& c = r.counter_of("n_total", "N.");
    std::vector<std::thread> ts;
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([&] {
            for (int i = 0; i < 100000; ++i) c.inc();
        });
    for (auto& t : ts) t.join();
    EXPECT_EQ(c.value(), 400000u);
}

}  // namespace
}  // namespace sluice::metrics

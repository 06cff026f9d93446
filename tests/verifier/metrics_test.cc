#include "verifier/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(MetricsTest, EscapesLabelValuesAndHelp) {
  EXPECT_EQ(EscapeLabelValue("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
  EXPECT_EQ(EscapeHelp("x\\y\nz\""), "x\\\\y\\nz\"");
  CounterFamily c("t_total", "help with \\ and\nnewline", {"v"});
  c.Inc({"quote\" back\\slash\nnewline"});
  MetricsWriter w;
  c.Render(w);
  EXPECT_EQ(w.text(),
            "# HELP t_total help with \\\\ and\\nnewline\n"
            "# TYPE t_total counter\n"
            "t_total{v=\"quote\\\" back\\\\slash\\nnewline\"} 1\n");
}

TEST(MetricsTest, FormatsValues) {
  EXPECT_EQ(FormatSampleValue(3), "3");
  EXPECT_EQ(FormatSampleValue(0.25), "0.25");
  EXPECT_EQ(FormatSampleValue(0.1), "0.1");
  EXPECT_EQ(FormatSampleValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatSampleValue(-std::numeric_limits<double>::infinity()),
            "-Inf");
  EXPECT_EQ(FormatSampleValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
  EXPECT_EQ(FormatSampleValue(1700000000), "1700000000");
}

TEST(MetricsTest, HistogramBucketsAreCumulativeAndEndWithInf) {
  HistogramFamily h("lat_seconds", "latency", {"route"}, {0.25, 1});
  h.Observe({"/a"}, 0.125);
  h.Observe({"/a"}, 0.25);  // le is inclusive
  h.Observe({"/a"}, 0.5);
  h.Observe({"/a"}, 7);
  MetricsWriter w;
  h.Render(w);
  EXPECT_EQ(w.text(),
            "# HELP lat_seconds latency\n"
            "# TYPE lat_seconds histogram\n"
            "lat_seconds_bucket{route=\"/a\",le=\"0.25\"} 2\n"
            "lat_seconds_bucket{route=\"/a\",le=\"1\"} 3\n"
            "lat_seconds_bucket{route=\"/a\",le=\"+Inf\"} 4\n"
            "lat_seconds_sum{route=\"/a\"} 7.875\n"
            "lat_seconds_count{route=\"/a\"} 4\n");
  EXPECT_EQ(h.Count({"/a"}), 4u);
}

TEST(MetricsTest, SeriesBeyondTheLimitAreDroppedAndCounted) {
  Metrics m;
  for (int i = 0; i < 1200; ++i)
    m.findings.Inc({"rule" + std::to_string(i), "pass"});
  EXPECT_EQ(m.series_dropped(), 200u);
  EXPECT_EQ(m.findings.Value({"rule0", "pass"}), 1);
  EXPECT_EQ(m.findings.Value({"rule1100", "pass"}), 0);
  EXPECT_THAT(m.Render(),
              HasSubstr("dpuaudit_metrics_series_dropped_total 200\n"));
}

TEST(MetricsTest, WrongLabelCountIsIgnored) {
  Metrics m;
  m.appraisals.Inc({"admit", "extra"});
  m.appraisals.Inc({});
  EXPECT_THAT(m.Render(), Not(HasSubstr("dpuaudit_appraisals_total{")));
}

TEST(MetricsTest, UnlabelledCounterShownAtZeroAndCollectorsRunAtScrape) {
  Metrics m;
  int scrapes = 0;
  m.AddCollector([&scrapes](MetricsWriter& w) {
    ++scrapes;
    w.Family("dpuaudit_test_gauge", "a collector's gauge", "gauge");
    w.Sample("dpuaudit_test_gauge", {"state"}, {"approved"}, scrapes);
  });
  std::string first = m.Render();
  EXPECT_THAT(first, HasSubstr("dpuaudit_nonces_issued_total 0\n"));
  EXPECT_THAT(first, HasSubstr("dpuaudit_test_gauge{state=\"approved\"} 1\n"));
  EXPECT_THAT(m.Render(),
              HasSubstr("dpuaudit_test_gauge{state=\"approved\"} 2\n"));
}

TEST(MetricsTest, ConcurrentIncrementsAreAllCounted) {
  Metrics m;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&m] {
      for (int i = 0; i < 10000; ++i) {
        m.appraisals.Inc({"admit"});
        m.http_duration.Observe({"GET", "/healthz"}, 0.001);
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(m.appraisals.Value({"admit"}), 40000);
  EXPECT_EQ(m.http_duration.Count({"GET", "/healthz"}), 40000u);
}

TEST(MetricsTest, MethodAndStatusLabelsComeFromFixedSets) {
  EXPECT_EQ(MethodLabel("GET"), "GET");
  EXPECT_EQ(MethodLabel("BREW"), "other");
  EXPECT_EQ(MethodLabel("get"), "other");
  EXPECT_EQ(StatusClass(201), "2xx");
  EXPECT_EQ(StatusClass(404), "4xx");
  EXPECT_EQ(StatusClass(503), "5xx");
  EXPECT_EQ(StatusClass(99), "other");
}

}  // namespace
}  // namespace dpuaudit::verifier

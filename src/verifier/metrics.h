// Metrics: the verifier's Prometheus metrics (GET /metrics), in the text
// exposition format version 0.0.4
// (https://prometheus.io/docs/instrumenting/exposition_formats/).
//
// A small registry: counter, gauge and histogram families with labels, and
// collectors run at scrape time (AddCollector) for values read from
// elsewhere (the store, the webhook outbox).
//
// Guarantees:
//  - Thread-safe. Recording takes one short per-family mutex (a map lookup
//    and an add); rendering copies each family under its mutex.
//  - Bounded cardinality: each family keeps at most `max_series` label
//    combinations; a sample for a new combination beyond that is dropped
//    and counted in dpuaudit_metrics_series_dropped_total. Callers pass
//    label values from fixed sets, or node ids of enrolled nodes only,
//    never bytes from unauthenticated input.
//  - Render is O(series): no store access except what collectors do.
//  - The text is valid exposition format: "# HELP" (backslash and newline
//    escaped), "# TYPE", label values with backslash, double quote and
//    newline escaped, histograms as cumulative _bucket{le=...} series
//    ending with le="+Inf", then _sum and _count.
// Does not: persist anything (counters restart at zero with the process,
// which Prometheus' rate() handles); expose timestamps on samples.
#ifndef DPUAUDIT_VERIFIER_METRICS_H_
#define DPUAUDIT_VERIFIER_METRICS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace dpuaudit::verifier {

using LabelValues = std::vector<std::string>;

// Writes exposition text. Family() starts a metric family; Sample() adds one
// line to it.
class MetricsWriter {
 public:
  void Family(std::string_view name, std::string_view help,
              std::string_view type);
  void Sample(std::string_view name,
              const std::vector<std::string>& label_names,
              const LabelValues& label_values, double value);
  const std::string& text() const { return out_; }

 private:
  std::string out_;
};

// "\\" -> "\\\\", "\"" -> "\\\"", newline -> "\\n" (label values).
std::string EscapeLabelValue(std::string_view s);
// "\\" -> "\\\\", newline -> "\\n" (HELP text).
std::string EscapeHelp(std::string_view s);
// Integers without a fraction, "+Inf", "-Inf", "NaN", otherwise the
// shortest %g form (15-17 digits) that reads back exactly.
std::string FormatSampleValue(double v);

inline constexpr size_t kDefaultMaxSeries = 1000;

class CounterFamily {
 public:
  CounterFamily(std::string name, std::string help,
                std::vector<std::string> label_names,
                size_t max_series = kDefaultMaxSeries);
  void Inc(const LabelValues& values, double by = 1);
  // The current value (0 when the series does not exist).
  double Value(const LabelValues& values) const;
  void Render(MetricsWriter& w) const;

 private:
  friend class Metrics;
  std::string name_, help_;
  std::vector<std::string> label_names_;
  size_t max_series_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> series_;
  std::atomic<uint64_t>* dropped_ = nullptr;
};

class GaugeFamily {
 public:
  GaugeFamily(std::string name, std::string help,
              std::vector<std::string> label_names,
              size_t max_series = kDefaultMaxSeries);
  void Set(const LabelValues& values, double v);
  double Value(const LabelValues& values) const;
  void Render(MetricsWriter& w) const;

 private:
  friend class Metrics;
  std::string name_, help_;
  std::vector<std::string> label_names_;
  size_t max_series_;
  mutable std::mutex mu_;
  std::map<LabelValues, double> series_;
  std::atomic<uint64_t>* dropped_ = nullptr;
};

class HistogramFamily {
 public:
  // `bounds`: ascending upper bounds of the buckets (le), without +Inf.
  HistogramFamily(std::string name, std::string help,
                  std::vector<std::string> label_names,
                  std::vector<double> bounds,
                  size_t max_series = kDefaultMaxSeries);
  void Observe(const LabelValues& values, double v);
  uint64_t Count(const LabelValues& values) const;
  void Render(MetricsWriter& w) const;

 private:
  friend class Metrics;
  struct Series {
    std::vector<uint64_t> buckets;  // per bound, not cumulative; +1 for +Inf
    double sum = 0;
    uint64_t count = 0;
  };
  std::string name_, help_;
  std::vector<std::string> label_names_;
  std::vector<double> bounds_;
  size_t max_series_;
  mutable std::mutex mu_;
  std::map<LabelValues, Series> series_;
  std::atomic<uint64_t>* dropped_ = nullptr;
};

// The verifier's metrics (README.md "Operate the verifier" -> "Metrics").
class Metrics {
 public:
  Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // dpuaudit_appraisals_total{result="admit"|"deny"}
  CounterFamily appraisals;
  // dpuaudit_appraisal_findings_total{rule_id, verdict}
  CounterFamily findings;
  // dpuaudit_http_request_duration_seconds{method, route}
  HistogramFamily http_duration;
  // dpuaudit_http_requests_total{method, route, code_class="2xx".."5xx"}
  CounterFamily http_requests;
  // dpuaudit_nonces_issued_total
  CounterFamily nonces_issued;
  // dpuaudit_nonces_expired_total{how="refused"|"purged"}
  CounterFamily nonces_expired;
  // dpuaudit_reports_refused_total{reason}
  CounterFamily reports_refused;
  // dpuaudit_node_last_admit_timestamp_seconds{node_id}
  GaugeFamily node_last_admit;

  // Runs at every scrape, after the families above, in the order added
  // (before serving only: not synchronised with Render).
  void AddCollector(std::function<void(MetricsWriter&)> collector);
  std::string Render() const;

  uint64_t series_dropped() const { return dropped_.load(); }

 private:
  std::atomic<uint64_t> dropped_{0};
  std::vector<std::function<void(MetricsWriter&)>> collectors_;
};

// The method label: GET, POST, PUT, DELETE, HEAD, OPTIONS, PATCH, or "other"
// (the method is the client's bytes).
std::string MethodLabel(std::string_view method);
// "2xx" for 200..299, ..., "other" outside 100..599.
std::string StatusClass(int status);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_METRICS_H_

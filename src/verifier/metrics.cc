#include "verifier/metrics.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

namespace dpuaudit::verifier {

std::string EscapeLabelValue(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string EscapeHelp(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 9.007199254740992e15) {
    return std::to_string(static_cast<int64_t>(v));
  }
  // The shortest of 15-17 significant digits that reads back as `v`.
  char buf[32];
  for (int precision = 15; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

void MetricsWriter::Family(std::string_view name, std::string_view help,
                           std::string_view type) {
  out_ += "# HELP ";
  out_ += name;
  out_ += ' ';
  out_ += EscapeHelp(help);
  out_ += "\n# TYPE ";
  out_ += name;
  out_ += ' ';
  out_ += type;
  out_ += '\n';
}

void MetricsWriter::Sample(std::string_view name,
                           const std::vector<std::string>& label_names,
                           const LabelValues& label_values, double value) {
  out_ += name;
  if (!label_names.empty()) {
    out_ += '{';
    for (size_t i = 0; i < label_names.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += label_names[i];
      out_ += "=\"";
      out_ += EscapeLabelValue(i < label_values.size() ? label_values[i] : "");
      out_ += '"';
    }
    out_ += '}';
  }
  out_ += ' ';
  out_ += FormatSampleValue(value);
  out_ += '\n';
}

// --- Counter / gauge

CounterFamily::CounterFamily(std::string name, std::string help,
                             std::vector<std::string> label_names,
                             size_t max_series)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      max_series_(max_series) {}

namespace {
template <typename Map, typename Value>
Value* Slot(Map& series, const LabelValues& values, size_t max_series,
            std::atomic<uint64_t>* dropped) {
  auto it = series.find(values);
  if (it != series.end()) return &it->second;
  if (series.size() >= max_series) {
    if (dropped != nullptr) ++*dropped;
    return nullptr;
  }
  return &series.emplace(values, Value{}).first->second;
}
}  // namespace

void CounterFamily::Inc(const LabelValues& values, double by) {
  if (values.size() != label_names_.size() || by < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (double* v = Slot<decltype(series_), double>(series_, values, max_series_,
                                                  dropped_)) {
    *v += by;
  }
}

double CounterFamily::Value(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second;
}

void CounterFamily::Render(MetricsWriter& w) const {
  std::map<LabelValues, double> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = series_;
  }
  w.Family(name_, help_, "counter");
  // A counter without labels is shown at 0 before its first increment.
  if (label_names_.empty() && copy.empty()) w.Sample(name_, {}, {}, 0);
  for (const auto& [labels, v] : copy) w.Sample(name_, label_names_, labels, v);
}

GaugeFamily::GaugeFamily(std::string name, std::string help,
                         std::vector<std::string> label_names,
                         size_t max_series)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      max_series_(max_series) {}

void GaugeFamily::Set(const LabelValues& values, double v) {
  if (values.size() != label_names_.size()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (double* slot = Slot<decltype(series_), double>(series_, values,
                                                     max_series_, dropped_)) {
    *slot = v;
  }
}

double GaugeFamily::Value(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second;
}

void GaugeFamily::Render(MetricsWriter& w) const {
  std::map<LabelValues, double> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = series_;
  }
  w.Family(name_, help_, "gauge");
  for (const auto& [labels, v] : copy) w.Sample(name_, label_names_, labels, v);
}

// --- Histogram

HistogramFamily::HistogramFamily(std::string name, std::string help,
                                 std::vector<std::string> label_names,
                                 std::vector<double> bounds, size_t max_series)
    : name_(std::move(name)),
      help_(std::move(help)),
      label_names_(std::move(label_names)),
      bounds_(std::move(bounds)),
      max_series_(max_series) {}

void HistogramFamily::Observe(const LabelValues& values, double v) {
  if (values.size() != label_names_.size() || std::isnan(v)) return;
  size_t bucket = bounds_.size();  // +Inf
  for (size_t i = 0; i < bounds_.size(); ++i) {
    if (v <= bounds_[i]) {
      bucket = i;
      break;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  Series* s =
      Slot<decltype(series_), Series>(series_, values, max_series_, dropped_);
  if (s == nullptr) return;
  if (s->buckets.empty()) s->buckets.assign(bounds_.size() + 1, 0);
  ++s->buckets[bucket];
  s->sum += v;
  ++s->count;
}

uint64_t HistogramFamily::Count(const LabelValues& values) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_.find(values);
  return it == series_.end() ? 0 : it->second.count;
}

void HistogramFamily::Render(MetricsWriter& w) const {
  std::map<LabelValues, Series> copy;
  {
    std::lock_guard<std::mutex> lock(mu_);
    copy = series_;
  }
  w.Family(name_, help_, "histogram");
  std::vector<std::string> bucket_labels = label_names_;
  bucket_labels.push_back("le");
  const std::string bucket_name = name_ + "_bucket";
  for (const auto& [labels, s] : copy) {
    LabelValues lv = labels;
    lv.emplace_back();
    uint64_t cumulative = 0;
    for (size_t i = 0; i <= bounds_.size(); ++i) {
      cumulative += s.buckets[i];
      lv.back() = i < bounds_.size() ? FormatSampleValue(bounds_[i]) : "+Inf";
      w.Sample(bucket_name, bucket_labels, lv, static_cast<double>(cumulative));
    }
    w.Sample(name_ + "_sum", label_names_, labels, s.sum);
    w.Sample(name_ + "_count", label_names_, labels,
             static_cast<double>(s.count));
  }
}

// --- The verifier's metrics

Metrics::Metrics()
    : appraisals("dpuaudit_appraisals_total",
                 "Reports appraised (signature, claims and nonce accepted), by "
                 "decision.",
                 {"result"}),
      findings("dpuaudit_appraisal_findings_total",
               "Findings of accepted reports, by policy rule and verdict.",
               {"rule_id", "verdict"}),
      http_duration(
          "dpuaudit_http_request_duration_seconds",
          "HTTP request latency (request received to response queued), by "
          "route pattern and method.",
          {"method", "route"},
          {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
           10}),
      http_requests(
          "dpuaudit_http_requests_total",
          "HTTP requests answered, by route pattern, method and status class.",
          {"method", "route", "code_class"}),
      nonces_issued("dpuaudit_nonces_issued_total", "Challenge nonces issued.",
                    {}),
      nonces_expired(
          "dpuaudit_nonces_expired_total",
          "Nonces past their expiry: refused in a report (how=refused) or "
          "deleted by maintenance (how=purged, spent or not).",
          {"how"}),
      reports_refused("dpuaudit_reports_refused_total",
                      "Reports refused before appraisal, by reason class.",
                      {"reason"}),
      node_last_admit("dpuaudit_node_last_admit_timestamp_seconds",
                      "Unix time of the node's last admit decision.",
                      {"node_id"}, 100000) {
  for (auto* f : {&appraisals, &findings, &http_requests, &nonces_issued,
                  &nonces_expired, &reports_refused}) {
    f->dropped_ = &dropped_;
  }
  http_duration.dropped_ = &dropped_;
  node_last_admit.dropped_ = &dropped_;
}

void Metrics::AddCollector(std::function<void(MetricsWriter&)> collector) {
  collectors_.push_back(std::move(collector));
}

std::string Metrics::Render() const {
  MetricsWriter w;
  appraisals.Render(w);
  findings.Render(w);
  http_duration.Render(w);
  http_requests.Render(w);
  nonces_issued.Render(w);
  nonces_expired.Render(w);
  reports_refused.Render(w);
  node_last_admit.Render(w);
  w.Family("dpuaudit_metrics_series_dropped_total",
           "Samples dropped because their family reached its series limit.",
           "counter");
  w.Sample("dpuaudit_metrics_series_dropped_total", {}, {},
           static_cast<double>(dropped_.load()));
  for (const auto& c : collectors_) c(w);
  return w.text();
}

std::string MethodLabel(std::string_view method) {
  for (std::string_view m :
       {"GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"}) {
    if (method == m) return std::string(m);
  }
  return "other";
}

std::string StatusClass(int status) {
  if (status < 100 || status > 599) return "other";
  return std::to_string(status / 100) + "xx";
}

}  // namespace dpuaudit::verifier

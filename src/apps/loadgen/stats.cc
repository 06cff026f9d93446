#include "apps/loadgen/stats.h"

#include <algorithm>
#include <cmath>

namespace dpuaudit::apps::loadgen {

int64_t Percentile(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  if (p <= 0) return sorted.front();
  if (p >= 100) return sorted.back();
  // Nearest rank: ceil(p / 100 * n), 1-based.
  const double n = static_cast<double>(sorted.size());
  auto rank = static_cast<size_t>(std::ceil(p / 100.0 * n - 1e-9));
  rank = std::clamp<size_t>(rank, 1, sorted.size());
  return sorted[rank - 1];
}

LatencySummary Summarize(std::vector<int64_t>& samples_us) {
  LatencySummary s;
  if (samples_us.empty()) return s;
  std::sort(samples_us.begin(), samples_us.end());
  s.count = static_cast<int64_t>(samples_us.size());
  s.p50_us = Percentile(samples_us, 50);
  s.p95_us = Percentile(samples_us, 95);
  s.p99_us = Percentile(samples_us, 99);
  s.max_us = samples_us.back();
  double sum = 0;
  for (int64_t v : samples_us) sum += static_cast<double>(v);
  s.mean_us = sum / static_cast<double>(samples_us.size());
  return s;
}

void ErrorCounts::Add(const std::string& request, const std::string& kind,
                      const std::string& message) {
  Entry& e = entries_[{request, kind}];
  if (e.count++ == 0) e.message = message;
}

void ErrorCounts::Merge(const ErrorCounts& other) {
  for (const auto& [key, entry] : other.entries_) {
    Entry& e = entries_[key];
    if (e.count == 0) e.message = entry.message;
    e.count += entry.count;
  }
}

int64_t ErrorCounts::Total() const {
  int64_t n = 0;
  for (const auto& [key, e] : entries_) n += e.count;
  return n;
}

}  // namespace dpuaudit::apps::loadgen

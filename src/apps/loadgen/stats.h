// The load generator's figures: latency percentiles and error counts.
//
// Guarantees: Summarize is pure and deterministic; percentiles use the
// nearest-rank method (the smallest sample with at least p % of the samples
// at or below it), so every figure is a measured sample, never an
// interpolation; an empty set summarises to count 0 and all zeros.
// ErrorCounts keys an error by (request kind, error kind) and keeps the
// first message seen for each key.
// Does not: lock (each worker thread has its own recorders; Merge at the end).
#ifndef DPUAUDIT_APPS_LOADGEN_STATS_H_
#define DPUAUDIT_APPS_LOADGEN_STATS_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace dpuaudit::apps::loadgen {

// Nearest-rank percentile of `sorted` (ascending), p in [0, 100]; 0 when
// empty. p 0 is the minimum, p 100 the maximum.
int64_t Percentile(const std::vector<int64_t>& sorted, double p);

struct LatencySummary {
  int64_t count = 0;
  // Microseconds.
  int64_t p50_us = 0, p95_us = 0, p99_us = 0, max_us = 0;
  double mean_us = 0;
};

// Sorts `samples_us` in place and summarises them.
LatencySummary Summarize(std::vector<int64_t>& samples_us);

class ErrorCounts {
 public:
  struct Entry {
    int64_t count = 0;
    std::string message;  // the first one seen
  };
  // request: "enroll", "challenge", "report", ...; kind: "http 429",
  // "curl 7", "answer" (a 2xx answer we could not use), ...
  void Add(const std::string& request, const std::string& kind, const std::string& message);
  void Merge(const ErrorCounts& other);
  int64_t Total() const;
  const std::map<std::pair<std::string, std::string>, Entry>& entries() const {
    return entries_;
  }

 private:
  std::map<std::pair<std::string, std::string>, Entry> entries_;
};

}  // namespace dpuaudit::apps::loadgen

#endif  // DPUAUDIT_APPS_LOADGEN_STATS_H_

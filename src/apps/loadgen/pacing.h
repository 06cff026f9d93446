// The open-loop schedule of the load generator: N nodes each attesting
// every S seconds, spread evenly, so attestations are due at a constant
// rate of N / S per second whatever the verifier answers (a slow answer
// does not delay the next attestation's due time; it makes it late).
//
// Guarantees: attestation j (j = 0, 1, 2, ...) is node j mod N, due at
// j * S / N seconds after the start (integer nanoseconds, exact for any
// j below 2^63 / (S * 1e9)); so node i attests at i * S / N, then every S
// seconds. DueCount(t) is the number of attestations due at or before t.
// Does not: sleep or read a clock (pure; the runner does both).
#ifndef DPUAUDIT_APPS_LOADGEN_PACING_H_
#define DPUAUDIT_APPS_LOADGEN_PACING_H_

#include <cstdint>

namespace dpuaudit::apps::loadgen {

class Schedule {
 public:
  // nodes >= 1, interval_ns >= 1.
  Schedule(int64_t nodes, int64_t interval_ns) : nodes_(nodes), interval_ns_(interval_ns) {}

  int64_t Node(int64_t j) const { return j % nodes_; }
  // Nanoseconds after the start.
  int64_t DueNs(int64_t j) const {
    // j * S / N without overflow for long runs: whole rounds, then the rest.
    const int64_t round = j / nodes_, k = j % nodes_;
    return round * interval_ns_ + static_cast<int64_t>(
        static_cast<__int128>(k) * interval_ns_ / nodes_);
  }
  // Attestations due in [0, t_ns] (0 for t_ns < 0).
  int64_t DueCount(int64_t t_ns) const;
  double TargetPerSecond() const {
    return static_cast<double>(nodes_) * 1e9 / static_cast<double>(interval_ns_);
  }

 private:
  int64_t nodes_, interval_ns_;
};

}  // namespace dpuaudit::apps::loadgen

#endif  // DPUAUDIT_APPS_LOADGEN_PACING_H_

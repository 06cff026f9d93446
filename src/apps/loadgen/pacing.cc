#include "apps/loadgen/pacing.h"

namespace dpuaudit::apps::loadgen {

int64_t Schedule::DueCount(int64_t t_ns) const {
  if (t_ns < 0) return 0;
  // Largest j with DueNs(j) <= t_ns, plus one: the whole rounds, then the
  // last due position k in the current round, estimated as rest * N / S and
  // corrected by stepping (the rounding of DueNs moves it by one at most).
  const int64_t round = t_ns / interval_ns_;
  const int64_t rest = t_ns % interval_ns_;
  int64_t k = static_cast<int64_t>(static_cast<__int128>(rest) * nodes_ / interval_ns_);
  if (k >= nodes_) k = nodes_ - 1;
  const int64_t base = round * nodes_;
  while (k + 1 < nodes_ && DueNs(base + k + 1) <= t_ns) ++k;
  while (k >= 0 && DueNs(base + k) > t_ns) --k;
  return base + k + 1;
}

}  // namespace dpuaudit::apps::loadgen

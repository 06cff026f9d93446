// RateLimiter: a token bucket per key (node id), for the per-node limits on
// challenges and reports.
//
// Guarantees: each key may take at most `per_minute` actions in any burst and
// `per_minute` per minute sustained (tokens refill continuously). Memory is
// bounded: at most `max_keys` buckets are kept; when full, buckets that have
// refilled completely (idle keys) are dropped first, and if none is idle the
// new key is refused (fail closed: RATE_LIMITED) rather than evicting an
// active one. Thread-safe.
// Does not: persist across restarts (a restart refills every bucket), or
// limit by client address by itself (a limiter keyed by address does;
// the HTTP server also limits connections per address).
#ifndef DPUAUDIT_VERIFIER_RATE_LIMIT_H_
#define DPUAUDIT_VERIFIER_RATE_LIMIT_H_

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/clock.h"
#include "common/status.h"

namespace dpuaudit::verifier {

class RateLimiter {
 public:
  // `per_minute` == 0 disables the limit. `what` names the action in
  // errors ("challenges"), `subject` what a key is ("node", "client").
  RateLimiter(std::string what, uint32_t per_minute, const Clock& clock,
              size_t max_keys = 100000, std::string subject = "node");

  // OK and one token taken, or RATE_LIMITED "<what> for <subject> X are
  // limited to N per minute; retry in S s." (S >= 1).
  Status Take(std::string_view key);

  uint32_t per_minute() const { return per_minute_; }

 private:
  struct Bucket {
    double tokens = 0;
    int64_t updated_s = 0;
  };
  double Refilled(const Bucket& b, int64_t now_ms) const;

  std::string what_;
  std::string subject_;
  uint32_t per_minute_;
  const Clock* clock_;
  size_t max_keys_;
  std::mutex mu_;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_RATE_LIMIT_H_

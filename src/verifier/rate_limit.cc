#include "verifier/rate_limit.h"

#include <algorithm>
#include <cmath>

namespace dpuaudit::verifier {

RateLimiter::RateLimiter(std::string what, uint32_t per_minute, const Clock& clock,
                         size_t max_keys, std::string subject)
    : what_(std::move(what)), subject_(std::move(subject)), per_minute_(per_minute),
      clock_(&clock),
      max_keys_(std::max<size_t>(max_keys, 1)) {}

double RateLimiter::Refilled(const Bucket& b, int64_t now) const {
  double elapsed = static_cast<double>(std::max<int64_t>(now - b.updated_s, 0));
  return std::min(static_cast<double>(per_minute_),
                  b.tokens + elapsed * per_minute_ / 60.0);
}

Status RateLimiter::Take(std::string_view key) {
  if (per_minute_ == 0) return OkStatus();
  const int64_t now = clock_->NowUnixSeconds();
  std::lock_guard<std::mutex> lock(mu_);
  auto it = buckets_.find(std::string(key));
  if (it == buckets_.end()) {
    if (buckets_.size() >= max_keys_) {
      for (auto b = buckets_.begin(); b != buckets_.end();) {
        b = Refilled(b->second, now) >= per_minute_ ? buckets_.erase(b) : std::next(b);
      }
    }
    if (buckets_.size() >= max_keys_) {
      return RateLimitedError(what_ + " are limited to " + std::to_string(per_minute_) +
                              " per minute per " + subject_ + " and " +
                              std::to_string(max_keys_) + " " + subject_ +
                              "s are active; retry in 60 s.");
    }
    it = buckets_.emplace(std::string(key), Bucket{static_cast<double>(per_minute_), now})
             .first;
  }
  Bucket& b = it->second;
  b.tokens = Refilled(b, now);
  b.updated_s = now;
  if (b.tokens < 1.0) {
    double wait = std::ceil((1.0 - b.tokens) * 60.0 / per_minute_);
    return RateLimitedError(what_ + " for " + subject_ + " \"" + std::string(key) +
                            "\" are limited to " + std::to_string(per_minute_) +
                            " per minute; retry in " +
                            std::to_string(std::max<int64_t>(1, static_cast<int64_t>(wait))) +
                            " s.");
  }
  b.tokens -= 1.0;
  return OkStatus();
}

}  // namespace dpuaudit::verifier

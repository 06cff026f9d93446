// Time source. Libraries take a Clock so tests can move time explicitly
// (nonce expiry, decision expiry) without sleeping.
#ifndef DPUAUDIT_COMMON_CLOCK_H_
#define DPUAUDIT_COMMON_CLOCK_H_

#include <atomic>
#include <cstdint>

namespace dpuaudit {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t NowUnixSeconds() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowUnixSeconds() const override;
  static const SystemClock& Get();
};

// A clock that only moves when told to. Thread-safe.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now) : now_(now) {}
  int64_t NowUnixSeconds() const override { return now_.load(); }
  void Advance(int64_t seconds) { now_ += seconds; }
  void Set(int64_t now) { now_ = now; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace dpuaudit

#endif  // DPUAUDIT_COMMON_CLOCK_H_

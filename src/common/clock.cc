#include "common/clock.h"

#include <chrono>

namespace dpuaudit {

int64_t SystemClock::NowUnixSeconds() const {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

const SystemClock& SystemClock::Get() {
  static const SystemClock clock;
  return clock;
}

}  // namespace dpuaudit

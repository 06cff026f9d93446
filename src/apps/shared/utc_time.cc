#include "apps/shared/utc_time.h"

#include <ctime>

namespace dpuaudit::apps {

std::string UtcTime(int64_t unix_seconds, const char* format) {
  std::time_t tt = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
}

}  // namespace dpuaudit::apps

// Times shown to operators: a Unix time in UTC, formatted with strftime.
//
// Guarantees: strftime of `format` over the UTC calendar time (the result
// fits 31 bytes for every format used).
// Does not: use the local time zone.
#ifndef DPUAUDIT_APPS_SHARED_UTC_TIME_H_
#define DPUAUDIT_APPS_SHARED_UTC_TIME_H_

#include <cstdint>
#include <string>

namespace dpuaudit::apps {

// UtcTime(1732950000, "%Y-%m-%dT%H:%M:%SZ") == "2024-11-30T07:00:00Z".
std::string UtcTime(int64_t unix_seconds, const char* format);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_UTC_TIME_H_

// The exit codes of every dpuaudit binary (0 success or admit, 1 deny,
// refused or verification failure, 2 usage or runtime error) and the one
// rule, in every binary, for a Status the verifier (or the local store)
// answered: RefusalExitCode is 1 when it refused the thing named
// (FAILED_PRECONDITION: HTTP 409, a wrong key, serial or state;
// DEADLINE_EXCEEDED: HTTP 410, expired), 2 for everything else (usage, an
// unknown node or token, authentication, transport, server trouble).
// Does not: decide what 1 means for a command (each documents it).
#ifndef DPUAUDIT_APPS_SHARED_EXIT_CODE_H_
#define DPUAUDIT_APPS_SHARED_EXIT_CODE_H_

#include "common/status.h"

namespace dpuaudit::apps {

inline constexpr int kRefusedExit = 1;
inline constexpr int kUsageExit = 2;

inline int RefusalExitCode(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition ||
                 s.code() == StatusCode::kDeadlineExceeded
             ? kRefusedExit
             : kUsageExit;
}

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_EXIT_CODE_H_

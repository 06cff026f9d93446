// Mapping from Status to the verifier's HTTP error responses
// (ARCHITECTURE.md §7): {"error": {"code": "...", "message": "..."}}.
#ifndef DPUAUDIT_APPS_COMMON_HTTP_ERRORS_H_
#define DPUAUDIT_APPS_COMMON_HTTP_ERRORS_H_

#include <string>

#include "common/status.h"

namespace dpuaudit::apps {

int HttpStatusFor(StatusCode code);
// "invalid_argument", "unauthenticated", ... (stable, lower snake case).
std::string ErrorCodeFor(StatusCode code);
// The JSON error body for a Status.
std::string ErrorBody(const Status& status);
std::string ErrorBody(const std::string& code, const std::string& message);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_COMMON_HTTP_ERRORS_H_

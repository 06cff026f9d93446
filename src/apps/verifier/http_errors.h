// Mapping from Status to the verifier's HTTP error responses
// (docs/architecture.md#http-api):
// {"error": {"code": "...", "message": "..."}}.
#ifndef DPUAUDIT_APPS_VERIFIER_HTTP_ERRORS_H_
#define DPUAUDIT_APPS_VERIFIER_HTTP_ERRORS_H_

#include <nlohmann/json.hpp>
#include <string>

#include "common/status.h"

namespace dpuaudit::apps {

int HttpStatusFor(StatusCode code);
// "invalid_argument", "unauthenticated", ... (stable, lower snake case).
std::string ErrorCodeFor(StatusCode code);
// The JSON error body for a Status.
std::string ErrorBody(const Status& status);
std::string ErrorBody(const std::string& code, const std::string& message);
// A JSON response body; never throws (a string that is not UTF-8 gets
// U+FFFD, as nlohmann's error_handler_t::replace does). Every verifier
// response is dumped with it.
std::string JsonBody(const nlohmann::json& j);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_HTTP_ERRORS_H_

#include "apps/verifier/http_errors.h"

#include <algorithm>
#include <cctype>
#include <nlohmann/json.hpp>

namespace dpuaudit::apps {

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return 200;
    case StatusCode::kInvalidArgument: return 400;
    case StatusCode::kUnauthenticated: return 401;
    case StatusCode::kPermissionDenied: return 403;
    case StatusCode::kNotFound: return 404;
    case StatusCode::kAlreadyExists: return 409;
    case StatusCode::kFailedPrecondition: return 409;
    case StatusCode::kDeadlineExceeded: return 410;
    case StatusCode::kResourceExhausted: return 413;
    case StatusCode::kOutOfRange: return 400;
    case StatusCode::kUnavailable: return 503;
    case StatusCode::kUnimplemented: return 501;
    case StatusCode::kRateLimited: return 429;
    case StatusCode::kDataLoss:
    case StatusCode::kInternal: return 500;
  }
  return 500;
}

std::string ErrorCodeFor(StatusCode code) {
  std::string s(StatusCodeName(code));
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string ErrorBody(const std::string& code, const std::string& message) {
  nlohmann::json j = {{"error", {{"code", code}, {"message", message}}}};
  // Never throws: a message quoting untrusted bytes that are not UTF-8 gets
  // U+FFFD in their place.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string JsonBody(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string ErrorBody(const Status& status) {
  return ErrorBody(ErrorCodeFor(status.code()), status.message());
}

}  // namespace dpuaudit::apps

#include "common/status.h"

namespace dpuaudit {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kUnauthenticated: return "UNAUTHENTICATED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kRateLimited: return "RATE_LIMITED";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

Status Status::WithPrefix(std::string_view prefix) const {
  if (ok()) return *this;
  return Status(code_, std::string(prefix) + ": " + message_);
}

#define DPA_DEFINE_ERROR_(Name, Code) \
  Status Name(std::string message) {  \
    return Status(StatusCode::Code, std::move(message)); \
  }
DPA_DEFINE_ERROR_(InvalidArgumentError, kInvalidArgument)
DPA_DEFINE_ERROR_(NotFoundError, kNotFound)
DPA_DEFINE_ERROR_(AlreadyExistsError, kAlreadyExists)
DPA_DEFINE_ERROR_(PermissionDeniedError, kPermissionDenied)
DPA_DEFINE_ERROR_(UnauthenticatedError, kUnauthenticated)
DPA_DEFINE_ERROR_(FailedPreconditionError, kFailedPrecondition)
DPA_DEFINE_ERROR_(DeadlineExceededError, kDeadlineExceeded)
DPA_DEFINE_ERROR_(ResourceExhaustedError, kResourceExhausted)
DPA_DEFINE_ERROR_(OutOfRangeError, kOutOfRange)
DPA_DEFINE_ERROR_(UnavailableError, kUnavailable)
DPA_DEFINE_ERROR_(DataLossError, kDataLoss)
DPA_DEFINE_ERROR_(InternalError, kInternal)
DPA_DEFINE_ERROR_(UnimplementedError, kUnimplemented)
DPA_DEFINE_ERROR_(RateLimitedError, kRateLimited)
#undef DPA_DEFINE_ERROR_

}  // namespace dpuaudit

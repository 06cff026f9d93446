// Status and StatusOr<T>: the error model of every dpuaudit library.
//
// Guarantees: a Status is either OK or carries a code and a one-sentence
// message naming the field or offset at fault. StatusOr<T> holds a value xor
// a non-OK Status; reading the value of a non-OK StatusOr aborts (it is a
// programming error, never an input error).
// Does not: carry payloads, stack traces or exceptions across boundaries.
#ifndef DPUAUDIT_COMMON_STATUS_H_
#define DPUAUDIT_COMMON_STATUS_H_

#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace dpuaudit {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,     // malformed input
  kNotFound,            // absent resource (file, node, nonce)
  kAlreadyExists,
  kPermissionDenied,    // authenticated but not allowed / signature wrong
  kUnauthenticated,     // missing or bad credentials / signature
  kFailedPrecondition,  // state does not allow it (nonce used, not approved)
  kDeadlineExceeded,    // timeout, expired nonce
  kResourceExhausted,   // size limits
  kOutOfRange,
  kUnavailable,         // transient I/O
  kDataLoss,
  kInternal,
  kUnimplemented,
  kRateLimited,         // per-client/per-node request budget spent
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}

  static Status Ok() { return Status(); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "INVALID_ARGUMENT: message" or "OK".
  std::string ToString() const;
  // Returns a copy whose message is "prefix: message" (no-op when OK).
  Status WithPrefix(std::string_view prefix) const;

  bool operator==(const Status& other) const = default;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status OkStatus() { return Status(); }
Status InvalidArgumentError(std::string message);
Status NotFoundError(std::string message);
Status AlreadyExistsError(std::string message);
Status PermissionDeniedError(std::string message);
Status UnauthenticatedError(std::string message);
Status FailedPreconditionError(std::string message);
Status DeadlineExceededError(std::string message);
Status ResourceExhaustedError(std::string message);
Status OutOfRangeError(std::string message);
Status UnavailableError(std::string message);
Status DataLossError(std::string message);
Status InternalError(std::string message);
Status UnimplementedError(std::string message);
Status RateLimitedError(std::string message);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // Implicit from a non-OK Status and from a value, like absl::StatusOr.
  StatusOr(Status status) : rep_(std::move(status)) {  // NOLINT
    if (std::get<Status>(rep_).ok()) {
      rep_ = Status(StatusCode::kInternal, "StatusOr built from an OK Status.");
    }
  }
  StatusOr(const T& value) : rep_(value) {}             // NOLINT
  StatusOr(T&& value) : rep_(std::move(value)) {}       // NOLINT
  template <typename U,
            typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                        !std::is_same_v<std::decay_t<U>, T> &&
                                        !std::is_same_v<std::decay_t<U>, Status>>>
  StatusOr(U&& value) : rep_(T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return std::holds_alternative<T>(rep_); }
  Status status() const {
    return ok() ? Status() : std::get<Status>(rep_);
  }
  const T& value() const& { Check(); return std::get<T>(rep_); }
  T& value() & { Check(); return std::get<T>(rep_); }
  T&& value() && { Check(); return std::get<T>(std::move(rep_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  void Check() const {
    if (!ok()) std::abort();
  }
  std::variant<Status, T> rep_;
};

}  // namespace dpuaudit

#define DPA_CONCAT_INNER_(a, b) a##b
#define DPA_CONCAT_(a, b) DPA_CONCAT_INNER_(a, b)

#define DPA_RETURN_IF_ERROR(expr)                  \
  do {                                             \
    ::dpuaudit::Status dpa_status_ = (expr);       \
    if (!dpa_status_.ok()) return dpa_status_;     \
  } while (false)

#define DPA_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(tmp).value()

// DPA_ASSIGN_OR_RETURN(auto x, F()); returns F()'s error if any.
#define DPA_ASSIGN_OR_RETURN(lhs, expr) \
  DPA_ASSIGN_OR_RETURN_IMPL_(DPA_CONCAT_(dpa_statusor_, __LINE__), lhs, expr)

#endif  // DPUAUDIT_COMMON_STATUS_H_

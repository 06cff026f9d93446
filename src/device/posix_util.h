// Internal POSIX helpers of the device library (not part of its contract).
//
// Guarantees: every descriptor is owned by UniqueFd and opened close-on-exec;
// errno values become a Status in one place (ErrnoStatus): ENOENT/ENOTDIR ->
// NOT_FOUND, EACCES/EPERM -> PERMISSION_DENIED, anything else -> UNAVAILABLE.
#ifndef DPUAUDIT_DEVICE_POSIX_UTIL_H_
#define DPUAUDIT_DEVICE_POSIX_UTIL_H_

#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::device::internal {

// Owns one file descriptor; closes it on destruction. Move-only.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) Reset(std::exchange(o.fd_, -1));
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { Reset(); }

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void Reset(int fd = -1);

 private:
  int fd_ = -1;
};

// "<what>: <strerror>." with the code mapping above.
Status ErrnoStatus(const std::string& what, int err);

// The first `max_bytes` bytes of a file; `truncated` tells whether more
// followed. Errors as ErrnoStatus.
struct Prefix {
  Bytes bytes;
  bool truncated = false;
};
StatusOr<Prefix> ReadPrefix(const std::string& path, size_t max_bytes);

// Sorted entry names of a directory, without "." and "..".
StatusOr<std::vector<std::string>> ListDirectory(const std::string& path);

// Resolves `relative` (no leading '/') under the real directory `root`
// (itself already resolved by realpath). NOT_FOUND if some component does not
// exist; PERMISSION_DENIED if the resolved path, symlinks followed, is not
// `root` or below it.
StatusOr<std::string> ResolveUnder(const std::string& root,
                                   const std::string& relative);

// realpath(3) as a Status.
StatusOr<std::string> RealPath(const std::string& path);

}  // namespace dpuaudit::device::internal

#endif  // DPUAUDIT_DEVICE_POSIX_UTIL_H_

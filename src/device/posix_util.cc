#include "device/posix_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace dpuaudit::device::internal {

void UniqueFd::Reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err) + ".";
  if (err == ENOENT || err == ENOTDIR) return NotFoundError(std::move(msg));
  if (err == EACCES || err == EPERM) {
    return PermissionDeniedError(std::move(msg));
  }
  return UnavailableError(std::move(msg));
}

StatusOr<Prefix> ReadPrefix(const std::string& path, size_t max_bytes) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoStatus("opening " + path, errno);
  Prefix out;
  uint8_t buf[16384];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("reading " + path, errno);
    }
    if (n == 0) break;
    size_t got = static_cast<size_t>(n);
    size_t room = max_bytes - out.bytes.size();
    if (got > room) {
      out.bytes.insert(out.bytes.end(), buf, buf + room);
      out.truncated = true;
      break;
    }
    out.bytes.insert(out.bytes.end(), buf, buf + got);
  }
  return out;
}

StatusOr<std::vector<std::string>> ListDirectory(const std::string& path) {
  struct DirCloser {
    void operator()(DIR* d) const { ::closedir(d); }
  };
  // opendir(3) opens with O_CLOEXEC in glibc.
  std::unique_ptr<DIR, DirCloser> dir(::opendir(path.c_str()));
  if (dir == nullptr) return ErrnoStatus("opening directory " + path, errno);
  std::vector<std::string> names;
  while (true) {
    errno = 0;
    const dirent* e = ::readdir(dir.get());
    if (e == nullptr) {
      if (errno != 0) return ErrnoStatus("reading directory " + path, errno);
      break;
    }
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

StatusOr<std::string> RealPath(const std::string& path) {
  std::unique_ptr<char, decltype(&std::free)> resolved(
      ::realpath(path.c_str(), nullptr), &std::free);
  if (resolved == nullptr) return ErrnoStatus("resolving " + path, errno);
  return std::string(resolved.get());
}

StatusOr<std::string> ResolveUnder(const std::string& root,
                                   const std::string& relative) {
  std::string joined = relative.empty() ? root : root + "/" + relative;
  DPA_ASSIGN_OR_RETURN(std::string resolved, RealPath(joined));
  bool inside =
      resolved == root || (resolved.size() > root.size() &&
                           resolved.compare(0, root.size(), root) == 0 &&
                           (root == "/" || resolved[root.size()] == '/'));
  if (!inside) {
    return PermissionDeniedError(joined + " resolves to " + resolved +
                                 ", outside " + root + ".");
  }
  return resolved;
}

}  // namespace dpuaudit::device::internal

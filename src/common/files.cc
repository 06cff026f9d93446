#include "common/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dpuaudit {
namespace {

Status ErrnoStatus(const std::string& what, int err) {
  std::string msg = what + ": " + std::strerror(err) + ".";
  if (err == ENOENT) return NotFoundError(msg);
  if (err == EACCES || err == EPERM) return PermissionDeniedError(msg);
  if (err == EEXIST) return AlreadyExistsError(msg);
  return UnavailableError(msg);
}

Status WriteAll(int fd, ByteView data, const std::string& path) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("writing " + path, errno);
    }
    off += static_cast<size_t>(n);
  }
  return OkStatus();
}

}  // namespace

StatusOr<Bytes> ReadFileLimited(const std::string& path, size_t max_bytes) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoStatus("opening " + path, errno);
  Bytes out;
  uint8_t buf[16384];
  Status status;
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      status = ErrnoStatus("reading " + path, errno);
      break;
    }
    if (n == 0) break;
    if (out.size() + static_cast<size_t>(n) > max_bytes) {
      status = ResourceExhaustedError(path + " is larger than the limit of " +
                                      std::to_string(max_bytes) + " bytes.");
      break;
    }
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  if (!status.ok()) return status;
  return out;
}

StatusOr<Bytes> ReadPrivateFile(const std::string& path, size_t max_bytes,
                                const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return NotFoundError(what + " " + path + ": " + std::strerror(errno) + ".");
  }
  if (!S_ISREG(st.st_mode)) {
    return InvalidArgumentError(what + " " + path + " is not a regular file.");
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    return PermissionDeniedError(what + " " + path +
                                 " is readable or writable by group or others (mode " +
                                 mode + "); chmod 600 it.");
  }
  return ReadFileLimited(path, max_bytes);
}

Status WriteNewFile(const std::string& path, ByteView data, mode_t mode) {
  int fd = ::open(path.c_str(),
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus("creating " + path, errno);
  Status s = WriteAll(fd, data, path);
  if (s.ok() && ::fchmod(fd, mode) != 0) s = ErrnoStatus("chmod " + path, errno);
  if (s.ok() && ::fsync(fd) != 0) s = ErrnoStatus("fsync " + path, errno);
  ::close(fd);
  if (!s.ok()) ::unlink(path.c_str());
  return s;
}

Status WriteFileAtomic(const std::string& path, ByteView data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  ::unlink(tmp.c_str());
  DPA_RETURN_IF_ERROR(WriteNewFile(tmp, data, mode));
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ErrnoStatus("renaming " + tmp + " to " + path, err);
  }
  return OkStatus();
}

}  // namespace dpuaudit

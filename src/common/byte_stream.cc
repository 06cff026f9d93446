#include "common/byte_stream.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace dpuaudit {
namespace {

class MemoryByteStream final : public ByteStream {
 public:
  MemoryByteStream(Bytes data, std::string name)
      : data_(std::move(data)), name_(std::move(name)) {}
  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    size_t n = std::min(max, data_.size() - pos_);
    if (n > 0) std::memcpy(out, data_.data() + pos_, n);
    pos_ += n;
    return n;
  }
  int64_t SizeHint() const override { return static_cast<int64_t>(data_.size()); }
  std::string Name() const override { return name_; }

 private:
  Bytes data_;
  size_t pos_ = 0;
  std::string name_;
};

class FileByteStream final : public ByteStream {
 public:
  FileByteStream(int fd, std::string path, int64_t size)
      : fd_(fd), path_(std::move(path)), size_(size) {}
  ~FileByteStream() override { ::close(fd_); }
  FileByteStream(const FileByteStream&) = delete;
  FileByteStream& operator=(const FileByteStream&) = delete;

  StatusOr<size_t> Read(uint8_t* out, size_t max) override {
    for (;;) {
      ssize_t n = ::read(fd_, out, max);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno == EINTR) continue;
      return UnavailableError("read " + path_ + ": " + std::strerror(errno));
    }
  }
  int64_t SizeHint() const override { return size_; }
  std::string Name() const override { return path_; }

 private:
  int fd_;
  std::string path_;
  int64_t size_;
};

}  // namespace

std::unique_ptr<ByteStream> NewMemoryByteStream(Bytes data, std::string name) {
  return std::make_unique<MemoryByteStream>(std::move(data), std::move(name));
}

StatusOr<std::unique_ptr<ByteStream>> OpenFileByteStream(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string msg = "open " + path + ": " + std::strerror(err);
    if (err == ENOENT) return NotFoundError(msg);
    if (err == EACCES || err == EPERM) return PermissionDeniedError(msg);
    return UnavailableError(msg);
  }
  struct stat st {};
  int64_t size = -1;
  if (::fstat(fd, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return InvalidArgumentError(path + " is a directory, not a file.");
    }
    if (S_ISREG(st.st_mode)) size = static_cast<int64_t>(st.st_size);
  }
  return std::unique_ptr<ByteStream>(std::make_unique<FileByteStream>(fd, path, size));
}

StatusOr<Bytes> ReadAllBounded(ByteStream& stream, size_t max_bytes) {
  Bytes out;
  uint8_t buf[64 * 1024];
  for (;;) {
    DPA_ASSIGN_OR_RETURN(size_t n, stream.Read(buf, sizeof buf));
    if (n == 0) return out;
    if (out.size() + n > max_bytes) {
      return ResourceExhaustedError(stream.Name() + " is larger than " +
                                    std::to_string(max_bytes) + " bytes.");
    }
    out.insert(out.end(), buf, buf + n);
  }
}

}  // namespace dpuaudit

#include "device/device_source.h"

#include <string_view>

namespace dpuaudit::device {

Status ValidateDevicePath(const std::string& path) {
  auto bad = [&](std::string_view why) {
    return InvalidArgumentError("device path \"" + path + "\" " +
                                std::string(why) + ".");
  };
  if (path.empty() || path[0] != '/') return bad("is not absolute");
  if (path.find('\0') != std::string::npos) return bad("contains a NUL byte");
  if (path == "/") return OkStatus();
  size_t start = 1;
  while (true) {
    size_t end = path.find('/', start);
    std::string_view comp(
        path.data() + start,
        (end == std::string::npos ? path.size() : end) - start);
    if (comp.empty()) return bad("has an empty component");
    if (comp == "." || comp == "..") {
      return bad("has a \".\" or \"..\" component");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return OkStatus();
}

StatusOr<std::unique_ptr<ByteStream>> DeviceSource::OpenStream(
    const std::string& path) const {
  DPA_ASSIGN_OR_RETURN(Bytes data, ReadFile(path, kMaxDefaultStreamBytes));
  return NewMemoryByteStream(std::move(data), path);
}

}  // namespace dpuaudit::device

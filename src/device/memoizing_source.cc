#include "device/memoizing_source.h"

#include <utility>

namespace dpuaudit::device {

StatusOr<Bytes> MemoizingDeviceSource::ReadFile(const std::string& path,
                                                size_t max_bytes) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(path, max_bytes);
  auto it = files_.find(key);
  if (it == files_.end()) {
    it = files_.emplace(std::move(key), inner().ReadFile(path, max_bytes)).first;
  }
  return it->second;
}

StatusOr<std::vector<std::string>> MemoizingDeviceSource::ListDir(
    const std::string& path) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = dirs_.find(path);
  if (it == dirs_.end()) it = dirs_.emplace(path, inner().ListDir(path)).first;
  return it->second;
}

StatusOr<CommandResult> MemoizingDeviceSource::Run(
    const std::vector<std::string>& argv, const CommandOptions& options) const {
  std::lock_guard<std::mutex> lock(mu_);
  RunKey key{argv, options.timeout.count(), options.max_output_bytes};
  auto it = runs_.find(key);
  if (it == runs_.end()) {
    it = runs_.emplace(std::move(key), inner().Run(argv, options)).first;
  }
  return it->second;
}

}  // namespace dpuaudit::device

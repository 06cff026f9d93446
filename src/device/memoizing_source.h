// MemoizingDeviceSource: wraps a DeviceSource and answers a repeated request
// with the first answer, so that every reader of one tool output (or file,
// or listing) in a collection sees the same bytes and the tool runs once.
//
// Guarantees: Run is keyed by argv and the CommandOptions (timeout,
// max_output_bytes), ReadFile by path and max_bytes, ListDir by path; the
// first result — a value or an error — is returned for every later equal
// request. Thread-safe; the inner source is never called twice for one key
// (a request is answered under the lock). Describe is passed through.
// Does not: memoize OpenStream (a stream is consumed once; each call opens
// the inner source's stream again), nor notice that the device changed
// after the first read: use one instance per collection. `inner` must
// outlive this object.
#ifndef DPUAUDIT_DEVICE_MEMOIZING_SOURCE_H_
#define DPUAUDIT_DEVICE_MEMOIZING_SOURCE_H_

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "common/byte_stream.h"
#include "common/bytes.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::device {

class MemoizingDeviceSource final : public ForwardingDeviceSource {
 public:
  using ForwardingDeviceSource::ForwardingDeviceSource;

  // Describe and OpenStream are passed through, not memoized.
  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override;
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override;
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override;

 private:
  using RunKey =
      std::tuple<std::vector<std::string>, std::chrono::milliseconds::rep,
                 size_t>;
  mutable std::mutex mu_;
  mutable std::map<std::pair<std::string, size_t>, StatusOr<Bytes>> files_;
  mutable std::map<std::string, StatusOr<std::vector<std::string>>> dirs_;
  mutable std::map<RunKey, StatusOr<CommandResult>> runs_;
};

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_MEMOIZING_SOURCE_H_

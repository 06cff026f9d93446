// Test double of device::DeviceSource: a map argv -> CommandResult, a map
// path -> bytes, and a map dir -> names. Anything not configured behaves as
// the interface promises: a command is "not installed" (exit 127), a file
// or directory is NOT_FOUND. Also counts Run() calls per argv.
#ifndef DPUAUDIT_TESTS_ISOLATION_FAKE_DEVICE_SOURCE_H_
#define DPUAUDIT_TESTS_ISOLATION_FAKE_DEVICE_SOURCE_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::testing {

class FakeDeviceSource final : public device::DeviceSource {
 public:
  // Exit 0 with this stdout.
  FakeDeviceSource& Command(std::vector<std::string> argv,
                            std::string_view out) {
    device::CommandResult r;
    r.exit_code = 0;
    r.stdout_bytes = ToBytes(out);
    commands_[std::move(argv)] = r;
    return *this;
  }
  FakeDeviceSource& Result(std::vector<std::string> argv,
                           device::CommandResult r) {
    commands_[std::move(argv)] = std::move(r);
    return *this;
  }
  // Run() of this argv returns an error Status.
  FakeDeviceSource& RunError(std::vector<std::string> argv, Status s) {
    run_errors_[std::move(argv)] = std::move(s);
    return *this;
  }
  FakeDeviceSource& File(std::string path, std::string_view content) {
    files_[std::move(path)] = ToBytes(content);
    return *this;
  }
  FakeDeviceSource& Dir(std::string path, std::vector<std::string> names) {
    dirs_[std::move(path)] = std::move(names);
    return *this;
  }

  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    auto it = files_.find(path);
    if (it == files_.end()) return NotFoundError(path + " not found.");
    if (it->second.size() > max_bytes) {
      return ResourceExhaustedError(path + " is too large.");
    }
    return it->second;
  }
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    auto it = dirs_.find(path);
    if (it == dirs_.end()) return NotFoundError(path + " not found.");
    return it->second;
  }
  StatusOr<device::CommandResult> Run(
      const std::vector<std::string>& argv,
      const device::CommandOptions&) const override {
    ++runs_[argv];
    auto e = run_errors_.find(argv);
    if (e != run_errors_.end()) return e->second;
    auto it = commands_.find(argv);
    if (it == commands_.end()) return device::CommandResult{};  // 127
    return it->second;
  }
  std::string Describe() const override { return "fake"; }

  int runs(const std::vector<std::string>& argv) const {
    auto it = runs_.find(argv);
    return it == runs_.end() ? 0 : it->second;
  }

 private:
  std::map<std::vector<std::string>, device::CommandResult> commands_;
  std::map<std::vector<std::string>, Status> run_errors_;
  std::map<std::string, Bytes> files_;
  std::map<std::string, std::vector<std::string>> dirs_;
  mutable std::map<std::vector<std::string>, int> runs_;
};

}  // namespace dpuaudit::testing

#endif  // DPUAUDIT_TESTS_ISOLATION_FAKE_DEVICE_SOURCE_H_

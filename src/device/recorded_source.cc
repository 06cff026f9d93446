// The recorded DeviceSource: replays a folder
// (docs/architecture.md#recorded-device).
#include <sys/stat.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/byte_stream.h"
#include "common/files.h"
#include "device/device_source.h"
#include "device/posix_util.h"
#include "device/recorded.h"

namespace dpuaudit::device {
namespace {

using internal::RealPath;
using internal::ResolveUnder;

struct OpenCommand {
  RecordedCommand entry;
  std::string stdout_file;  // resolved, inside the recording
  std::string stderr_file;  // resolved; empty when none
};

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// Resolves an output path of commands.json inside `root`, which must name an
// existing regular file.
StatusOr<std::string> ResolveOutput(const std::string& root,
                                    const std::string& field,
                                    const std::string& relative) {
  auto resolved = ResolveUnder(root, relative);
  if (!resolved.ok()) {
    if (resolved.status().code() == StatusCode::kPermissionDenied) {
      return InvalidArgumentError(field + " \"" + relative +
                                  "\" resolves outside the recording.");
    }
    return InvalidArgumentError(field + " \"" + relative +
                                "\" does not exist in the recording.");
  }
  struct stat st;
  if (::stat(resolved->c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return InvalidArgumentError(field + " \"" + relative +
                                "\" is not a regular file.");
  }
  return resolved;
}

class RecordedDeviceSource final : public DeviceSource {
 public:
  RecordedDeviceSource(std::string dir, std::optional<std::string> fs_root,
                       std::map<std::vector<std::string>, OpenCommand> cmds)
      : dir_(std::move(dir)),
        fs_root_(std::move(fs_root)),
        commands_(std::move(cmds)) {}

  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    DPA_ASSIGN_OR_RETURN(std::string file, Map(path));
    return ReadFileLimited(file, max_bytes);
  }

  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    DPA_ASSIGN_OR_RETURN(std::string file, Map(path));
    return internal::ListDirectory(file);
  }

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override {
    if (argv.empty()) return InvalidArgumentError("argv must not be empty.");
    CommandResult result;
    auto it = commands_.find(argv);
    if (it == commands_.end()) return result;  // not recorded: 127
    const OpenCommand& cmd = it->second;
    DPA_ASSIGN_OR_RETURN(
        internal::Prefix out,
        internal::ReadPrefix(cmd.stdout_file, options.max_output_bytes));
    result.stdout_bytes = std::move(out.bytes);
    result.truncated = cmd.entry.truncated || out.truncated;
    if (!cmd.stderr_file.empty()) {
      DPA_ASSIGN_OR_RETURN(
          internal::Prefix err,
          internal::ReadPrefix(cmd.stderr_file, options.max_output_bytes));
      result.stderr_bytes = std::move(err.bytes);
      result.truncated = result.truncated || err.truncated;
    }
    result.exit_code = cmd.entry.exit_code;
    result.timed_out = cmd.entry.timed_out;
    return result;
  }

  std::string Describe() const override { return "recorded:" + dir_; }

  // Same mapping and containment check as ReadFile, then streams from disk.
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    DPA_ASSIGN_OR_RETURN(std::string file, Map(path));
    return OpenFileByteStream(file);
  }

 private:
  // Maps a device path to the host path of its recording, refusing any
  // resolution that leaves fs/.
  StatusOr<std::string> Map(const std::string& path) const {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    if (!fs_root_) {
      return NotFoundError(path + " is not in recording " + dir_ +
                           " (it has no fs/).");
    }
    auto mapped = ResolveUnder(*fs_root_, path.substr(1));
    if (!mapped.ok() && mapped.status().code() == StatusCode::kNotFound) {
      return NotFoundError(path + " is not in recording " + dir_ + ".");
    }
    return mapped;
  }

  std::string dir_;
  std::optional<std::string> fs_root_;
  std::map<std::vector<std::string>, OpenCommand> commands_;
};

}  // namespace

StatusOr<std::unique_ptr<DeviceSource>> NewRecordedDeviceSource(
    const std::string& dir) {
  auto root = RealPath(dir);
  if (!root.ok() || !IsDirectory(*root)) {
    return NotFoundError("recording " + dir + " is not a directory.");
  }
  std::optional<std::string> fs_root;
  auto fs = ResolveUnder(*root, "fs");
  if (fs.ok()) {
    if (!IsDirectory(*fs)) {
      return InvalidArgumentError("recording " + dir +
                                  ": fs is not a directory.");
    }
    fs_root = *fs;
  } else if (fs.status().code() != StatusCode::kNotFound) {
    return fs.status().WithPrefix("recording " + dir);
  }

  std::map<std::vector<std::string>, OpenCommand> commands;
  const std::string json_name = dir + "/commands.json";
  auto json_path = ResolveUnder(*root, "commands.json");
  if (json_path.ok()) {
    DPA_ASSIGN_OR_RETURN(Bytes json,
                         ReadFileLimited(*json_path, kMaxCommandsJsonBytes));
    auto parsed = ParseCommandsJson(json);
    if (!parsed.ok()) return parsed.status().WithPrefix(json_name);
    for (size_t i = 0; i < parsed->size(); ++i) {
      RecordedCommand& entry = (*parsed)[i];
      const std::string at = "commands[" + std::to_string(i) + "]";
      OpenCommand cmd;
      auto out = ResolveOutput(*root, at + ".stdout", entry.stdout_path);
      if (!out.ok()) return out.status().WithPrefix(json_name);
      cmd.stdout_file = *out;
      if (!entry.stderr_path.empty()) {
        auto err = ResolveOutput(*root, at + ".stderr", entry.stderr_path);
        if (!err.ok()) return err.status().WithPrefix(json_name);
        cmd.stderr_file = *err;
      }
      std::vector<std::string> argv = entry.argv;
      cmd.entry = std::move(entry);
      commands.emplace(std::move(argv), std::move(cmd));
    }
  } else if (json_path.status().code() != StatusCode::kNotFound) {
    return json_path.status().WithPrefix("recording " + dir);
  }
  return std::unique_ptr<DeviceSource>(std::make_unique<RecordedDeviceSource>(
      dir, std::move(fs_root), std::move(commands)));
}

}  // namespace dpuaudit::device

#include "device/evidence.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/crypto.h"
#include "device/canonical_commands.h"

namespace dpuaudit::device {
namespace {

bool IsSafeArgChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') ||
         std::string_view("_@%+=:,./-").find(c) != std::string_view::npos;
}

bool IsSafeArg(const std::string& a) {
  return !a.empty() && std::all_of(a.begin(), a.end(), IsSafeArgChar);
}

// POSIX shell single-quoting, only where needed, so that distinct argv give
// distinct ids (["a b"] is "'a b'", ["a", "b"] is "a b").
std::string QuoteArg(const std::string& a) {
  if (IsSafeArg(a)) return a;
  std::string out = "'";
  for (char c : a) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// A device node directly under /dev/mst/ with a plain name.
bool IsMstDevice(const std::string& path) {
  const std::string prefix = std::string(kMstDir) + "/";
  if (path.size() <= prefix.size() || path.compare(0, prefix.size(), prefix)) {
    return false;
  }
  std::string name = path.substr(prefix.size());
  return IsSafeArg(name) && name.find('/') == std::string::npos &&
         name != "." && name != "..";
}

// Maps a captured file/dir error to the errno-like code kept in Evidence.
int ErrorExitCode(StatusCode code) {
  switch (code) {
    case StatusCode::kNotFound:
      return 2;
    case StatusCode::kPermissionDenied:
      return 13;
    case StatusCode::kResourceExhausted:
      return 27;
    default:
      return 5;
  }
}

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += '\n';
    out += names[i];
  }
  return out;
}

}  // namespace

std::string_view EvidenceKindName(EvidenceKind k) {
  switch (k) {
    case EvidenceKind::kCommand:
      return "command";
    case EvidenceKind::kFile:
      return "file";
    case EvidenceKind::kDir:
      return "dir";
  }
  return "unknown";
}

std::string Evidence::Source() const {
  if (kind != EvidenceKind::kCommand) return path;
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) out += ' ';
    out += argv[i];
  }
  return out;
}

std::string EvidenceIdForCommand(const std::vector<std::string>& argv) {
  const std::pair<const char*, Argv> fixed[] = {
      {"mst.status", MstStatusArgv()},
      {"mlxfwmanager.query", MlxfwmanagerQueryArgv()},
      {"bfver", BfverArgv()},
      {"mokutil.sb_state", MokutilSbStateArgv()},
      {"bfsbdump", BfsbdumpArgv()},
  };
  for (const auto& [id, canonical] : fixed) {
    if (argv == canonical) return id;
  }
  // Per-device tools: the device is argv[2] in every canonical form.
  if (argv.size() >= 3 && IsMstDevice(argv[2])) {
    const std::string& mst = argv[2];
    const std::pair<const char*, Argv> per_device[] = {
        {"mlxprivhost.query", MlxprivhostQueryArgv(mst)},
        {"mlxconfig.query", MlxconfigQueryArgv(mst)},
        {"flint.query", FlintQueryArgv(mst)},
    };
    for (const auto& [id, canonical] : per_device) {
      if (argv == canonical) return std::string(id) + "@" + mst;
    }
  }
  std::string out = "cmd:";
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i > 0) out += ' ';
    out += QuoteArg(argv[i]);
  }
  return out;
}

std::string EvidenceIdForFile(const std::string& path) {
  return "file:" + path;
}
std::string EvidenceIdForDir(const std::string& path) { return "dir:" + path; }

// ---------------------------------------------------------------------------
// CapturingDeviceSource

StatusOr<std::unique_ptr<ByteStream>> CapturingDeviceSource::OpenStream(
    const std::string& path) const {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::find(streamed_.begin(), streamed_.end(), path) == streamed_.end()) {
      streamed_.push_back(path);
    }
  }
  return inner().OpenStream(path);
}

std::vector<std::string> CapturingDeviceSource::streamed_paths() const {
  std::lock_guard<std::mutex> lock(mu_);
  return streamed_;
}

StatusOr<Bytes> CapturingDeviceSource::ReadFile(const std::string& path,
                                                size_t max_bytes) const {
  DPA_RETURN_IF_ERROR(ValidateDevicePath(path));  // not evidence: a bug
  StatusOr<Bytes> got = inner().ReadFile(path, max_bytes);
  Evidence e;
  e.id = EvidenceIdForFile(path);
  e.kind = EvidenceKind::kFile;
  e.path = path;
  if (got.ok()) {
    e.raw = *got;
  } else {
    e.exit_code = ErrorExitCode(got.status().code());
  }
  e.sha256 = Sha256Hex(e.raw);
  Add(std::move(e));
  return got;
}

StatusOr<std::vector<std::string>> CapturingDeviceSource::ListDir(
    const std::string& path) const {
  DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
  StatusOr<std::vector<std::string>> got = inner().ListDir(path);
  Evidence e;
  e.id = EvidenceIdForDir(path);
  e.kind = EvidenceKind::kDir;
  e.path = path;
  if (got.ok()) {
    e.raw = ToBytes(JoinNames(*got));
  } else {
    e.exit_code = ErrorExitCode(got.status().code());
  }
  e.sha256 = Sha256Hex(e.raw);
  Add(std::move(e));
  return got;
}

StatusOr<CommandResult> CapturingDeviceSource::Run(
    const std::vector<std::string>& argv, const CommandOptions& options) const {
  StatusOr<CommandResult> got = inner().Run(argv, options);
  if (!got.ok()) return got;  // "could not even try": nothing observed
  Evidence e;
  e.id = EvidenceIdForCommand(argv);
  e.kind = EvidenceKind::kCommand;
  e.argv = argv;
  e.exit_code = got->exit_code;
  e.timed_out = got->timed_out;
  e.truncated = got->truncated;
  e.raw = got->stdout_bytes;
  e.stderr_raw = got->stderr_bytes;
  e.sha256 = Sha256Hex(e.raw);
  Add(std::move(e));
  return got;
}

std::string CapturingDeviceSource::Describe() const {
  return "capturing(" + inner().Describe() + ")";
}

std::vector<Evidence> CapturingDeviceSource::evidence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return evidence_;
}

void CapturingDeviceSource::Add(Evidence e) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (Evidence& old : evidence_) {
    if (old.id != e.id) continue;
    // A file first read past its limit and later read whole: keep the bytes,
    // so a replay answers both reads (the limit is applied again).
    if (old.kind == EvidenceKind::kFile && old.exit_code == 27 &&
        e.exit_code == 0) {
      old = std::move(e);
    }
    return;
  }
  evidence_.push_back(std::move(e));
}

// ---------------------------------------------------------------------------
// Evidence source

namespace {

Status ErrorForExitCode(int code, const std::string& path) {
  switch (code) {
    case 2:
      return NotFoundError(path + " was not found when captured.");
    case 13:
      return PermissionDeniedError(path + " was not readable when captured.");
    case 27:
      return ResourceExhaustedError(
          path + " was larger than the limit when captured.");
    default:
      return UnavailableError(path + " could not be read when captured.");
  }
}

Bytes Cut(const Bytes& b, size_t max, bool* truncated) {
  if (b.size() <= max) return b;
  *truncated = true;
  return Bytes(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(max));
}

class EvidenceDeviceSource final : public DeviceSource {
 public:
  explicit EvidenceDeviceSource(size_t count) : count_(count) {}

  // Streams are measured by the agent, never carried as evidence.
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    return NotFoundError(path + " is measured by the agent; the evidence "
                         "carries no stream.");
  }

  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    auto it = files_.find(path);
    if (it == files_.end()) {
      return NotFoundError(path + " is not in the evidence.");
    }
    const Evidence& e = it->second;
    if (e.exit_code != 0) return ErrorForExitCode(e.exit_code, path);
    if (e.raw.size() > max_bytes) {
      return ResourceExhaustedError(path + " is larger than the limit of " +
                                    std::to_string(max_bytes) + " bytes.");
    }
    return e.raw;
  }

  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(path));
    auto it = dirs_.find(path);
    if (it == dirs_.end()) {
      return NotFoundError(path + " is not in the evidence.");
    }
    const Evidence& e = it->second;
    if (e.exit_code != 0) return ErrorForExitCode(e.exit_code, path);
    std::vector<std::string> names;
    std::string raw = ToString(e.raw);
    size_t start = 0;
    while (!raw.empty()) {
      size_t nl = raw.find('\n', start);
      names.push_back(raw.substr(
          start, nl == std::string::npos ? std::string::npos : nl - start));
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    return names;
  }

  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override {
    if (argv.empty()) return InvalidArgumentError("argv must not be empty.");
    CommandResult result;
    auto it = commands_.find(argv);
    if (it == commands_.end()) return result;  // not captured: 127
    const Evidence& e = it->second;
    result.exit_code = e.exit_code;
    result.timed_out = e.timed_out;
    result.truncated = e.truncated;
    result.stdout_bytes =
        Cut(e.raw, options.max_output_bytes, &result.truncated);
    result.stderr_bytes =
        Cut(e.stderr_raw, options.max_output_bytes, &result.truncated);
    return result;
  }

  std::string Describe() const override {
    return "evidence(" + std::to_string(count_) + " entries)";
  }

  size_t count_;
  std::map<std::vector<std::string>, Evidence> commands_;
  std::map<std::string, Evidence> files_;
  std::map<std::string, Evidence> dirs_;
};

Status CheckEntry(const Evidence& e, const std::string& at) {
  std::string expected_id;
  if (e.kind == EvidenceKind::kCommand) {
    if (e.argv.empty() || e.argv[0].empty()) {
      return InvalidArgumentError(at + ".argv must not be empty.");
    }
    if (e.exit_code < -1 || e.exit_code > 255) {
      return InvalidArgumentError(at + ".exit_code " +
                                  std::to_string(e.exit_code) +
                                  " is out of range [-1, 255].");
    }
    if (e.timed_out != (e.exit_code == -1)) {
      return InvalidArgumentError(at + ".exit_code must be -1 exactly when " +
                                  at + ".timed_out is true.");
    }
    expected_id = EvidenceIdForCommand(e.argv);
  } else {
    DPA_RETURN_IF_ERROR(ValidateDevicePath(e.path).WithPrefix(at + ".path"));
    if (e.exit_code != 0 && e.exit_code != 2 && e.exit_code != 5 &&
        e.exit_code != 13 && e.exit_code != 27) {
      return InvalidArgumentError(at + ".exit_code " +
                                  std::to_string(e.exit_code) +
                                  " is not one of 0, 2, 5, 13, 27.");
    }
    expected_id = e.kind == EvidenceKind::kFile ? EvidenceIdForFile(e.path)
                                                : EvidenceIdForDir(e.path);
  }
  if (e.id != expected_id) {
    return InvalidArgumentError(at + ".id \"" + e.id +
                                "\" does not match its " +
                                std::string(EvidenceKindName(e.kind)) +
                                " (expected \"" + expected_id + "\").");
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::unique_ptr<DeviceSource>> NewEvidenceDeviceSource(
    std::vector<Evidence> evidence) {
  auto source = std::make_unique<EvidenceDeviceSource>(evidence.size());
  std::map<std::string, size_t> ids;
  for (size_t i = 0; i < evidence.size(); ++i) {
    Evidence& e = evidence[i];
    const std::string at = "evidence[" + std::to_string(i) + "]";
    auto [it, inserted] = ids.emplace(e.id, i);
    if (!inserted) {
      return InvalidArgumentError(at + " repeats id \"" + e.id +
                                  "\" of evidence[" +
                                  std::to_string(it->second) + "].");
    }
    DPA_RETURN_IF_ERROR(CheckEntry(e, at));
    switch (e.kind) {
      case EvidenceKind::kCommand: {
        std::vector<std::string> argv = e.argv;
        source->commands_.emplace(std::move(argv), std::move(e));
        break;
      }
      case EvidenceKind::kFile: {
        std::string path = e.path;
        source->files_.emplace(std::move(path), std::move(e));
        break;
      }
      case EvidenceKind::kDir: {
        std::string path = e.path;
        source->dirs_.emplace(std::move(path), std::move(e));
        break;
      }
    }
  }
  return std::unique_ptr<DeviceSource>(std::move(source));
}

}  // namespace dpuaudit::device

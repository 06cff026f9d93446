// Evidence: one raw observation (a command's output, a file's bytes or a
// directory listing), as captured by the agent and carried in a report.
//
// Guarantees: `sha256` is the lower-case hex SHA-256 of `raw` whenever the
// Evidence was built by this library; reports whose sha256 does not match
// are rejected by the report parser.
#ifndef DPUAUDIT_DEVICE_EVIDENCE_H_
#define DPUAUDIT_DEVICE_EVIDENCE_H_

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "device/device_source.h"

namespace dpuaudit::device {

enum class EvidenceKind { kCommand, kFile, kDir };
std::string_view EvidenceKindName(EvidenceKind k);  // "command"|"file"|"dir"

struct Evidence {
  std::string id;      // stable: see EvidenceIdForCommand / ForPath
  EvidenceKind kind = EvidenceKind::kCommand;
  std::vector<std::string> argv;  // kCommand
  std::string path;               // kFile, kDir
  // kCommand: the exit code (127 not installed, -1 timed out).
  // kFile/kDir: 0 read, 2 not found, 13 permission denied, 5 other error,
  // 27 larger than the limit.
  int exit_code = 0;
  bool timed_out = false;
  bool truncated = false;
  Bytes raw;         // stdout / file bytes / "\n"-joined sorted names
  Bytes stderr_raw;  // kCommand only
  std::string sha256;  // hex SHA-256 of raw

  std::string Source() const;  // "mlxprivhost -d /dev/mst/... q" or the path
  bool operator==(const Evidence&) const = default;
};

// Canonical ids (ARCHITECTURE.md §4): "mlxprivhost.query" for the canonical
// argv of a known tool; otherwise "cmd:<argv joined by spaces>",
// "file:<path>", "dir:<path>".
std::string EvidenceIdForCommand(const std::vector<std::string>& argv);
std::string EvidenceIdForFile(const std::string& path);
std::string EvidenceIdForDir(const std::string& path);

// Wraps a source and records every access, in order, deduplicated by id.
class CapturingDeviceSource final : public DeviceSource {
 public:
  explicit CapturingDeviceSource(const DeviceSource& inner) : inner_(inner) {}
  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override;
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override;
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override;
  std::string Describe() const override;
  std::vector<Evidence> evidence() const;

 private:
  void Add(Evidence e) const;
  const DeviceSource& inner_;
  mutable std::mutex mu_;
  mutable std::vector<Evidence> evidence_;
};

// Serves exactly the given evidence: a command not in it is "not installed",
// a path not in it is NOT_FOUND; a file captured as an error reproduces that
// error. Returns INVALID_ARGUMENT if two entries share an id.
StatusOr<std::unique_ptr<DeviceSource>> NewEvidenceDeviceSource(
    std::vector<Evidence> evidence);

// Writes evidence as a recorded-device folder (ARCHITECTURE.md §4) that
// NewRecordedDeviceSource reads back identically. `out_dir` must not exist
// or be empty.
Status WriteRecording(const std::vector<Evidence>& evidence,
                      const std::string& out_dir);

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_EVIDENCE_H_

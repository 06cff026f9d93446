// Evidence: one raw observation (a command's output, a file's bytes or a
// directory listing), as captured by the agent and carried in a report.
//
// Guarantees: `sha256` is the lower-case hex SHA-256 of `raw` whenever the
// Evidence was built by this library; reports whose sha256 does not match
// are rejected by the report parser. Capture -> NewEvidenceDeviceSource, and
// capture -> WriteRecording -> NewRecordedDeviceSource, answer the same
// accesses with the same bytes, exit codes and flags (limits noted below).
// Does not: check `sha256` in NewEvidenceDeviceSource (the report parser
// does), or interpret any output.
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

// Canonical ids (docs/architecture.md#recorded-device), one per distinct
// argv or path:
//  - the canonical argv of a device-less tool: "mst.status",
//    "mlxfwmanager.query", "bfver", "mokutil.sb_state", "bfsbdump";
//  - the canonical argv of a per-device tool, with <mst> a plain name
//    directly under /dev/mst/: "<tool>@<mst>", tool one of
//    "mlxprivhost.query", "mlxconfig.query", "flint.query", e.g.
//    "mlxprivhost.query@/dev/mst/mt41692_pciconf0" (so two devices never
//    share an id);
//  - any other argv: "cmd:" + argv joined by single spaces, an argument that
//    is empty or has characters outside [A-Za-z0-9_@%+=:,./-] being
//    single-quoted as a POSIX shell would ("cmd:echo 'a b'"), so the id is
//    unique per argv (Source() joins without quoting);
//  - "file:<path>", "dir:<path>" (paths pass ValidateDevicePath, so they are
//    normalised).
std::string EvidenceIdForCommand(const std::vector<std::string>& argv);
std::string EvidenceIdForFile(const std::string& path);
std::string EvidenceIdForDir(const std::string& path);

// Wraps a source and records every access, in order, deduplicated by id
// (the first access wins, except that a file first refused as too large and
// later read whole keeps the bytes: replaying re-applies each read's limit).
// Files and listings that fail are recorded with their error as exit_code
// (2 NOT_FOUND, 13 PERMISSION_DENIED, 27 RESOURCE_EXHAUSTED, 5 other) and
// empty raw. Not recorded: an invalid path (INVALID_ARGUMENT, returned as
// is) and a Run that returned an error rather than a CommandResult.
// Thread-safe. `inner` must outlive this object.
class CapturingDeviceSource final : public ForwardingDeviceSource {
 public:
  using ForwardingDeviceSource::ForwardingDeviceSource;
  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override;
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override;
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override;
  std::string Describe() const override;
  // Passed through to the inner source, not captured (a stream is measured
  // by the caller, and its measurement travels in the report instead).
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override;
  std::vector<Evidence> evidence() const;
  // Every path OpenStream was asked for, in order, without duplicates (so
  // `record` can copy them into a recording).
  std::vector<std::string> streamed_paths() const;

 private:
  void Add(Evidence e) const;
  mutable std::mutex mu_;
  mutable std::vector<Evidence> evidence_;
  mutable std::vector<std::string> streamed_;
};

// Serves exactly the given evidence: a command not in it is "not installed",
// a path not in it is NOT_FOUND; a file captured as an error reproduces that
// error. Commands match by exact argv, files and listings by exact path.
// Outputs longer than the caller's max_output_bytes are cut (truncated set)
// and files longer than max_bytes are RESOURCE_EXHAUSTED, as live.
// Returns INVALID_ARGUMENT if two entries share an id, an id is not the
// canonical id of its argv/path, a path is invalid, or an exit code is
// impossible (commands: [-1, 255], -1 exactly when timed_out; files/dirs:
// 0, 2, 5, 13, 27).
StatusOr<std::unique_ptr<DeviceSource>> NewEvidenceDeviceSource(
    std::vector<Evidence> evidence);

// Writes evidence as a recorded-device folder
// (docs/architecture.md#recorded-device) that NewRecordedDeviceSource reads
// back identically. `out_dir` must not exist (it is created, its parent must
// exist) or be an empty directory (FAILED_PRECONDITION otherwise). Evidence
// is validated as by
// NewEvidenceDeviceSource before anything is written. Layout: fs/<path> for
// each file read successfully; a directory for each listing, holding an
// empty regular file for each listed name nothing else created (e.g.
// /dev/mst/mt41692_pciconf0); out/NN-<id, sanitised>.txt (and
// .stderr.txt when stderr is non-empty) plus commands.json for every
// command, in evidence order, with "timed_out"/"truncated" when set.
// Not reproduced: a file or listing that failed when captured is simply
// absent, so it replays as NOT_FOUND whatever its original error; a name
// containing a newline in a listing (raw stays byte-identical, the name list
// does not); a file recorded under a directory whose listing did not show
// it (the replayed listing then shows it). On error the folder may be left
// partially written.
Status WriteRecording(const std::vector<Evidence>& evidence,
                      const std::string& out_dir);

// Copies each streamed file (boot partitions, kernel, ...) from `source`
// into out_dir/fs/<path>, streaming, after WriteRecording. A path the source
// does not have (NOT_FOUND) is skipped: the recording lacks it as the device
// did. Each file is written to a temporary name and renamed.
Status CopyStreamsIntoRecording(const DeviceSource& source,
                                const std::vector<std::string>& paths,
                                const std::string& out_dir);

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_EVIDENCE_H_

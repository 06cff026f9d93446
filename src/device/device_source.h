// DeviceSource: the only way collectors and probes see a device.
//
// Implementations (docs/architecture.md#recorded-device):
//  - live: the real filesystem and real commands (fixed argv, no shell,
//    per-command timeout, bounded output);
//  - recorded: a folder DIR with fs/, commands.json and out/;
//  - evidence: the evidence entries carried in a report, so the verifier
//    re-runs the very same probes over what the agent captured;
//  - capturing: wraps another source and records every access as Evidence.
//
// Guarantees: a command the source does not know behaves as "not installed"
// (exit_code 127, empty output) and is not an error; a file that does not
// exist is NOT_FOUND; outputs are bounded by the given limit (the result says
// `truncated`). Errors are reserved for "could not even try" (I/O failure,
// bad recording). All methods are const and thread-compatible.
// Does not: interpret any output. That is the probes' job.
#ifndef DPUAUDIT_DEVICE_DEVICE_SOURCE_H_
#define DPUAUDIT_DEVICE_DEVICE_SOURCE_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/byte_stream.h"
#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::device {

inline constexpr size_t kDefaultMaxOutputBytes = 1 << 20;  // 1 MiB
inline constexpr std::chrono::milliseconds kDefaultCommandTimeout{10000};
inline constexpr int kExitNotInstalled = 127;
inline constexpr size_t kMaxDefaultStreamBytes = 64u << 20;  // 64 MiB

struct CommandOptions {
  std::chrono::milliseconds timeout = kDefaultCommandTimeout;
  size_t max_output_bytes = kDefaultMaxOutputBytes;
};

struct CommandResult {
  int exit_code = kExitNotInstalled;  // 127: not installed / not recorded
  Bytes stdout_bytes;
  Bytes stderr_bytes;
  bool timed_out = false;   // killed after the timeout (exit_code is -1)
  bool truncated = false;   // output exceeded max_output_bytes and was cut
};

class DeviceSource {
 public:
  virtual ~DeviceSource() = default;
  // Reads a file at an absolute path. NOT_FOUND if absent;
  // RESOURCE_EXHAUSTED if larger than max_bytes.
  virtual StatusOr<Bytes> ReadFile(const std::string& path,
                                   size_t max_bytes) const = 0;
  // Names of the entries of a directory (sorted, no "." or "..").
  virtual StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const = 0;
  // Runs argv (argv[0] looked up on PATH for live sources). Never a shell.
  virtual StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                                      const CommandOptions& options) const = 0;
  // Human-readable description ("live", "recorded:/path", ...).
  virtual std::string Describe() const = 0;
  // Opens a large file (boot partition, kernel, initrd) for streaming with
  // bounded memory. NOT_FOUND if absent. The default implementation reads
  // the file with ReadFile(path, kMaxDefaultStreamBytes); live and recorded
  // sources stream from disk. A capturing source does NOT capture streams
  // as evidence (they are measured, not carried), and an evidence source
  // has none (NOT_FOUND).
  virtual StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const;
};

// A source that passes every call to `inner`: the base of the decorators
// (memoizing, capturing, and the tests' counting sources), which override
// only what they change. `inner` must outlive this object.
class ForwardingDeviceSource : public DeviceSource {
 public:
  explicit ForwardingDeviceSource(const DeviceSource& inner) : inner_(inner) {}
  ForwardingDeviceSource(const ForwardingDeviceSource&) = delete;
  ForwardingDeviceSource& operator=(const ForwardingDeviceSource&) = delete;

  StatusOr<Bytes> ReadFile(const std::string& path,
                           size_t max_bytes) const override {
    return inner_.ReadFile(path, max_bytes);
  }
  StatusOr<std::vector<std::string>> ListDir(
      const std::string& path) const override {
    return inner_.ListDir(path);
  }
  StatusOr<CommandResult> Run(const std::vector<std::string>& argv,
                              const CommandOptions& options) const override {
    return inner_.Run(argv, options);
  }
  std::string Describe() const override { return inner_.Describe(); }
  StatusOr<std::unique_ptr<ByteStream>> OpenStream(
      const std::string& path) const override {
    return inner_.OpenStream(path);
  }

 protected:
  const DeviceSource& inner() const { return inner_; }

 private:
  const DeviceSource& inner_;
};

// Checks a device path as every source does before touching it: absolute,
// no "." or ".." component, no NUL byte. INVALID_ARGUMENT naming the path
// otherwise. "/" itself is valid (a directory).
Status ValidateDevicePath(const std::string& path);

// The real machine. Paths must pass ValidateDevicePath. argv[0] without a
// '/' is looked up on the fixed PATH below (never the caller's PATH); the
// child gets exactly this environment, stdin from /dev/null, its own process
// group, and no inherited descriptors beyond 0-2. Output past
// max_output_bytes is read and discarded (so the child is not killed by
// SIGPIPE and its exit code stays genuine) and `truncated` is set. On
// timeout the whole process group gets SIGKILL and is reaped (timed_out,
// exit_code -1), keeping the output read so far. Exit by signal N gives
// 128+N; an executable that is absent gives 127 and one that cannot be
// executed gives 126, both without error.
// Does not: protect against a child that leaves its process group (setsid)
// and keeps running after the timeout.
inline constexpr char kLiveCommandPath[] =
    "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
std::unique_ptr<DeviceSource> NewLiveDeviceSource();
// A recorded folder (§4). Validates commands.json strictly at open time
// (see device/recorded.h), including that every output file it names exists
// inside DIR. Paths must pass ValidateDevicePath and map to DIR/fs/<path>;
// a path whose resolution (symlinks included) leaves DIR/fs is refused with
// PERMISSION_DENIED. Outputs are read at Run time, cut to max_output_bytes.
// NOT_FOUND if DIR is not a directory.
// Does not: guard against DIR being modified while it is in use.
StatusOr<std::unique_ptr<DeviceSource>> NewRecordedDeviceSource(
    const std::string& dir);

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_DEVICE_SOURCE_H_

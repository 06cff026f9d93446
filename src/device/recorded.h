// The commands.json of a recorded device folder
// (docs/architecture.md#recorded-device):
//
//   {"commands": [{"argv": ["mst", "status", "-v"],   // required, non-empty
//                  "stdout": "out/01-mst.status.txt", // required
//                  "stderr": "out/01-x.stderr.txt",   // optional
//                  "exit_code": 0,                    // required, [-1, 255]
//                  "timed_out": false,                // optional
//                  "truncated": false}]}              // optional
//
// Guarantees: ParseCommandsJson is strict and never throws: the input must
// be UTF-8 JSON of at most kMaxCommandsJsonBytes, nested at most 8 deep,
// with no duplicate object keys; unknown keys, wrong types, duplicate argv,
// an empty argv or argv[0], NUL bytes in argv, and output paths that are
// empty, absolute or contain a ".." component are rejected with
// INVALID_ARGUMENT naming the field (`commands[2].exit_code must be an
// integer.`). exit_code is -1 exactly when timed_out is true (the live source
// reports a timeout that way). "truncated" records that the output was cut
// when it was captured, so a replay reports it too.
// Does not: check that the output files exist (NewRecordedDeviceSource
// does), or interpret any output.
#ifndef DPUAUDIT_DEVICE_RECORDED_H_
#define DPUAUDIT_DEVICE_RECORDED_H_

#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::device {

inline constexpr size_t kMaxCommandsJsonBytes = 16 << 20;  // 16 MiB

struct RecordedCommand {
  std::vector<std::string> argv;
  std::string stdout_path;  // relative to the recording folder
  std::string stderr_path;  // relative; empty when the entry has none
  int exit_code = 0;
  bool timed_out = false;
  bool truncated = false;

  bool operator==(const RecordedCommand&) const = default;
};

StatusOr<std::vector<RecordedCommand>> ParseCommandsJson(ByteView json);

// The inverse of ParseCommandsJson (pretty-printed, "timed_out"/"truncated"
// only when true, "stderr" only when set). INVALID_ARGUMENT if the commands
// would not parse back (e.g. argv not UTF-8, a bad path, duplicate argv).
StatusOr<std::string> SerializeCommandsJson(
    const std::vector<RecordedCommand>& commands);

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_RECORDED_H_

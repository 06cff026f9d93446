// Runs one canonical tool argv for a probe or collector and turns every way
// it can fail into a Status whose message is the reason a finding reports.
//
// Guarantees: OK only if the command ran, exited 0, did not time out and was
// not truncated; the stdout is then returned as text. Otherwise the message
// names the command and the cause: "`mlxprivhost` is not installed (exit
// 127)", "`flint -d ... q full` exited with status 1: <stderr line>",
// "`bfver` timed out", "output of `...` was truncated", "could not run ...".
// Does NOT: parse the output.
#ifndef DPUAUDIT_DEVICE_RUN_TOOL_H_
#define DPUAUDIT_DEVICE_RUN_TOOL_H_

#include <string>
#include <vector>

#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::device {

// argv joined by single spaces.
std::string CommandLine(const std::vector<std::string>& argv);

StatusOr<std::string> RunTool(const DeviceSource& source,
                              const std::vector<std::string>& argv);

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_RUN_TOOL_H_

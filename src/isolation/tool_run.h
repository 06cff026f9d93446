// Runs one canonical tool argv for a probe or collector and turns every way
// it can fail into a Status whose message is the reason a finding reports.
//
// Guarantees: OK only if the command ran, exited 0, did not time out and was
// not truncated; the stdout is then returned as text. Otherwise the message
// names the command and the cause: "`mlxprivhost` is not installed (exit
// 127)", "`flint -d ... q full` exited with status 1: <stderr line>",
// "`bfver` timed out", "output of `...` was truncated", "could not run ...".
// Does NOT: parse the output.
#ifndef DPUAUDIT_ISOLATION_TOOL_RUN_H_
#define DPUAUDIT_ISOLATION_TOOL_RUN_H_

#include <string>
#include <vector>

#include "common/finding.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::isolation::internal {

// argv joined by single spaces.
std::string CommandLine(const std::vector<std::string>& argv);

StatusOr<std::string> RunTool(const device::DeviceSource& source,
                              const std::vector<std::string>& argv);

// The finding helpers every probe shares, so all probes fill id, expected,
// source and evidence_id the same way and fail closed the same way.

// A finding for `id` about `argv` (source = the command line, evidence_id =
// its canonical evidence id), before any verdict.
Finding StartCommandFinding(std::string_view id, std::string_view expected,
                            const std::vector<std::string>& argv);
// The same for a file read at `path`.
Finding StartFileFinding(std::string_view id, std::string_view expected,
                         const std::string& path);
// `f` turned unknown: observed cleared, the reason set.
Finding UnknownFinding(Finding f, std::string reason);
// Unknown because no MST device was found to run `tool` on; the source is
// /dev/mst and the reason carries the discovery error.
Finding NoMstDeviceFinding(std::string_view id, std::string_view expected,
                           std::string_view tool,
                           const Status& discovery_status);

}  // namespace dpuaudit::isolation::internal

#endif  // DPUAUDIT_ISOLATION_TOOL_RUN_H_

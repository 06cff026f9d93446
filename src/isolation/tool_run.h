// The finding helpers every probe shares (RunTool itself is device/run_tool.h).
#ifndef DPUAUDIT_ISOLATION_TOOL_RUN_H_
#define DPUAUDIT_ISOLATION_TOOL_RUN_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "common/status.h"
#include "device/device_source.h"
#include "device/run_tool.h"

namespace dpuaudit::isolation::internal {

using device::CommandLine;
using device::RunTool;

// The finding helpers every probe shares, so all probes fill id, expected,
// source and evidence_id the same way and fail closed the same way.

// A finding for `id` about `argv` (source = the command line, evidence_id =
// its canonical evidence id), before any verdict.
Finding StartCommandFinding(std::string_view id, std::string_view expected,
                            const std::vector<std::string>& argv);
// The same for a file read at `path`.
Finding StartFileFinding(std::string_view id, std::string_view expected,
                         const std::string& path);
// `f` turned unknown: observed cleared, the reason set. `f` is taken by
// rvalue reference, not by value, so that `reason` may be built from `f`
// in the same call (Unknown(std::move(f), "..." + f.source)): a by-value
// parameter may be moved from before the other argument is evaluated
// (the order is unspecified; clang does it left to right).
Finding UnknownFinding(Finding&& f, std::string reason);
// Unknown because no MST device was found to run `tool` on; the source is
// /dev/mst and the reason carries the discovery error.
Finding NoMstDeviceFinding(std::string_view id, std::string_view expected,
                           std::string_view tool,
                           const Status& discovery_status);

// Runs `argv` and parses its output with `parse` (a StatusOr<T> (string_view)
// parser). The error is RunTool's, or the parser's prefixed with
// "could not parse output of `<command line>`", ready to be the reason of
// an unknown finding.
template <typename Parse>
auto RunAndParse(const device::DeviceSource& source,
                 const std::vector<std::string>& argv, Parse parse)
    -> decltype(parse(std::string_view())) {
  StatusOr<std::string> out = RunTool(source, argv);
  if (!out.ok()) return out.status();
  auto parsed = parse(*out);
  if (!parsed.ok()) {
    return parsed.status().WithPrefix("could not parse output of `" +
                                      CommandLine(argv) + "`");
  }
  return parsed;
}

}  // namespace dpuaudit::isolation::internal

#endif  // DPUAUDIT_ISOLATION_TOOL_RUN_H_

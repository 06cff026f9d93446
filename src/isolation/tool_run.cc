#include "isolation/tool_run.h"

#include "device/canonical_commands.h"
#include "device/evidence.h"

#include "isolation/text_lines.h"

namespace dpuaudit::isolation::internal {

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    if (!out.empty()) out += " ";
    out += a;
  }
  return out;
}

StatusOr<std::string> RunTool(const device::DeviceSource& source,
                              const std::vector<std::string>& argv) {
  const std::string cmd = CommandLine(argv);
  StatusOr<device::CommandResult> run =
      source.Run(argv, device::CommandOptions{});
  if (!run.ok()) {
    return UnavailableError("could not run `" + cmd +
                            "`: " + run.status().ToString());
  }
  const device::CommandResult& r = *run;
  if (r.timed_out) return DeadlineExceededError("`" + cmd + "` timed out");
  if (r.exit_code == device::kExitNotInstalled) {
    return NotFoundError("`" + (argv.empty() ? cmd : argv[0]) +
                         "` is not installed (exit 127)");
  }
  if (r.exit_code != 0) {
    std::string message =
        "`" + cmd + "` exited with status " + std::to_string(r.exit_code);
    std::string err = ToString(r.stderr_bytes);
    if (err.empty()) err = ToString(r.stdout_bytes);
    std::string_view first = Trim(err);
    first = first.substr(0, first.find('\n'));
    if (!first.empty()) message += ": " + Excerpt(Trim(first));
    return UnavailableError(message);
  }
  if (r.truncated) {
    return DataLossError("output of `" + cmd + "` was truncated at " +
                         std::to_string(r.stdout_bytes.size()) + " bytes");
  }
  return ToString(r.stdout_bytes);
}

Finding StartCommandFinding(std::string_view id, std::string_view expected,
                            const std::vector<std::string>& argv) {
  Finding f;
  f.id = std::string(id);
  f.expected = std::string(expected);
  f.source = CommandLine(argv);
  f.evidence_id = device::EvidenceIdForCommand(argv);
  return f;
}

Finding StartFileFinding(std::string_view id, std::string_view expected,
                         const std::string& path) {
  Finding f;
  f.id = std::string(id);
  f.expected = std::string(expected);
  f.source = path;
  f.evidence_id = device::EvidenceIdForFile(path);
  return f;
}

Finding UnknownFinding(Finding f, std::string reason) {
  f.verdict = Verdict::kUnknown;
  f.observed.clear();
  f.reason = std::move(reason);
  return f;
}

Finding NoMstDeviceFinding(std::string_view id, std::string_view expected,
                           std::string_view tool,
                           const Status& discovery_status) {
  Finding f;
  f.id = std::string(id);
  f.expected = std::string(expected);
  f.source = std::string(device::kMstDir);
  f.evidence_id = device::EvidenceIdForDir(device::kMstDir);
  std::string why = discovery_status.ok() ? std::string("discovery was not run")
                                          : discovery_status.message();
  return UnknownFinding(std::move(f), "cannot run " + std::string(tool) +
                                          ": no MST device (" + why + ")");
}

}  // namespace dpuaudit::isolation::internal

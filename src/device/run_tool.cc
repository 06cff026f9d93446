#include "device/run_tool.h"

#include "common/text_lines.h"

namespace dpuaudit::device {

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
    std::string_view first = text::Trim(err);
    first = first.substr(0, first.find('\n'));
    if (!first.empty()) message += ": " + text::Excerpt(text::Trim(first));
    return UnavailableError(message);
  }
  if (r.truncated) {
    return DataLossError("output of `" + cmd + "` was truncated at " +
                         std::to_string(r.stdout_bytes.size()) + " bytes");
  }
  return ToString(r.stdout_bytes);
}

}  // namespace dpuaudit::device

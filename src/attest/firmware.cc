#include "attest/firmware.h"

#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "device/evidence.h"

namespace dpuaudit::attest {
namespace {

std::string CommandLine(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Same fail-closed rules and messages as isolation::internal::RunTool.
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
    return NotFoundError("`" + argv[0] + "` is not installed (exit 127)");
  }
  if (r.exit_code != 0) {
    return UnavailableError("`" + cmd + "` exited with status " +
                            std::to_string(r.exit_code));
  }
  if (r.truncated) {
    return DataLossError("output of `" + cmd + "` was truncated at " +
                         std::to_string(r.stdout_bytes.size()) + " bytes");
  }
  return ToString(r.stdout_bytes);
}

// First column-0 "FW Version:" line of flint output (BLUEFIELD.md §4.5).
StatusOr<std::string> FlintFwVersion(std::string_view text) {
  constexpr std::string_view kKey = "FW Version:";
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (line.substr(0, kKey.size()) != kKey) continue;
    std::string_view v = line.substr(kKey.size());
    size_t b = v.find_first_not_of(" \t");
    if (b == std::string_view::npos) break;
    v = v.substr(b);
    size_t e = v.find_first_of(" \t\r");
    v = v.substr(0, e);
    if (v.find_first_not_of("0123456789.") != std::string_view::npos) {
      return InvalidArgumentError(
          "flint 'FW Version' value is not a dotted "
          "number.");
    }
    return std::string(v);
  }
  return InvalidArgumentError("flint output has no 'FW Version' line.");
}

}  // namespace

FirmwareInfo CollectFirmware(const device::DeviceSource& source) {
  return CollectFirmware(source, std::string());
}

FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const std::string& mst_device) {
  FirmwareInfo info;
  const device::Argv bfver_argv = device::BfverArgv();
  info.bfver_source = CommandLine(bfver_argv);
  info.bfver_evidence_id = device::EvidenceIdForCommand(bfver_argv);
  StatusOr<std::string> out = RunTool(source, bfver_argv);
  if (!out.ok()) {
    info.bfver_status = out.status();
  } else {
    StatusOr<BfverInfo> parsed = ParseBfver(*out);
    if (parsed.ok()) {
      info.bfver = std::move(parsed).value();
    } else {
      info.bfver_status = parsed.status();
    }
  }
  if (mst_device.empty()) {
    info.nic_fw_status =
        FailedPreconditionError("no MST device given for `flint q full`.");
    return info;
  }
  const device::Argv flint_argv = device::FlintQueryArgv(mst_device);
  info.nic_fw_source = CommandLine(flint_argv);
  info.nic_fw_evidence_id = device::EvidenceIdForCommand(flint_argv);
  StatusOr<std::string> flint = RunTool(source, flint_argv);
  if (!flint.ok()) {
    info.nic_fw_status = flint.status();
    return info;
  }
  StatusOr<std::string> version = FlintFwVersion(*flint);
  if (version.ok()) {
    info.nic_fw_version = *version;
  } else {
    info.nic_fw_status = version.status();
  }
  return info;
}

}  // namespace dpuaudit::attest

#include "isolation/tool_run.h"

#include "device/canonical_commands.h"
#include "device/evidence.h"

#include "common/text_lines.h"

namespace dpuaudit::isolation::internal {

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

Finding UnknownFinding(Finding&& f, std::string reason) {
  Finding out = std::move(f);
  out.verdict = Verdict::kUnknown;
  out.observed.clear();
  out.reason = std::move(reason);
  return out;
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

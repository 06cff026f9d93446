// dpu.pending_change: a staged mode or isolation change
// (docs/bluefield.md#mlxconfig, #pending-changes). mlxconfig writes NV
// configuration that takes effect at the next power cycle; until then Next Boot
// differs from Current. A host or Arm user who staged "NIC mode" or "host
// PRIVILEGED" leaves the current posture intact today and silently drops it at
// the next reboot.
//
// Reads the same `mlxconfig -d <mst> -e q` as dpu.operation_mode (RunProbes
// memoizes it, so the tool runs once per run).
// Watched rows: INTERNAL_CPU_{MODEL,PAGE_SUPPLIER,ESWITCH_MANAGER,IB_VPORT0,
// OFFLOAD_ENGINE,RSHIM} and every HOST_PRIV_* / HOST_DISABLE_* row present.
// Fail closed: no Current column (plain `q`) or no INTERNAL_CPU_MODEL row
// is unknown, because "no difference" could not be observed.
// Does NOT check: staged changes to other parameters, nor changes made by
// the BMC that the NIC firmware has not yet read.
#include <array>
#include <string>
#include <string_view>
#include <utility>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "bluefield/mlxconfig.h"
#include "isolation/probe_entries.h"
#include "common/text_lines.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

using device::Argv;

constexpr std::string_view kPendingId = "dpu.pending_change";
constexpr std::string_view kNone = "none";
constexpr std::string_view kPending = "pending";

constexpr std::array<std::string_view, 6> kModeParams = {
    "INTERNAL_CPU_MODEL",           "INTERNAL_CPU_PAGE_SUPPLIER",
    "INTERNAL_CPU_ESWITCH_MANAGER", "INTERNAL_CPU_IB_VPORT0",
    "INTERNAL_CPU_OFFLOAD_ENGINE",  "INTERNAL_CPU_RSHIM"};

bool Watched(std::string_view name) {
  for (std::string_view p : kModeParams) {
    if (name == p) return true;
  }
  return text::StartsWith(name, "HOST_PRIV_") ||
         text::StartsWith(name, "HOST_DISABLE_");
}

constexpr auto Unknown = internal::UnknownFinding;

Finding ProbeDpuPendingChange(const device::DeviceSource& source,
                              const ProbeContext& ctx) {
  Finding f;
  f.id = std::string(kPendingId);
  f.expected = std::string(kNone);
  if (!ctx.mst) {
    return internal::NoMstDeviceFinding(kPendingId, kNone, "mlxconfig",
                                        ctx.discovery_status);
  }
  const Argv argv = device::MlxconfigQueryArgv(ctx.mst->path);
  f.source = internal::CommandLine(argv);
  f.evidence_id = device::EvidenceIdForCommand(argv);
  StatusOr<bluefield::MlxconfigQuery> q =
      internal::RunAndParse(source, argv, bluefield::ParseMlxconfigQuery);
  if (!q.ok()) return Unknown(std::move(f), q.status().message());
  if (!q->has_current) {
    return Unknown(std::move(f),
                   "output of `" + f.source +
                       "` has no Current column (was -e dropped?), so Next "
                       "Boot cannot be compared with the value in effect");
  }
  if (q->Find("INTERNAL_CPU_MODEL") == nullptr) {
    return Unknown(std::move(f), "no INTERNAL_CPU_MODEL row in output of `" +
                                     f.source + "`");
  }
  std::string pending;
  int compared = 0;
  for (const bluefield::MlxconfigParam& p : q->params) {
    if (!Watched(p.name) || !p.current_value) continue;
    ++compared;
    if (*p.current_value != p.next_boot_value) {
      pending += (pending.empty() ? "" : ", ") + p.name + ": " +
                 *p.current_value + " -> " + p.next_boot_value;
    }
  }
  if (pending.empty()) {
    f.verdict = Verdict::kPass;
    f.observed = std::string(kNone);
    f.reason = "Next Boot equals Current for all " + std::to_string(compared) +
               " mode and isolation parameters";
  } else {
    f.verdict = Verdict::kFail;
    f.observed = std::string(kPending);
    f.reason = "staged change applies at the next power cycle: " + pending;
  }
  return f;
}

}  // namespace

namespace internal {

std::vector<ProbeInfo> DpuProbeEntries() {
  return {
      {kPendingId,
       "No staged mode/isolation change (mlxconfig Next Boot vs Current).",
       {kNone},
       {kNone, kPending},
       &ProbeDpuPendingChange},
  };
}

}  // namespace internal
}  // namespace dpuaudit::isolation

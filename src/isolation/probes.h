// Host-isolation posture probes (docs/bluefield.md#mlxprivhost,
// #operation-mode) and their catalogue.
//
// A probe is a pure function of a DeviceSource and a ProbeContext (the MST
// device discovered once per run) returning one Finding. Probes only run the
// canonical argv of device/canonical_commands.h.
//
// Guarantees (fail closed): a probe returns kPass only when the tool ran,
// exited 0, was neither timed out nor truncated, parsed strictly, and showed
// the expected value. A missing tool (127), a non-zero exit, a timeout,
// truncated or unparseable output, an absent line, or no MST device give
// kUnknown with a reason naming the cause. Every finding sets id, observed
// (empty when unknown), expected, source (the command line), evidence_id
// (device::EvidenceIdForCommand of the argv) and reason.
// Does NOT check: that the Arm OS reporting these values is honest (they are
// Arm-side claims; see docs/bluefield.md#trust), nor that an NV setting is
// already in effect (disable_rshim needs a power cycle,
// docs/bluefield.md#restrict-flags).
#ifndef DPUAUDIT_ISOLATION_PROBES_H_
#define DPUAUDIT_ISOLATION_PROBES_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/finding.h"
#include "common/status.h"
#include "device/device_source.h"
#include "firmware/inventory.h"
#include "isolation/mst_discovery.h"

namespace dpuaudit::isolation {

struct ProbeContext {
  std::optional<MstDeviceInfo> mst;  // set iff discovery succeeded
  Status discovery_status;           // the discovery error when !mst
  // Read once per run by Collect and shared by every probe and the device
  // identity: the flint query of the MST device (null without one) and the
  // firmware inventory (firmware::CollectFirmware, over that flint read).
  // Null in a context built by Discover or by hand: a probe that needs them
  // then reads its own.
  std::shared_ptr<const firmware::FlintRead> flint;
  std::shared_ptr<const firmware::FirmwareInfo> firmware;

  // Runs DiscoverMstDevice once.
  static ProbeContext Discover(const device::DeviceSource& source);
  // Discover, then `flint -d <mst> q full` once (with an MST device) and the
  // firmware inventory once.
  static ProbeContext Collect(const device::DeviceSource& source);
};

using ProbeFunction = Finding (*)(const device::DeviceSource&,
                                  const ProbeContext&);

struct ProbeInfo {
  std::string_view id;           // stable dotted id, "host.privilege_level"
  std::string_view description;  // one line, for reports and the CLI
  std::vector<std::string_view> expected;  // observed values that pass
  // Every value the probe can observe (a superset of `expected`). Policies
  // may only expect one of these; anything else is rejected at load. Both
  // lists are empty for version-valued probes (fw.*_version): any readable
  // version passes the probe, and the policy's allow-list / min_version
  // decides.
  std::vector<std::string_view> values;
  ProbeFunction function;
};

// mlxprivhost -d <mst> q (docs/bluefield.md#mlxprivhost).
Finding ProbeHostPrivilegeLevel(const device::DeviceSource& source,
                                const ProbeContext& ctx);
// host.rshim_disabled, host.tracer_disabled, host.counter_read_disabled and
// host.port_owner_disabled are one table of mlxprivhost flags (probes.cc,
// kHostFlags); reach them through FindProbe(id)->function.
// mlxconfig -d <mst> -e q, Current column (docs/bluefield.md#operation-mode).
Finding ProbeDpuOperationMode(const device::DeviceSource& source,
                              const ProbeContext& ctx);

// Every probe, in report order. Ids are unique and dotted (tested).
const std::vector<ProbeInfo>& ProbeCatalogue();
// nullptr when no probe has this id.
const ProbeInfo* FindProbe(std::string_view id);
// For version-valued probes (empty `values`): the attest::version component
// ("atf", "uefi", "bsp", "nic-fw") a min_version rule orders them by; ""
// for every other probe.
std::string_view VersionComponent(std::string_view id);

// Collects the context once (ProbeContext::Collect) and runs every catalogue
// probe, in order. Identical requests are answered once
// (device::MemoizingDeviceSource) and their result shared by the probes.
// Every finding is MakeSafe (common/finding.h): whatever bytes a tool
// printed, its text fields are SafeText.
std::vector<Finding> RunProbes(const device::DeviceSource& source);
// The same with a context the caller collected over `source`.
std::vector<Finding> RunProbes(const device::DeviceSource& source,
                               const ProbeContext& ctx);

}  // namespace dpuaudit::isolation

#endif  // DPUAUDIT_ISOLATION_PROBES_H_

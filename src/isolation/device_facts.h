// The facts one collection derives from a device: the ONE sequence the agent
// runs over its device and the verifier runs again over a report's
// evidence, so the two cannot drift apart.
//
// Sequence: discover the MST device, run `flint -d <mst> q full` once and
// parse it once, collect the firmware inventory once over that flint read
// (ProbeContext::Collect); run the probe catalogue and collect the device
// identity with that context; re-derive the primary boot partition from
// `mlxbf-bootctl`; add the boot-chain findings (firmware::BootChainFindings)
// over a boot chain that is either measured here by streaming (the agent)
// or the measurement a report carries (the verifier: partitions and files
// are too large to be evidence).
//
// Guarantees: never fails as a whole (what cannot be read is an unknown
// finding or an empty field with its reason); flint and the inventory are
// requested from `source` once each per call; every finding is MakeSafe;
// `device` is `identity` with its six fields SafeText, as both sides
// compare it. Identical other requests are answered once inside
// RunProbes; callers that want every request answered once (and the same
// bytes for every reader) pass a device::MemoizingDeviceSource.
// Does not: judge anything beyond the probes (policy, reference values and
// identity checks are the verifier's), nor capture evidence (wrap `source`
// in a device::CapturingDeviceSource for that).
#ifndef DPUAUDIT_ISOLATION_DEVICE_FACTS_H_
#define DPUAUDIT_ISOLATION_DEVICE_FACTS_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/finding.h"
#include "device/device_source.h"
#include "firmware/boot_chain.h"
#include "firmware/inventory.h"
#include "isolation/identity.h"
#include "isolation/probes.h"

namespace dpuaudit::isolation {

struct DeviceFacts {
  ProbeContext context;  // the MST device, its flint read, the inventory
  // The probe catalogue in order, then the boot-chain findings
  // (firmware::BootChainFindingIds order).
  std::vector<Finding> findings;
  DeviceIdentity identity;  // as read (notes included)
  DeviceIdentity device;    // the six fields SafeText, no notes
  firmware::FirmwareInfo firmware;  // == *context.firmware
  // The boot chain the findings were derived from: measured, or the
  // report's; unset when a report carries none.
  std::optional<firmware::BootChainInfo> boot_chain;
  // The primary boot partition as `mlxbf-bootctl` over `source` shows it;
  // "" when the tool or its output fails.
  std::string primary;

  // The report's "firmware" and "boot_chain" members, made on demand (only
  // the agent sends them; the verifier's re-derivation does not need them):
  // FirmwareJson(firmware), and BootChainJson(*boot_chain) or {} when unset.
  nlohmann::json firmware_json() const;
  nlohmann::json boot_chain_json() const;
};

// The agent: the boot chain is measured over source.OpenStream.
DeviceFacts CollectDeviceFacts(const device::DeviceSource& source);
// The verifier: `reported` is the boot chain a report carries (nullptr when
// it carries none: boot.stream_integrity is then unknown, "the report
// carries no boot_chain measurement").
DeviceFacts CollectDeviceFacts(const device::DeviceSource& source,
                               const firmware::BootChainInfo* reported);

}  // namespace dpuaudit::isolation

#endif  // DPUAUDIT_ISOLATION_DEVICE_FACTS_H_

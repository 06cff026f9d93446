// Firmware inventory of the BlueField as seen from its Arm: boot-chain
// versions from `bfver` (BLUEFIELD.md §4.4) and the NIC firmware version
// from `flint -d <mst> q full` (BLUEFIELD.md §4.5).
//
// Guarantees: never fails as a whole; `bfver_status` is OK only if bfver ran,
// exited 0, was neither timed out nor truncated and parsed (ParseBfver);
// otherwise it carries the reason ("`bfver` is not installed (exit 127)").
// Likewise `nic_fw_status` for the flint `FW Version:` line (first match).
// Does NOT check: versions against allow-lists (the verifier's job), nor
// that these Arm-side claims are genuine (BLUEFIELD.md §0).
//
// Layering note: src/attest does not link src/isolation, so the MST device
// is passed in (isolation::ProbeContext holds it) and only the `FW Version`
// line of flint is read here; isolation::ParseFlintQuery is the full parser.
#ifndef DPUAUDIT_ATTEST_FIRMWARE_H_
#define DPUAUDIT_ATTEST_FIRMWARE_H_

#include <string>

#include "attest/bfver.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::attest {

struct FirmwareInfo {
  Status bfver_status;       // why `bfver` is empty, if it is
  BfverInfo bfver;           // valid iff bfver_status.ok()
  std::string bfver_source;  // "bfver"
  std::string bfver_evidence_id;

  Status nic_fw_status;        // why nic_fw_version is empty, if it is
  std::string nic_fw_version;  // flint "FW Version", e.g. "32.41.1000"
  std::string nic_fw_source;   // "flint -d <mst> q full" or ""
  std::string nic_fw_evidence_id;
};

// bfver only; nic_fw_status is FAILED_PRECONDITION (no MST device given).
FirmwareInfo CollectFirmware(const device::DeviceSource& source);
// bfver, and flint on `mst_device` (e.g. "/dev/mst/mt41692_pciconf0");
// an empty mst_device behaves like the overload above.
FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const std::string& mst_device);

}  // namespace dpuaudit::attest

#endif  // DPUAUDIT_ATTEST_FIRMWARE_H_

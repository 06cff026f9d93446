// Firmware inventory of the BlueField as seen from its Arm
// (docs/bluefield.md#flint to #mlnx-release): boot-chain versions from
// `bfver`, the NIC firmware from three sources that must agree
// (`flint -d <mst> q full`, `mlxfwmanager --query` (XML, else text) and
// /sys/class/infiniband/mlx5_*/fw_ver), the staged NIC firmware
// (mlxfwmanager "Available"), and /etc/mlnx-release.
//
// Guarantees: never fails as a whole; every source has its own Status (OK
// only if the tool ran, exited 0, was neither timed out nor truncated and
// parsed strictly), its source line and evidence id. The same function runs
// on the agent (live/recorded source) and in the verifier (over the report's
// evidence), so both derive the same inventory from the same bytes.
// mlxfwmanager's device is chosen by the MST path, then by PSID (flint's),
// then "the only device"; several candidates or none is an error.
// Does NOT check: versions against allow-lists or reference values (the
// verifier's job), nor that these Arm-side claims are genuine
// (docs/bluefield.md#trust).
#ifndef DPUAUDIT_FIRMWARE_INVENTORY_H_
#define DPUAUDIT_FIRMWARE_INVENTORY_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "bluefield/bfver.h"
#include "bluefield/flint.h"
#include "bluefield/mlxfwmanager.h"
#include "common/status.h"
#include "device/device_source.h"

namespace dpuaudit::firmware {

struct FirmwareInfo {
  Status bfver_status;       // why `bfver` is empty, if it is
  bluefield::BfverInfo bfver;           // valid iff bfver_status.ok()
  std::string bfver_source;  // "bfver"
  std::string bfver_evidence_id;

  // flint -d <mst> q full
  Status nic_fw_status;        // why nic_fw_version is empty, if it is
  std::string nic_fw_version;  // flint "FW Version", e.g. "32.41.1000"
  std::string psid;            // flint "PSID"
  std::string nic_fw_source;   // "flint -d <mst> q full" or ""
  std::string nic_fw_evidence_id;

  // mlxfwmanager --query [--query-format XML]
  Status mlxfw_status;
  std::optional<bluefield::MlxfwDevice> mlxfw;  // our device, iff mlxfw_status.ok()
  std::string mlxfw_source;
  std::string mlxfw_evidence_id;

  // /sys/class/infiniband/<dev>/fw_ver, every mlx5_* device, sorted by name.
  Status sysfs_status;
  std::vector<std::pair<std::string, std::string>> sysfs_fw_ver;
  std::string sysfs_source = "/sys/class/infiniband/*/fw_ver";

  // /etc/mlnx-release
  Status mlnx_release_status;
  std::string mlnx_release;
  std::string mlnx_release_evidence_id;

  // The mlxfwmanager FW "Current" and "Available" values ("" when unknown;
  // available "N/A" when nothing is staged).
  std::string MlxfwCurrent() const;
  std::string MlxfwAvailable() const;
};

// One `flint -d <mst> q full`, run once and parsed once, for everyone who
// reads it in a collection (the inventory, the device identity and
// nic.fw_security), so they all judge the same bytes.
struct FlintRead {
  std::string mst;                // "/dev/mst/mt41692_pciconf0"
  std::vector<std::string> argv;  // device::FlintQueryArgv(mst)
  Status run_status;    // device::RunTool's error; OK when the tool gave output
  Status parse_status;  // bluefield::ParseFlintQuery's error (run_status OK)
  bluefield::FlintQuery query;  // valid iff ok()
  bool ok() const { return run_status.ok() && parse_status.ok(); }
  // run_status when not OK, else parse_status.
  const Status& status() const {
    return run_status.ok() ? parse_status : run_status;
  }
};
FlintRead ReadFlint(const device::DeviceSource& source, const std::string& mst);

// bfver, mlnx-release and sysfs only; the NIC sources that need the MST
// device are FAILED_PRECONDITION.
FirmwareInfo CollectFirmware(const device::DeviceSource& source);
// Everything; `mst_device` e.g. "/dev/mst/mt41692_pciconf0" (empty behaves
// like the overload above).
FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const std::string& mst_device);
// Everything, on the MST device `flint` was read from, with that flint read
// (not run again).
FirmwareInfo CollectFirmware(const device::DeviceSource& source,
                             const FlintRead& flint);

// Cross-check of the NIC firmware version across flint, sysfs and
// mlxfwmanager. "consistent" needs at least two readable sources that all
// agree; "inconsistent" names each source and value; with fewer than two
// readable sources the result is nullopt and `why` says which failed.
struct NicFwConsistency {
  std::optional<bool> consistent;
  std::string detail;  // "flint 32.43.1008, sysfs mlx5_0 32.43.1008, ..."
};
NicFwConsistency CheckNicFwConsistency(const FirmwareInfo& fw);

// The report's "firmware" section (display; the verifier re-derives):
// {"arm": {"atf", "atf_build", "uefi", "bsp", "os_release", "boot_device"}
//         | {"error"},
//  "nic": {"version", "psid", "running", "staged", "sysfs": {"mlx5_0": ..}}
//         | {"error"},
//  "mlnx_release": "..." | null}
nlohmann::json FirmwareJson(const FirmwareInfo& fw);

}  // namespace dpuaudit::firmware

#endif  // DPUAUDIT_FIRMWARE_INVENTORY_H_

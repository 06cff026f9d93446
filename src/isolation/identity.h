// Device identity for the report's "device" member
// (docs/architecture.md#report-format): model, serial, part number, PSID,
// base MAC and NIC firmware version.
//
// Sources: model from the discovered MST device (mt41692 = BlueField-3,
// mt41686 = BlueField-2; docs/bluefield.md#mst-devices); PSID, Base MAC
// (first token), Part Number and FW Version from `flint -d <mst> q full`
// (docs/bluefield.md#flint, first match of each key); serial from the
// mlxbf-bootctl sysfs attribute `sn` (docs/bluefield.md#mlxbf-bootctl,
// trimmed). When the serial or part number is still empty, the PCI address
// of the MST device is looked up in `mst status -v` (exact MST path match)
// and `lspci -vvv -s <pci>` VPD [SN] / [PN] fill only the empty ones
// (device/canonical_commands.h LspciVpdArgv).
//
// Guarantees: a field that cannot be read stays empty and `notes` says why;
// a field filled by the lspci fallback gets a note naming the command, and
// the earlier notes (why flint/sysfs had no value) are kept; a missing VPD
// never yields a placeholder such as "UNDEFINED"; collection never fails as
// a whole.
// Does NOT check: that the values are genuine (they are Arm-side claims),
// nor their format (PSID, MAC and versions are copied as printed).
#ifndef DPUAUDIT_ISOLATION_IDENTITY_H_
#define DPUAUDIT_ISOLATION_IDENTITY_H_

#include <string>
#include <vector>

#include "device/device_source.h"
#include "isolation/probes.h"

namespace dpuaudit::isolation {

// Path of the board serial number attribute (mlxbf-bootctl, §4.3).
inline constexpr char kBootctlSerialPath[] =
    "/sys/bus/platform/devices/MLNXBF04:00/sn";

struct DeviceIdentity {
  std::string model;               // "BlueField-3" / "BlueField-2"
  std::string serial;              // "MT2334X00001"
  std::string part_number;         // flint "Part Number"
  std::string psid;                // flint "PSID"
  std::string base_mac;            // flint "Base MAC", first token
  std::string fw_version;          // flint "FW Version"
  std::vector<std::string> notes;  // why a field is empty / its fallback
};

// The flint fields come from ctx.flint when the context carries it
// (ProbeContext::Collect), so flint is not run again.
DeviceIdentity CollectIdentity(const device::DeviceSource& source,
                               const ProbeContext& ctx);

}  // namespace dpuaudit::isolation

#endif  // DPUAUDIT_ISOLATION_IDENTITY_H_

// Parsers for `mlxfwmanager --query` (text) and
// `mlxfwmanager --query --query-format XML` (docs/bluefield.md#mlxfwmanager).
//
// Text layout (one block per device):
//   Device #1:
//   ----------
//     Device Type:      BlueField2
//     Part Number:      MBF2H536C-CESO_Ax
//     Description:      BlueField-2 P-Series DPU 100GbE ...
//     PSID:             MT_0000000767
//     PCI Device Name:  /dev/mst/mt41686_pciconf0
//     Base GUID:        08c0eb0300e14b94
//     Base MAC:         08c0ebe14b94
//     Versions:         Current        Available
//        FW             24.99.0932     N/A
//        UEFI Virtio blk   22.4.0010      N/A
//     Status:           No matching image found
// ROM names contain spaces, so a version row is split as: the last two
// whitespace tokens are current and available, the rest is the name.
// XML layout: <Devices><Device pciName type psid partNumber><Versions>
// <FW current available/>...</Versions><MACs Base_Mac/><Status/>
// <Description/></Device>...</Devices>; element names use '_' for spaces
// (UEFI_Virtio_blk), which the parser turns back into spaces so both forms
// give the same names.
//
// Guarantees: at least one device, each with a PSID and an "FW" row, or
// INVALID_ARGUMENT naming the line (text) or element (XML); a version row
// with fewer than three tokens, a duplicate field or row name within a
// device, or an unexpected line inside a device block is INVALID_ARGUMENT.
// Values are trimmed; "N/A" is kept verbatim. The XML parser (pugixml) never
// loads external entities or DTDs; input over 1 MiB is refused
// (RESOURCE_EXHAUSTED).
// Details of "strict" (both forms): current and available must each be
// "N/A" or a version token (a digit, then [0-9A-Za-z._-]), so a row that
// lost a column is an error rather than a shifted split: the bf2_facts
// fixture row "UEFI Virtio x  1.2.3.4" would otherwise
// read as name "UEFI Virtio", current "x", and is rejected naming its line.
// Text: before "Device #1:" only "Querying Mellanox devices firmware ..."
// and blank lines are allowed; devices are numbered 1, 2, ... in order; a
// well-formed "Key: value" line with a name we do not keep is skipped (still
// subject to the duplicate check); the "Versions:" header must read
// "Current Available"; a blank line ends the version rows. XML: the single
// top-level element is <Devices>, holding only <Device> elements; repeated
// attributes or a repeated Versions/MACs/Status/Description element are
// errors; other elements and attributes are ignored. Base GUID is not in the
// XML form and stays empty.
// Does not: compare versions or decide which device is ours (callers match
// by PSID or PCI/MST name).
#ifndef DPUAUDIT_BLUEFIELD_MLXFWMANAGER_H_
#define DPUAUDIT_BLUEFIELD_MLXFWMANAGER_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

struct FwVersionRow {
  std::string name;       // "FW", "PXE", "UEFI", "UEFI Virtio blk"
  std::string current;    // "32.42.1000"
  std::string available;  // "N/A" or a staged/available version
  bool operator==(const FwVersionRow&) const = default;
};

struct MlxfwDevice {
  std::string device_type;      // "BlueField3"
  std::string part_number;
  std::string description;
  std::string psid;
  std::string pci_device_name;  // "/dev/mst/mt41686_pciconf0" or "0000:cc:00.0"
  std::string base_guid;
  std::string base_mac;
  std::vector<FwVersionRow> versions;
  std::string status;  // "No matching image found", "Up to date", ...
  // Row with exactly this name; nullptr when absent.
  const FwVersionRow* Find(std::string_view name) const;
  bool operator==(const MlxfwDevice&) const = default;
};

StatusOr<std::vector<MlxfwDevice>> ParseMlxfwmanagerText(std::string_view text);
StatusOr<std::vector<MlxfwDevice>> ParseMlxfwmanagerXml(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_MLXFWMANAGER_H_

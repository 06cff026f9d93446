// Parser for the PCI Vital Product Data block of `lspci -vvv -s <pci>`
// (board identity: product name, part number, serial number).
//
// Accepted layout (one device; indentation varies and is not relied on
// beyond "deeper than the capability line"):
//
//   e2:00.0 Ethernet controller: Mellanox Technologies MT42822 ...
//           ...
//           Capabilities: [48] Vital Product Data
//                   Product Name: BlueField-2 DPU 100GbE/EDR/HDR100 ...
//                   Read-only fields:
//                           [PN] Part number: MBF2M516A-EEEOT
//                           [SN] Serial number: MT2050X00614
//                           [RV] Reserved: checksum good, 1 byte(s) ...
//                   End
//
// Guarantees: only lines inside the `Vital Product Data` capability (from
// its line to `End` or the next line indented no deeper) are read; every
// `[XX] label: value` line there must have a two-character keyword, or the
// result is INVALID_ARGUMENT naming the line; a repeated keyword, a second
// VPD block, a NUL byte or blank output is an error. A device without VPD
// (no capability, an empty block, `<access denied>` when not root) parses
// OK with empty fields and `note` saying which case it was; fields are never
// filled with placeholders such as "UNDEFINED".
// Does NOT check: the VPD checksum (lspci reports it in [RV]; it is kept as
// a field, not enforced), that the values are genuine (VPD is written by the
// board vendor and readable by anyone who can rewrite the flash), nor any
// other capability.
#ifndef DPUAUDIT_BLUEFIELD_LSPCI_H_
#define DPUAUDIT_BLUEFIELD_LSPCI_H_

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

struct LspciVpdField {
  std::string keyword;  // "PN", "SN", "V0", ...
  std::string label;    // "Part number"
  std::string value;    // trimmed, may be empty
  int line = 0;         // 1-based
};

struct LspciVpd {
  bool has_vpd_capability = false;  // a `Vital Product Data` line was seen
  std::string product_name;         // `Product Name:` (VPD identifier string)
  std::string part_number;          // [PN]
  std::string serial_number;        // [SN]
  std::string engineering_changes;  // [EC]
  std::vector<LspciVpdField> fields;  // every [XX] line, in order
  std::string note;  // why the fields are empty; "" when any was found

  // Value of the first field with this keyword; "" when absent.
  std::string Value(std::string_view keyword) const;
};

StatusOr<LspciVpd> ParseLspciVpd(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_LSPCI_H_

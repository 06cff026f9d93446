// Parser for `mst status -v` (docs/bluefield.md#mst-devices), and the
// BlueField generation of an MST device.
//
// Accepted layout:
//   MST modules:
//   ------------
//       MST PCI module is not loaded
//       MST PCI configuration module loaded
//   PCI devices:
//   ------------
//   DEVICE_TYPE        MST                          PCI      RDMA   NET   NUMA
//   BlueField3(rev:1)  /dev/mst/mt41692_pciconf0.1  03:00.1  mlx5_1 net-… -1
//
// Guarantees: a `DEVICE_TYPE` table header is required; each device row has
// a type, a `/dev/mst/` path and a PCI address; RDMA, NET and NUMA may be
// absent (no driver) and are recognised by shape, not by column position.
// Does NOT check: that the MST path exists, nor the cable / non-PCI sections.
#ifndef DPUAUDIT_BLUEFIELD_MST_STATUS_H_
#define DPUAUDIT_BLUEFIELD_MST_STATUS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

enum class Generation { kUnknown, kBlueField1, kBlueField2, kBlueField3 };
// "BF1" | "BF2" | "BF3" | "unknown".
std::string_view GenerationName(Generation generation);
// "BlueField" | "BlueField-2" | "BlueField-3" | "" (unknown).
std::string_view GenerationModel(Generation generation);

// From an MST device name or path: mt41682_* -> BF1, mt41686_* -> BF2,
// mt41692_* -> BF3 (docs/bluefield.md#mst-devices). Anything else: kUnknown.
Generation GenerationFromMstName(std::string_view name_or_path);

struct MstDevice {
  std::string device_type;       // "BlueField3"
  std::optional<int> revision;   // from "(rev:1)"
  std::string mst_path;          // "/dev/mst/mt41692_pciconf0"
  std::string pci;               // "03:00.0"
  std::string rdma;              // "mlx5_0" or ""
  std::vector<std::string> net;  // without the "net-" prefix
  std::optional<int> numa;
  Generation generation = Generation::kUnknown;  // from the MST path
  int line = 0;
};

struct MstStatus {
  std::vector<MstDevice> devices;  // in output order (may be empty)
};

StatusOr<MstStatus> ParseMstStatus(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_MST_STATUS_H_

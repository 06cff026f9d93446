// Parser for `mlxconfig -d <mst> [-e] q` (docs/bluefield.md#mlxconfig), and
// the BlueField operation-mode classification of its INTERNAL_CPU_* rows
// (docs/bluefield.md#operation-mode).
//
// Accepted layout (column widths vary between versions, so rows are split
// on runs of whitespace and never on fixed columns):
//
//   Device #1:
//   ----------
//
//   Device type:    BlueField3
//   Name:           900-9D3B6-00CV-AA0_Ax
//   Description:    ...
//   Device:         /dev/mst/mt41692_pciconf0
//
//   Configurations:                          Default    Current    Next Boot
//   [*][RO]  NAME                            VALUE      VALUE      VALUE
//   ...
//   The '*' shows parameters with next value different from default/...
//
// `-e` prints Default, Current and Next Boot; without `-e` only Next Boot.
// `*` marks a row whose Next Boot differs from Default/Current; `RO` a
// read-only row. Values are tokens such as `EMBEDDED_CPU(1)`, `0`,
// `Array[0..7]`.
//
// Guarantees: the header has Device type/Name/Description/Device; every row
// has exactly one value per column (a short row is INVALID_ARGUMENT naming
// the line); parameter names are matched exactly (`_INTERNAL_CPU_MODEL` is
// a different row from `INTERNAL_CPU_MODEL`); a repeated name is an error;
// only one device per output.
// Does NOT check: that a value is legal for its parameter, nor values that
// contain spaces (mlxconfig prints none for the BlueField parameters).
#ifndef DPUAUDIT_BLUEFIELD_MLXCONFIG_H_
#define DPUAUDIT_BLUEFIELD_MLXCONFIG_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "bluefield/mst_status.h"

namespace dpuaudit::bluefield {

struct MlxconfigParam {
  std::string name;
  bool modified = false;                     // `*` prefix
  bool read_only = false;                    // `RO` prefix
  std::optional<std::string> default_value;  // `-e` only
  std::optional<std::string> current_value;  // `-e` only
  std::string next_boot_value;
  int line = 0;  // 1-based line in the output
};

struct MlxconfigQuery {
  std::string device_type;  // "BlueField2", "BlueField3"
  std::string name;         // part name, e.g. "MBF2M516A-EEEO_Ax"
  std::string description;
  std::string device;        // as given to -d: MST path or PCI address
  bool has_current = false;  // Default/Current columns present (`-e`)
  std::vector<MlxconfigParam> params;  // in output order

  // Exact-name lookup; nullptr when absent.
  const MlxconfigParam* Find(std::string_view param_name) const;
};

StatusOr<MlxconfigQuery> ParseMlxconfigQuery(std::string_view text);

// "BlueField3" -> kBlueField3, "BlueField2" -> kBlueField2, ... else kUnknown.
Generation GenerationFromDeviceType(std::string_view device_type);

enum class OperationMode { kDpu, kNic, kSeparatedHost, kUnknown };
// "dpu" | "nic" | "separated_host" | "unknown".
std::string_view OperationModeName(OperationMode mode);

struct ModeClassification {
  OperationMode mode = OperationMode::kUnknown;
  std::string detail;  // the values used, or why the mode is unknown
};

// Classifies the **Current** column (docs/bluefield.md#operation-mode):
//  - INTERNAL_CPU_MODEL SEPARATED_HOST(0) -> separated host;
//  - EMBEDDED_CPU(1) and, BF2 (and unknown generation): PAGE_SUPPLIER,
//    ESWITCH_MANAGER, IB_VPORT0 all ECPF(0) and OFFLOAD_ENGINE ENABLED(0)
//    -> dpu; all EXT_HOST_PF(1) and DISABLED(1) -> nic; anything else
//    unknown;
//  - EMBEDDED_CPU(1) on BF3: OFFLOAD_ENGINE DISABLED(1) -> nic; ENABLED(0)
//    with none of the three owner rows at EXT_HOST_PF(1) -> dpu.
// Output without a Current column (plain `q`) is always unknown: Next Boot
// may hold a staged value that is not in effect.
ModeClassification ClassifyOperationMode(const MlxconfigQuery& query,
                                         Generation generation);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_MLXCONFIG_H_

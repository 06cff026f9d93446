// The one canonical argv per tool (docs/architecture.md#recorded-device), so
// that recordings made by `dpuaudit-agent record` and hand-written fixtures
// always match.
// `mst` is the device found under /dev/mst/ (e.g. /dev/mst/mt41692_pciconf0).
// A new tool call adds its function here and its row in
// docs/architecture.md#recorded-device.
#ifndef DPUAUDIT_DEVICE_CANONICAL_COMMANDS_H_
#define DPUAUDIT_DEVICE_CANONICAL_COMMANDS_H_

#include <string>
#include <vector>

namespace dpuaudit::device {

using Argv = std::vector<std::string>;

inline Argv MstStatusArgv() { return {"mst", "status", "-v"}; }
inline Argv MlxprivhostQueryArgv(const std::string& mst) {
  return {"mlxprivhost", "-d", mst, "q"};
}
inline Argv MlxconfigQueryArgv(const std::string& mst) {
  return {"mlxconfig", "-d", mst, "-e", "q"};
}
inline Argv FlintQueryArgv(const std::string& mst) {
  return {"flint", "-d", mst, "q", "full"};
}
inline Argv MlxfwmanagerQueryArgv() { return {"mlxfwmanager", "--query"}; }
// The XML form is what the agent runs first (safer to parse); the text form
// above is the fallback when the XML one fails.
inline Argv MlxfwmanagerQueryXmlArgv() {
  return {"mlxfwmanager", "--query", "--query-format", "XML"};
}
// Boot partitions (primary/backup) and lifecycle
// (docs/bluefield.md#mlxbf-bootctl).
inline Argv MlxbfBootctlArgv() { return {"mlxbf-bootctl"}; }
inline Argv BfverArgv() { return {"bfver"}; }
inline Argv MokutilSbStateArgv() { return {"mokutil", "--sb-state"}; }
inline Argv BfsbdumpArgv() { return {"bfsbdump"}; }
// Identity fallback (VPD [PN]/[SN]); `pci` as printed by `mst status -v`.
// A new tool call also belongs in docs/architecture.md#recorded-device.
inline Argv LspciVpdArgv(const std::string& pci) {
  return {"lspci", "-vvv", "-s", pci};
}

// Well-known paths.
inline constexpr char kMstDir[] = "/dev/mst";
inline constexpr char kBootctlDir[] = "/sys/bus/platform/devices/MLNXBF04:00";
inline constexpr char kMlnxReleasePath[] = "/etc/mlnx-release";
inline constexpr char kInfinibandClassDir[] = "/sys/class/infiniband";
inline constexpr char kProcCmdlinePath[] = "/proc/cmdline";
inline constexpr char kBootPartition0[] = "/dev/mmcblk0boot0";
inline constexpr char kBootPartition1[] = "/dev/mmcblk0boot1";
inline constexpr char kEfivarsDir[] = "/sys/firmware/efi/efivars";

}  // namespace dpuaudit::device

#endif  // DPUAUDIT_DEVICE_CANONICAL_COMMANDS_H_

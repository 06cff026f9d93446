// Parser for `bfver` (bfscripts; docs/bluefield.md#bfver): the boot-chain
// versions installed on the BlueField's primary boot partition.
//
// Accepted layout:
//   --/dev/mmcblk0boot1
//   BlueField ATF version: v2.2(release):4.9.1-21-gfc25b08d9
//   BlueField UEFI version: 4.9.1-36-g0c3239837a
//   BlueField BSP version: 4.9.1.13442
//
//   OS Release Version: bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod
// The OS line may instead be `Yocto Release Version: ...` or
// `No distribution version file present`.
//
// Guarantees: the ATF version line is required; `(debug)` / `(release)` in
// it sets `atf_build`; a repeated field, a second `--<device>` partition
// section (`bfver -p 0,1`) or a line that is not `Key: value` is
// INVALID_ARGUMENT naming the line. Unknown `Key: value` lines are kept in
// `other` (e.g. BF4 SBIOS lines).
// Does NOT check: the versions against any allow-list, nor that the boot
// device is the one the Arm actually booted from.
#ifndef DPUAUDIT_BLUEFIELD_BFVER_H_
#define DPUAUDIT_BLUEFIELD_BFVER_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dpuaudit::bluefield {

enum class AtfBuild { kRelease, kDebug, kUnknown };
std::string_view AtfBuildName(AtfBuild build);  // "release"|"debug"|"unknown"

struct BfverInfo {
  std::string boot_device;  // "/dev/mmcblk0boot1" ("" if not printed)
  std::string atf_version;  // "v2.2(release):4.9.1-21-gfc25b08d9"
  AtfBuild atf_build = AtfBuild::kUnknown;
  std::string uefi_version;  // "4.9.1-36-g0c3239837a"
  std::string bsp_version;   // "4.9.1.13442"
  // "OS Release Version", "Yocto Release Version", or "" when bfver said
  // "No distribution version file present".
  std::string os_release_label;
  std::string os_release;
  std::vector<std::pair<std::string, std::string>> other;
};

StatusOr<BfverInfo> ParseBfver(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_BFVER_H_

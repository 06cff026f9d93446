// Small firmware-version sources (docs/bluefield.md#sysfs-fw-ver,
// #mlnx-release).
//
// ParseSysfsFwVer: `/sys/class/infiniband/mlx5_N/fw_ver`, printed by the
// kernel as "%d.%d.%04d\n" (e.g. "32.43.2402\n"). Exactly three dot-separated
// decimal fields, the last at least 4 digits, one optional trailing newline,
// nothing else; otherwise INVALID_ARGUMENT quoting the text.
// ParseMlnxRelease: `/etc/mlnx-release`, one non-empty line of printable
// ASCII without spaces (e.g. "bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod"
// or "DOCA_1.3.0_BSP_3.9.0_Ubuntu_20.04-6.signed"), an optional trailing
// newline; otherwise INVALID_ARGUMENT.
// Does not: compare versions (version.h).
#ifndef DPUAUDIT_BLUEFIELD_FW_SOURCES_H_
#define DPUAUDIT_BLUEFIELD_FW_SOURCES_H_

#include <string>
#include <string_view>

#include "common/status.h"

namespace dpuaudit::bluefield {

StatusOr<std::string> ParseSysfsFwVer(std::string_view text);
StatusOr<std::string> ParseMlnxRelease(std::string_view text);

}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_FW_SOURCES_H_

// The boot-state posture probes (listed by internal::BootProbeEntries,
// boot_probes.cc) over the parsers of bluefield/boot_tools.h and
// uefi/efivar.h.
#ifndef DPUAUDIT_ISOLATION_BOOT_PROBES_H_
#define DPUAUDIT_ISOLATION_BOOT_PROBES_H_

#include "bluefield/boot_tools.h"
#include "common/finding.h"
#include "device/device_source.h"
#include "isolation/probes.h"
#include "uefi/efivar.h"

namespace dpuaudit::isolation {

// Fail closed, as probes.h: a file that is missing, unreadable, of the wrong
// size or unparseable, or a tool that is missing/fails, gives kUnknown with
// a reason naming the path or command and the cause; never kPass. Every
// finding sets id, observed (empty when unknown), expected, source (the path
// or command line the verdict rests on), evidence_id and reason. The
// ProbeContext is not used (no MST device is needed).

inline constexpr char kLifecycleStatePath[] =
    "/sys/bus/platform/devices/MLNXBF04:00/lifecycle_state";
// Older kernels (before the 2023 ABI fix) put the attributes under driver/.
inline constexpr char kLifecycleStateLegacyPath[] =
    "/sys/bus/platform/devices/MLNXBF04:00/driver/lifecycle_state";
inline constexpr char kEfiSecureBootPath[] =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-"
    "00e098032b8c";
inline constexpr char kEfiSetupModePath[] =
    "/sys/firmware/efi/efivars/SetupMode-8be4df61-93ca-11d2-aa0d-"
    "00e098032b8c";
inline constexpr char kKernelLockdownPath[] = "/sys/kernel/security/lockdown";

// boot.arm_lifecycle: lifecycle_state (legacy driver/ path as fallback),
// with secure_boot_fuse_state from the same directory named in the reason.
// Passes only on "GA Secured". A fuse-state file that is absent or
// unparseable is named in the reason but does not change the verdict.
Finding ProbeBootArmLifecycle(const device::DeviceSource& source,
                              const ProbeContext& ctx);
// boot.secure_boot: SecureBoot + SetupMode efivars; `mokutil --sb-state`
// only when the SecureBoot efivar does not exist. "enabled" needs
// SecureBoot=1 and SetupMode=0 (an absent SetupMode is unknown, and
// SecureBoot=1 with SetupMode=1 is contradictory, so unknown); mokutil's
// "validation is disabled in shim" counts as "disabled".
// Policy note: docs/bluefield.md#uefi-secure-boot records a fleet (NVIDIA
// Carbide) that disables UEFI secure boot on purpose to HTTP-boot its own
// image; requiring "enabled" is a policy choice, not a universal rule.
// Does not check: the enrolled keys (PK/KEK/db), nor the attribute bits
// beyond RUNTIME_ACCESS.
Finding ProbeBootSecureBoot(const device::DeviceSource& source,
                            const ProbeContext& ctx);
// boot.production_keys: `bfsbdump` when installed (its Secure Boot / Secure
// Boot Key lines), cross-checked against lifecycle_state when readable (a
// Production/Development disagreement is unknown); when bfsbdump is not
// installed, derived from lifecycle_state alone ("GA Secured" production,
// "Secured (development)" development, anything else unknown). A bfsbdump
// that fails or prints garbage is unknown (no silent fallback).
Finding ProbeBootProductionKeys(const device::DeviceSource& source,
                                const ProbeContext& ctx);
// os.kernel_lockdown: the bracketed mode of /sys/kernel/security/lockdown.
// Missing file: securityfs not mounted or the lockdown LSM absent (unknown).
Finding ProbeOsKernelLockdown(const device::DeviceSource& source,
                              const ProbeContext& ctx);

}  // namespace dpuaudit::isolation

#endif  // DPUAUDIT_ISOLATION_BOOT_PROBES_H_

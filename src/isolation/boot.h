// Parsers for the Arm-side boot-chain evidence of a BlueField DPU
// (BLUEFIELD.md §4.3): the mlxbf-bootctl sysfs attributes lifecycle_state
// and secure_boot_fuse_state, the UEFI SecureBoot/SetupMode efivars,
// `mokutil --sb-state`, `bfsbdump`, and the kernel lockdown LSM file.
//
// Guarantees: every parser takes the raw bytes/text and is strict. Unknown
// enumerators, duplicate fields, NUL bytes and wrong sizes are
// INVALID_ARGUMENT with a one-sentence message naming the field, the line
// or the byte offset. Nothing is inferred from a missing field.
// Does NOT check: that the values are true. All of them are reported by the
// Arm OS (or by firmware through it) and are self-reported: a compromised
// Arm kernel can print anything (BLUEFIELD.md §0). The BMC / SPDM path is
// the way to corroborate them.
#ifndef DPUAUDIT_ISOLATION_BOOT_H_
#define DPUAUDIT_ISOLATION_BOOT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/finding.h"
#include "common/status.h"
#include "device/device_source.h"
#include "isolation/probes.h"

namespace dpuaudit::isolation {

// ---- lifecycle_state (mlxbf-bootctl, BLUEFIELD.md §4.3) ----

// The nine strings the driver can print: the four states, "Secured
// (development)" (GA Secured with the dev-key fuse bit, BIT(4)), and each
// state with the "(test)" suffix (test mask 0x0c).
inline constexpr std::string_view kLifecycleStates[] = {
    "Production",         "GA Secured",       "GA Non-Secured",
    "RMA",                "Secured (development)",
    "Production(test)",   "GA Secured(test)", "GA Non-Secured(test)",
    "RMA(test)",
};

// Trims surrounding whitespace (the driver appends "\n") and returns the
// state if it is one of kLifecycleStates, exactly (case and spacing).
// INVALID_ARGUMENT "unrecognised lifecycle state '...'" otherwise.
StatusOr<std::string> ParseLifecycleState(std::string_view text);

// ---- secure_boot_fuse_state (mlxbf-bootctl, BLUEFIELD.md §4.3) ----

// Per-key-slot status, as the ABI document defines them.
enum class FuseStatus {
  kInUse,       // burnt, valid and currently in use
  kUsed,        // burnt and valid
  kFree,        // not burnt, free to use
  kSkipped,     // not burnt but not free
  kWasted,      // burnt and invalid
  kInvalid,     // not burnt but marked valid (error state)
  kIncomplete,  // partially burnt
};
std::string_view FuseStatusName(FuseStatus s);  // "InUse", "Used", ...

struct FuseSlot {
  int key = 0;  // 3..0
  FuseStatus status = FuseStatus::kFree;
};

// The driver prints, for keys 3 down to 0, "%d:%s " and then "\n":
//   "3:Free 2:Free 1:Free 0:Used \n"
inline constexpr int kSecureBootKeySlots = 4;

struct SecureBootFuseState {
  std::vector<FuseSlot> slots;  // exactly 4, keys 3, 2, 1, 0 in that order
};

// Strict: exactly kSecureBootKeySlots whitespace-separated "<key>:<status>"
// tokens with keys 3, 2, 1, 0 in that order and a status spelled as above.
StatusOr<SecureBootFuseState> ParseSecureBootFuseState(std::string_view text);

// One phrase for a reason: "key slots in use: 0; free: 3,2,1", plus
// "; ATTENTION: slot 2 Wasted" for any Wasted/Invalid/Incomplete slot.
std::string DescribeFuseState(const SecureBootFuseState& state);

// ---- UEFI efivars (efivarfs) ----

// An efivarfs file is the variable's attributes followed by its data
// (Linux Documentation/filesystems/efivarfs.rst). For the one-byte global
// variables SecureBoot and SetupMode (UEFI 2.10 §3.3, value 0 or 1):
//
//   offset  size  field
//   0x0     4     Attributes, UINT32 little-endian (EFI_VARIABLE_*)
//   0x4     1     Data: 0 or 1
//   0x5           end (no trailing bytes)
inline constexpr size_t kEfiVarAttributesSize = 4;
inline constexpr size_t kEfiVarU8Size = kEfiVarAttributesSize + 1;
// UEFI 2.10 §8.2 (GetVariable): efivarfs only lists variables with
// RUNTIME_ACCESS, so a real file always has this bit.
inline constexpr uint32_t kEfiVariableRuntimeAccess = 0x00000004;

struct EfiVarU8 {
  uint32_t attributes = 0;
  uint8_t value = 0;
};

// Strict: exactly kEfiVarU8Size bytes, RUNTIME_ACCESS set, value 0 or 1.
// Does not check any other attribute bit.
StatusOr<EfiVarU8> ParseEfiVarU8(ByteView bytes);

// ---- mokutil --sb-state ----

struct MokutilSbState {
  bool secure_boot = false;               // "SecureBoot enabled|disabled"
  bool setup_mode = false;                // "Platform is in Setup Mode"
  bool shim_validation_disabled = false;  // "SecureBoot validation is
                                          //  disabled in shim"
};

// Strict: the first non-blank line is "SecureBoot enabled" or "SecureBoot
// disabled"; the only other lines accepted are the two notes above (each at
// most once). Anything else (e.g. "This system doesn't support Secure
// Boot") is INVALID_ARGUMENT naming the line.
StatusOr<MokutilSbState> ParseMokutilSbState(std::string_view text);

// ---- bfsbdump (bfscripts, BLUEFIELD.md §4.3) ----

// Every value as printed, trimmed; absent lines stay nullopt. Counters are
// kept as strings (they are not interpreted here).
struct Bfsbdump {
  std::string platform;                        // title, e.g. "BlueField3"
  std::optional<std::string> nv_production;    // BF3 only
  std::optional<std::string> arm_life_cycle;   // Production|Secure|
                                               // Non-Secure|RMA
  std::optional<std::string> secure_boot;      // Enabled|Disabled
  std::optional<std::string> secure_boot_key;  // Development|Production
  std::optional<std::string> secure_boot_key_valid;
  std::optional<std::string> secure_boot_key_count;
  std::optional<std::string> crypto;  // Enabled|Disabled
  std::optional<std::string> trusted_fw_counter;
  std::optional<std::string> untrusted_fw_counter;
  std::optional<std::string> cerberus_counter;  // BF2 only
  std::optional<std::string> revmc;
  std::optional<std::string> dotmc;
  std::optional<std::string> dot_fsbl_version;
  std::optional<std::string> dot_id;
  std::optional<std::string> ecid;
  // "key: value" lines with a key not listed above (newer tool versions),
  // kept in order, not interpreted.
  std::vector<std::pair<std::string, std::string>> other;
};

// Lines are "<key> : <value>", split on the first ':'; the key is trimmed
// and its inner runs of blanks collapse to one space, so column-alignment
// differences are tolerated. Blank lines and "-----" rules are skipped; the
// one non-blank line without ':' before the first rule is the platform
// title. INVALID_ARGUMENT (naming the line) for: any other line without
// ':', a key given twice, no "Secure Boot" line, a value outside the sets
// above for Secure Boot / Secure Boot Key / Arm Life Cycle / Crypto, a
// "Secure Boot Key" line with Secure Boot Disabled, or none with Enabled.
StatusOr<Bfsbdump> ParseBfsbdump(std::string_view text);

// ---- /sys/kernel/security/lockdown ----

enum class LockdownMode { kNone, kIntegrity, kConfidentiality };
std::string_view LockdownModeName(LockdownMode m);  // "none", ...

// The file lists the modes with the selected one in brackets:
// "[none] integrity confidentiality\n". Strict: only these three names,
// each at most once, exactly one bracketed.
StatusOr<LockdownMode> ParseKernelLockdown(std::string_view text);

// ---- Probes (listed by internal::BootProbeEntries, boot_probes.cc) ----
//
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
// Policy note: BLUEFIELD.md §1.7 records a fleet (NVIDIA Carbide) that
// disables UEFI secure boot on purpose to HTTP-boot its own image; requiring
// "enabled" is a policy choice, not a universal rule.
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

#endif  // DPUAUDIT_ISOLATION_BOOT_H_

// Parsers for the Arm-side boot-chain evidence of a BlueField DPU
// (docs/bluefield.md#mlxbf-bootctl): the mlxbf-bootctl sysfs attributes
// lifecycle_state and secure_boot_fuse_state, `mokutil --sb-state`, `bfsbdump`,
// and the kernel lockdown LSM file.
//
// Guarantees: every parser takes the raw bytes/text and is strict. Unknown
// enumerators, duplicate fields, NUL bytes and wrong sizes are
// INVALID_ARGUMENT with a one-sentence message naming the field, the line
// or the byte offset. Nothing is inferred from a missing field.
// Does NOT check: that the values are true. All of them are reported by the Arm
// OS (or by firmware through it) and are self-reported: a compromised Arm
// kernel can print anything (docs/bluefield.md#trust). The BMC / SPDM path is
// the way to corroborate them.
// The UEFI efivars these probes also read are parsed by uefi/efivar.h.
#ifndef DPUAUDIT_BLUEFIELD_BOOT_TOOLS_H_
#define DPUAUDIT_BLUEFIELD_BOOT_TOOLS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace dpuaudit::bluefield {

// ---- lifecycle_state (mlxbf-bootctl, docs/bluefield.md#lifecycle) ----

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

// ---- secure_boot_fuse_state (mlxbf-bootctl, docs/bluefield.md#lifecycle) ----

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

// ---- bfsbdump (bfscripts, docs/bluefield.md#bfsbdump) ----

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
}  // namespace dpuaudit::bluefield

#endif  // DPUAUDIT_BLUEFIELD_BOOT_TOOLS_H_

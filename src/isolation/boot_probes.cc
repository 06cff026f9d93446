// boot.* and os.* probes (docs/bluefield.md#lifecycle, #uefi-secure-boot,
// #bfsbdump, #kernel-lockdown) and their catalogue entries.
// Parsers live in boot.cc; this file only reads evidence and decides.
#include <optional>
#include <string>
#include <utility>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "isolation/boot_probes.h"
#include "isolation/probe_entries.h"
#include "isolation/tool_run.h"

namespace dpuaudit::isolation {
namespace {

using device::Argv;

// sysfs attributes and efivars are a few bytes; anything larger is garbage.
constexpr size_t kMaxSmallFileBytes = 4096;

constexpr std::string_view kLifecycleId = "boot.arm_lifecycle";
constexpr std::string_view kSecureBootId = "boot.secure_boot";
constexpr std::string_view kProductionKeysId = "boot.production_keys";
constexpr std::string_view kLockdownId = "os.kernel_lockdown";

constexpr auto StartFile = internal::StartFileFinding;
constexpr auto StartCommand = internal::StartCommandFinding;
constexpr auto Unknown = internal::UnknownFinding;

Finding Decide(Finding f, bool pass, std::string observed,
               std::string reason) {
  f.verdict = pass ? Verdict::kPass : Verdict::kFail;
  f.observed = std::move(observed);
  f.reason = std::move(reason);
  return f;
}

// "could not read P: <message>" for an error other than NOT_FOUND.
std::string ReadError(const std::string& path, const Status& s) {
  return "could not read " + path + ": " + s.ToString();
}

// ---- lifecycle_state ----

struct LifecycleRead {
  std::string path;  // the file the state came from (or would have)
  std::string dir;   // its directory (for secure_boot_fuse_state)
  std::optional<std::string> state;  // set iff read and recognised
  std::string error;                 // why not, when !state
};

LifecycleRead ReadLifecycle(const device::DeviceSource& source) {
  LifecycleRead r;
  r.path = kLifecycleStatePath;
  StatusOr<Bytes> bytes = source.ReadFile(r.path, kMaxSmallFileBytes);
  if (!bytes.ok() && bytes.status().code() == StatusCode::kNotFound) {
    StatusOr<Bytes> legacy =
        source.ReadFile(kLifecycleStateLegacyPath, kMaxSmallFileBytes);
    if (!legacy.ok() && legacy.status().code() == StatusCode::kNotFound) {
      r.error = std::string("neither ") + kLifecycleStatePath + " nor " +
                kLifecycleStateLegacyPath +
                " exists (mlxbf-bootctl driver not loaded, or not a "
                "BlueField Arm)";
      return r;
    }
    r.path = kLifecycleStateLegacyPath;
    bytes = std::move(legacy);
  }
  r.dir = r.path.substr(0, r.path.rfind('/'));
  if (!bytes.ok()) {
    r.error = ReadError(r.path, bytes.status());
    return r;
  }
  StatusOr<std::string> state = bluefield::ParseLifecycleState(ToString(*bytes));
  if (!state.ok()) {
    r.error = r.path + ": " + state.status().message();
    return r;
  }
  r.state = std::move(state).value();
  return r;
}

// The phrase about secure_boot_fuse_state in `dir`, for a reason.
std::string FuseStatePhrase(const device::DeviceSource& source,
                            const std::string& dir) {
  const std::string path = dir + "/secure_boot_fuse_state";
  StatusOr<Bytes> bytes = source.ReadFile(path, kMaxSmallFileBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) {
      return "secure_boot_fuse_state not present";
    }
    return "secure_boot_fuse_state unreadable (" + bytes.status().ToString() +
           ")";
  }
  StatusOr<bluefield::SecureBootFuseState> fuses =
      bluefield::ParseSecureBootFuseState(ToString(*bytes));
  if (!fuses.ok()) {
    return "secure_boot_fuse_state unparseable (" + fuses.status().message() +
           ")";
  }
  return "secure_boot_fuse_state: " + bluefield::DescribeFuseState(*fuses);
}

std::string LifecycleMeaning(std::string_view state) {
  if (state == "GA Secured") {
    return "secure boot is enforced with production keys";
  }
  if (state == "Secured (development)") {
    return "secure boot is enforced, but with development keys (dev-key fuse "
           "bit set)";
  }
  if (state == "Production") {
    return "the secure-boot fuses are not burnt: the Arm boots unverified "
           "images";
  }
  if (state == "GA Non-Secured") {
    return "a non-secure chip that cannot be secured";
  }
  if (state == "RMA") return "the part is in Return Merchandise state";
  return "the lifecycle test bits are set: not a production part";
}

// ---- boot.secure_boot helpers ----

// Reads and parses one efivar; on failure returns the reason.
StatusOr<uefi::EfiVarU8> ReadEfiVar(const device::DeviceSource& source,
                              const std::string& path) {
  StatusOr<Bytes> bytes = source.ReadFile(path, kMaxSmallFileBytes);
  if (!bytes.ok()) return bytes.status();
  StatusOr<uefi::EfiVarU8> v = uefi::ParseEfiVarU8(*bytes);
  if (!v.ok()) return v.status().WithPrefix(path);
  return v;
}

Finding SecureBootFromMokutil(const device::DeviceSource& source) {
  const Argv argv = device::MokutilSbStateArgv();
  Finding f = StartCommand(kSecureBootId, "enabled", argv);
  const std::string why = std::string("no SecureBoot efivar at ") +
                          kEfiSecureBootPath + ", so used `" + f.source + "`";
  StatusOr<std::string> out = internal::RunTool(source, argv);
  if (!out.ok()) {
    return Unknown(std::move(f), why + ", which failed: " +
                                     out.status().message());
  }
  StatusOr<bluefield::MokutilSbState> st = bluefield::ParseMokutilSbState(*out);
  if (!st.ok()) {
    return Unknown(std::move(f),
                   why + ", whose output is unparseable: " +
                       st.status().message());
  }
  if (st->setup_mode) {
    return Decide(std::move(f), false, "setup_mode",
                  why + ": the platform is in Setup Mode (no keys enrolled, "
                        "nothing enforced)");
  }
  if (!st->secure_boot) {
    return Decide(std::move(f), false, "disabled",
                  why + ": UEFI secure boot is disabled");
  }
  if (st->shim_validation_disabled) {
    return Decide(std::move(f), false, "disabled",
                  why + ": UEFI secure boot is enabled but shim validation "
                        "is disabled, so the kernel is not verified");
  }
  return Decide(std::move(f), true, "enabled",
                why + ": UEFI secure boot is enabled");
}

// ---- boot.production_keys helpers ----

// "production" / "development" implied by a lifecycle state, if any.
std::optional<std::string> KeysFromLifecycle(std::string_view state) {
  if (state == "GA Secured") return "production";
  if (state == "Secured (development)") return "development";
  return std::nullopt;
}

}  // namespace

Finding ProbeBootArmLifecycle(const device::DeviceSource& source,
                              const ProbeContext&) {
  LifecycleRead r = ReadLifecycle(source);
  Finding f = StartFile(kLifecycleId, "GA Secured", r.path);
  if (!r.state) return Unknown(std::move(f), r.error);
  const std::string fuses = FuseStatePhrase(source, r.dir);
  const bool pass = *r.state == "GA Secured";
  std::string reason = "lifecycle_state is '" + *r.state +
                       "': " + LifecycleMeaning(*r.state);
  if (r.path == kLifecycleStateLegacyPath) reason += " (legacy driver/ path)";
  reason += "; " + fuses;
  return Decide(std::move(f), pass, *r.state, std::move(reason));
}

Finding ProbeBootSecureBoot(const device::DeviceSource& source,
                            const ProbeContext&) {
  Finding f = StartFile(kSecureBootId, "enabled", kEfiSecureBootPath);
  StatusOr<uefi::EfiVarU8> sb = ReadEfiVar(source, kEfiSecureBootPath);
  if (!sb.ok()) {
    if (sb.status().code() == StatusCode::kNotFound) {
      return SecureBootFromMokutil(source);
    }
    if (sb.status().code() == StatusCode::kInvalidArgument) {
      return Unknown(std::move(f),
                     "unparseable SecureBoot efivar: " + sb.status().message());
    }
    return Unknown(std::move(f),
                   ReadError(kEfiSecureBootPath, sb.status()));
  }
  StatusOr<uefi::EfiVarU8> sm = ReadEfiVar(source, kEfiSetupModePath);
  std::string sm_problem;
  if (!sm.ok()) {
    sm_problem = sm.status().code() == StatusCode::kNotFound
                     ? std::string("SetupMode variable absent (") +
                           kEfiSetupModePath + ")"
                 : sm.status().code() == StatusCode::kInvalidArgument
                     ? "unparseable SetupMode efivar: " + sm.status().message()
                     : ReadError(kEfiSetupModePath, sm.status());
  }
  const std::string from = "from efivars SecureBoot=" +
                           std::to_string(sb->value) + ", SetupMode=" +
                           (sm.ok() ? std::to_string(sm->value) : "?");
  if (sm.ok() && sm->value == 1) {
    if (sb->value == 1) {
      return Unknown(std::move(f),
                     from + ": contradictory (UEFI sets SecureBoot=1 only in "
                            "User/Deployed mode)");
    }
    return Decide(std::move(f), false, "setup_mode",
                  from + ": the platform is in Setup Mode (keys not "
                         "enrolled, nothing enforced)");
  }
  if (sb->value == 0) {
    std::string reason = from + ": UEFI secure boot is disabled";
    if (!sm_problem.empty()) reason += " (" + sm_problem + ")";
    return Decide(std::move(f), false, "disabled", std::move(reason));
  }
  if (!sm_problem.empty()) {
    return Unknown(std::move(f),
                   "SecureBoot=1 but " + sm_problem +
                       ": cannot tell User mode from Setup mode");
  }
  return Decide(std::move(f), true, "enabled",
                from + ": UEFI secure boot is enabled and enforcing");
}

Finding ProbeBootProductionKeys(const device::DeviceSource& source,
                                const ProbeContext&) {
  const Argv argv = device::BfsbdumpArgv();
  LifecycleRead life = ReadLifecycle(source);
  StatusOr<std::string> out = internal::RunTool(source, argv);
  if (!out.ok() && out.status().code() == StatusCode::kNotFound) {
    // bfsbdump not installed: the lifecycle state alone.
    Finding f = StartFile(kProductionKeysId, "production", life.path);
    const std::string why =
        "`bfsbdump` is not installed, so derived from lifecycle_state";
    if (!life.state) return Unknown(std::move(f), why + ": " + life.error);
    std::optional<std::string> keys = KeysFromLifecycle(*life.state);
    if (!keys) {
      return Unknown(std::move(f), why + ": '" + *life.state +
                                       "' does not say which keys are in "
                                       "use (only 'GA Secured' and 'Secured "
                                       "(development)' do)");
    }
    const bool pass = *keys == "production";
    return Decide(std::move(f), pass, *keys,
                  why + ": '" + *life.state + "' means " + *keys +
                      " secure-boot keys");
  }
  Finding f = StartCommand(kProductionKeysId, "production", argv);
  if (!out.ok()) return Unknown(std::move(f), out.status().message());
  StatusOr<bluefield::Bfsbdump> b = bluefield::ParseBfsbdump(*out);
  if (!b.ok()) {
    return Unknown(std::move(f), "could not parse output of `" + f.source +
                                     "`: " + b.status().message());
  }
  if (*b->secure_boot == "Disabled") {
    return Decide(std::move(f), false, "secure_boot_disabled",
                  "bfsbdump: Secure Boot is Disabled, so no key is "
                  "enforced");
  }
  const std::string keys =
      *b->secure_boot_key == "Production" ? "production" : "development";
  std::string reason = "bfsbdump: Secure Boot Enabled, Secure Boot Key " +
                       *b->secure_boot_key;
  if (life.state) {
    std::optional<std::string> life_keys = KeysFromLifecycle(*life.state);
    if (life_keys && *life_keys != keys) {
      return Unknown(std::move(f),
                     "disagreement: bfsbdump says Secure Boot Key " +
                         *b->secure_boot_key + " but " + life.path +
                         " says '" + *life.state + "'");
    }
    reason += "; lifecycle_state '" + *life.state + "'" +
              (life_keys ? " agrees" : " does not name the keys");
  } else {
    reason += "; not cross-checked with lifecycle_state: " + life.error;
  }
  return Decide(std::move(f), keys == "production", keys, std::move(reason));
}

Finding ProbeOsKernelLockdown(const device::DeviceSource& source,
                              const ProbeContext&) {
  Finding f = StartFile(kLockdownId, "integrity,confidentiality",
                        kKernelLockdownPath);
  StatusOr<Bytes> bytes = source.ReadFile(kKernelLockdownPath,
                                          kMaxSmallFileBytes);
  if (!bytes.ok()) {
    if (bytes.status().code() == StatusCode::kNotFound) {
      return Unknown(std::move(f),
                     std::string(kKernelLockdownPath) +
                         " does not exist (securityfs not mounted or the "
                         "lockdown LSM absent)");
    }
    return Unknown(std::move(f),
                   ReadError(kKernelLockdownPath, bytes.status()));
  }
  StatusOr<bluefield::LockdownMode> mode = bluefield::ParseKernelLockdown(ToString(*bytes));
  if (!mode.ok()) {
    return Unknown(std::move(f), std::string(kKernelLockdownPath) + ": " +
                                     mode.status().message());
  }
  const std::string name(bluefield::LockdownModeName(*mode));
  if (*mode == bluefield::LockdownMode::kNone) {
    return Decide(std::move(f), false, name,
                  "kernel lockdown is 'none': root can modify the running "
                  "kernel (e.g. /dev/mem, unsigned modules, kexec)");
  }
  return Decide(std::move(f), true, name,
                "kernel lockdown is '" + name +
                    "': root cannot modify the running kernel" +
                    (*mode == bluefield::LockdownMode::kConfidentiality
                         ? " nor read kernel secrets"
                         : ""));
}

namespace internal {

std::vector<ProbeInfo> BootProbeEntries() {
  return {
      {kLifecycleId,
       "Arm lifecycle (mlxbf-bootctl lifecycle_state): GA Secured, with "
       "secure_boot_fuse_state",
       {"GA Secured"},
       {"Production", "GA Secured", "GA Non-Secured", "RMA",
        "Secured (development)", "Production(test)", "GA Secured(test)",
        "GA Non-Secured(test)", "RMA(test)"},
       &ProbeBootArmLifecycle},
      {kSecureBootId,
       "UEFI secure boot enforcing (SecureBoot/SetupMode efivars, else "
       "mokutil --sb-state)",
       {"enabled"},
       {"enabled", "disabled", "setup_mode"},
       &ProbeBootSecureBoot},
      {kProductionKeysId,
       "Arm secure boot uses production keys (bfsbdump, else lifecycle_state)",
       {"production"},
       {"production", "development", "secure_boot_disabled"},
       &ProbeBootProductionKeys},
      {kLockdownId,
       "Kernel lockdown LSM mode (/sys/kernel/security/lockdown)",
       {"integrity", "confidentiality"},
       {"none", "integrity", "confidentiality"},
       &ProbeOsKernelLockdown},
  };
}

}  // namespace internal
}  // namespace dpuaudit::isolation

// The boot.* and os.* probes over a fake DeviceSource (every verdict and
// every unknown path) and over the recorded fixtures when they carry the
// files (another change adds them; absent files skip, never pass).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "isolation/boot_probes.h"
#include "testing/fake_device_source.h"
#include "isolation/probes.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using ::testing::HasSubstr;
using testing::FakeDeviceSource;

const ProbeContext kNoCtx;
const std::string kFuse =
    "/sys/bus/platform/devices/MLNXBF04:00/secure_boot_fuse_state";
const std::string kLegacyFuse =
    "/sys/bus/platform/devices/MLNXBF04:00/driver/secure_boot_fuse_state";

// An efivarfs file: attributes 0x06 (BS|RT) LE, then one data byte.
std::string EfiVar(uint8_t value) {
  return std::string("\x06\x00\x00\x00", 4) +  // attributes
         std::string(1, static_cast<char>(value));  // data
}

void ExpectFinding(const Finding& f, Verdict verdict,
                   const std::string& observed, const std::string& source,
                   const std::string& reason) {
  EXPECT_EQ(f.verdict, verdict) << f.id << ": " << f.reason;
  EXPECT_EQ(f.observed, observed) << f.reason;
  EXPECT_EQ(f.source, source);
  EXPECT_THAT(f.reason, HasSubstr(reason));
  EXPECT_FALSE(f.evidence_id.empty());
  EXPECT_FALSE(f.expected.empty());
}

// ---- boot.arm_lifecycle ----

TEST(ArmLifecycleProbeTest, Verdicts) {
  struct Case {
    std::string state;
    Verdict verdict;
    std::string reason;
  } cases[] = {
      {"GA Secured\n", Verdict::kPass, "enforced with production keys"},
      {"Secured (development)\n", Verdict::kFail, "development keys"},
      {"Production\n", Verdict::kFail, "fuses are not burnt"},
      {"GA Non-Secured\n", Verdict::kFail, "cannot be secured"},
      {"RMA\n", Verdict::kFail, "Return Merchandise"},
      {"GA Secured(test)\n", Verdict::kFail, "test bits are set"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    src.File(kLifecycleStatePath, c.state)
        .File(kFuse, "3:Free 2:Free 1:Free 0:Used \n");
    Finding f = ProbeBootArmLifecycle(src, kNoCtx);
    EXPECT_EQ(f.id, "boot.arm_lifecycle");
    EXPECT_EQ(f.expected, "GA Secured");
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForFile(kLifecycleStatePath));
    ExpectFinding(f, c.verdict, std::string(c.state, 0, c.state.size() - 1),
                  kLifecycleStatePath, c.reason);
    EXPECT_THAT(f.reason, HasSubstr("secure_boot_fuse_state: key slots in "
                                    "use: 0; free: 3,2,1"));
  }
}

TEST(ArmLifecycleProbeTest, LegacyPathAndFuseProblems) {
  FakeDeviceSource legacy;
  legacy.File(kLifecycleStateLegacyPath, "GA Secured\n")
      .File(kLegacyFuse, "3:Free 2:Wasted 1:Free 0:Used \n");
  Finding f = ProbeBootArmLifecycle(legacy, kNoCtx);
  ExpectFinding(f, Verdict::kPass, "GA Secured", kLifecycleStateLegacyPath,
                "(legacy driver/ path)");
  EXPECT_THAT(f.reason, HasSubstr("ATTENTION: slot 2 Wasted"));

  FakeDeviceSource no_fuse;
  no_fuse.File(kLifecycleStatePath, "GA Secured\n");
  ExpectFinding(ProbeBootArmLifecycle(no_fuse, kNoCtx), Verdict::kPass,
                "GA Secured", kLifecycleStatePath,
                "secure_boot_fuse_state not present");

  FakeDeviceSource bad_fuse;
  bad_fuse.File(kLifecycleStatePath, "GA Secured\n").File(kFuse, "garbage");
  ExpectFinding(ProbeBootArmLifecycle(bad_fuse, kNoCtx), Verdict::kPass,
                "GA Secured", kLifecycleStatePath,
                "secure_boot_fuse_state unparseable (secure_boot_fuse_state "
                "has 1 key slots, expected 4.)");
}

TEST(ArmLifecycleProbeTest, Unknowns) {
  FakeDeviceSource missing;
  ExpectFinding(ProbeBootArmLifecycle(missing, kNoCtx), Verdict::kUnknown, "",
                kLifecycleStatePath,
                "neither /sys/bus/platform/devices/MLNXBF04:00/"
                "lifecycle_state nor");

  FakeDeviceSource odd;
  odd.File(kLifecycleStatePath, "Secure\n");
  ExpectFinding(ProbeBootArmLifecycle(odd, kNoCtx), Verdict::kUnknown, "",
                kLifecycleStatePath, "unrecognised lifecycle state 'Secure'");

  FakeDeviceSource huge;
  huge.File(kLifecycleStatePath, std::string(5000, 'A'));
  ExpectFinding(ProbeBootArmLifecycle(huge, kNoCtx), Verdict::kUnknown, "",
                kLifecycleStatePath,
                "could not read /sys/bus/platform/devices/MLNXBF04:00/"
                "lifecycle_state: RESOURCE_EXHAUSTED");
}

// ---- boot.secure_boot ----

TEST(SecureBootProbeTest, Efivars) {
  struct Case {
    int secure_boot;  // -1: absent
    int setup_mode;   // -1: absent
    Verdict verdict;
    std::string observed;
    std::string reason;
  } cases[] = {
      {1, 0, Verdict::kPass, "enabled",
       "from efivars SecureBoot=1, SetupMode=0: UEFI secure boot is enabled"},
      {0, 0, Verdict::kFail, "disabled", "SecureBoot=0, SetupMode=0"},
      {0, -1, Verdict::kFail, "disabled", "(SetupMode variable absent"},
      {0, 1, Verdict::kFail, "setup_mode", "platform is in Setup Mode"},
      {1, 1, Verdict::kUnknown, "", "contradictory"},
      {1, -1, Verdict::kUnknown, "", "SecureBoot=1 but SetupMode variable "
                                     "absent"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    if (c.secure_boot >= 0) {
      src.File(kEfiSecureBootPath,
               EfiVar(static_cast<uint8_t>(c.secure_boot)));
    }
    if (c.setup_mode >= 0) {
      src.File(kEfiSetupModePath, EfiVar(static_cast<uint8_t>(c.setup_mode)));
    }
    Finding f = ProbeBootSecureBoot(src, kNoCtx);
    EXPECT_EQ(f.id, "boot.secure_boot");
    EXPECT_EQ(f.expected, "enabled");
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForFile(kEfiSecureBootPath));
    ExpectFinding(f, c.verdict, c.observed, kEfiSecureBootPath, c.reason);
    EXPECT_EQ(src.runs(device::MokutilSbStateArgv()), 0);
  }
}

TEST(SecureBootProbeTest, BadEfivars) {
  FakeDeviceSource short_sb;
  short_sb.File(kEfiSecureBootPath, std::string("\x06\x00\x00\x00", 4));
  ExpectFinding(ProbeBootSecureBoot(short_sb, kNoCtx), Verdict::kUnknown, "",
                kEfiSecureBootPath,
                "unparseable SecureBoot efivar: /sys/firmware/efi/efivars/"
                "SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c: efivar is "
                "4 bytes, expected 5");

  FakeDeviceSource bad_value;
  bad_value.File(kEfiSecureBootPath, EfiVar(2));
  ExpectFinding(ProbeBootSecureBoot(bad_value, kNoCtx), Verdict::kUnknown, "",
                kEfiSecureBootPath, "data byte at offset 0x4 is 2");

  FakeDeviceSource bad_setup;
  bad_setup.File(kEfiSecureBootPath, EfiVar(1))
      .File(kEfiSetupModePath, EfiVar(7));
  ExpectFinding(ProbeBootSecureBoot(bad_setup, kNoCtx), Verdict::kUnknown, "",
                kEfiSecureBootPath,
                "SecureBoot=1 but unparseable SetupMode efivar");
}

TEST(SecureBootProbeTest, MokutilFallback) {
  const device::Argv argv = device::MokutilSbStateArgv();
  struct Case {
    std::string out;
    Verdict verdict;
    std::string observed;
    std::string reason;
  } cases[] = {
      {"SecureBoot enabled\n", Verdict::kPass, "enabled",
       "so used `mokutil --sb-state`: UEFI secure boot is enabled"},
      {"SecureBoot disabled\n", Verdict::kFail, "disabled",
       "UEFI secure boot is disabled"},
      {"SecureBoot disabled\nPlatform is in Setup Mode\n", Verdict::kFail,
       "setup_mode", "Setup Mode"},
      {"SecureBoot enabled\nSecureBoot validation is disabled in shim\n",
       Verdict::kFail, "disabled", "shim validation is disabled"},
      {"EFI variables are not supported on this system\n", Verdict::kUnknown,
       "", "whose output is unparseable: mokutil --sb-state line 1"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    src.Command(argv, c.out);
    Finding f = ProbeBootSecureBoot(src, kNoCtx);
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForCommand(argv));
    ExpectFinding(f, c.verdict, c.observed, "mokutil --sb-state", c.reason);
  }
  FakeDeviceSource none;
  ExpectFinding(ProbeBootSecureBoot(none, kNoCtx), Verdict::kUnknown, "",
                "mokutil --sb-state",
                "which failed: `mokutil` is not installed (exit 127)");
}

// ---- boot.production_keys ----

constexpr char kBfsbdumpProduction[] =
    " BlueField3\n"
    "----------------------\n"
    "Arm Life Cycle       : Secure\n"
    "Secure Boot          : Enabled\n"
    "Secure Boot Key      : Production\n"
    "----------------------\n";
constexpr char kBfsbdumpDevelopment[] =
    "Secure Boot          : Enabled\n"
    "Secure Boot Key      : Development\n";
constexpr char kBfsbdumpDisabled[] =
    "Arm Life Cycle       : Production\n"
    "Secure Boot          : Disabled\n";

TEST(ProductionKeysProbeTest, Bfsbdump) {
  const device::Argv argv = device::BfsbdumpArgv();
  struct Case {
    std::string out;
    std::string lifecycle;  // "" absent
    Verdict verdict;
    std::string observed;
    std::string reason;
  } cases[] = {
      {kBfsbdumpProduction, "GA Secured\n", Verdict::kPass, "production",
       "Secure Boot Key Production; lifecycle_state 'GA Secured' agrees"},
      {kBfsbdumpProduction, "", Verdict::kPass, "production",
       "not cross-checked with lifecycle_state: neither"},
      {kBfsbdumpDevelopment, "Secured (development)\n", Verdict::kFail,
       "development", "Secure Boot Key Development"},
      {kBfsbdumpDisabled, "Production\n", Verdict::kFail,
       "secure_boot_disabled", "Secure Boot is Disabled"},
      {kBfsbdumpProduction, "Secured (development)\n", Verdict::kUnknown, "",
       "disagreement: bfsbdump says Secure Boot Key Production but "
       "/sys/bus/platform/devices/MLNXBF04:00/lifecycle_state says 'Secured "
       "(development)'"},
      {kBfsbdumpDevelopment, "GA Secured\n", Verdict::kUnknown, "",
       "disagreement: bfsbdump says Secure Boot Key Development"},
      {"Secure Boot : Enabled\n", "GA Secured\n", Verdict::kUnknown, "",
       "could not parse output of `bfsbdump`: bfsbdump prints no 'Secure "
       "Boot Key'"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    src.Command(argv, c.out);
    if (!c.lifecycle.empty()) src.File(kLifecycleStatePath, c.lifecycle);
    Finding f = ProbeBootProductionKeys(src, kNoCtx);
    EXPECT_EQ(f.id, "boot.production_keys");
    EXPECT_EQ(f.expected, "production");
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForCommand(argv));
    ExpectFinding(f, c.verdict, c.observed, "bfsbdump", c.reason);
  }
}

TEST(ProductionKeysProbeTest, BfsbdumpFailsClosed) {
  device::CommandResult r;
  r.exit_code = 1;
  r.stderr_bytes = ToBytes("BfSbStatus variable not found\n");
  FakeDeviceSource src;
  src.Result(device::BfsbdumpArgv(), r)
      .File(kLifecycleStatePath, "GA Secured\n");
  ExpectFinding(ProbeBootProductionKeys(src, kNoCtx), Verdict::kUnknown, "",
                "bfsbdump",
                "`bfsbdump` exited with status 1: BfSbStatus variable not "
                "found");
}

TEST(ProductionKeysProbeTest, LifecycleFallback) {
  struct Case {
    std::string lifecycle;  // "" absent
    Verdict verdict;
    std::string observed;
    std::string reason;
  } cases[] = {
      {"GA Secured\n", Verdict::kPass, "production",
       "`bfsbdump` is not installed, so derived from lifecycle_state: 'GA "
       "Secured' means production"},
      {"Secured (development)\n", Verdict::kFail, "development",
       "means development"},
      {"GA Non-Secured\n", Verdict::kUnknown, "",
       "'GA Non-Secured' does not say which keys"},
      {"Production(test)\n", Verdict::kUnknown, "",
       "'Production(test)' does not say which keys"},
      {"garbage\n", Verdict::kUnknown, "", "unrecognised lifecycle state"},
      {"", Verdict::kUnknown, "", "neither"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    if (!c.lifecycle.empty()) src.File(kLifecycleStatePath, c.lifecycle);
    Finding f = ProbeBootProductionKeys(src, kNoCtx);
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForFile(kLifecycleStatePath));
    ExpectFinding(f, c.verdict, c.observed, kLifecycleStatePath, c.reason);
  }
}

// ---- os.kernel_lockdown ----

TEST(KernelLockdownProbeTest, Verdicts) {
  struct Case {
    std::string content;  // "" absent
    Verdict verdict;
    std::string observed;
    std::string reason;
  } cases[] = {
      {"[none] integrity confidentiality\n", Verdict::kFail, "none",
       "kernel lockdown is 'none'"},
      {"none [integrity] confidentiality\n", Verdict::kPass, "integrity",
       "root cannot modify the running kernel"},
      {"none integrity [confidentiality]\n", Verdict::kPass,
       "confidentiality", "nor read kernel secrets"},
      {"none integrity confidentiality\n", Verdict::kUnknown, "",
       "/sys/kernel/security/lockdown: lockdown file brackets no mode"},
      {"", Verdict::kUnknown, "",
       "/sys/kernel/security/lockdown does not exist (securityfs not "
       "mounted or the lockdown LSM absent)"},
  };
  for (const Case& c : cases) {
    FakeDeviceSource src;
    if (!c.content.empty()) src.File(kKernelLockdownPath, c.content);
    Finding f = ProbeOsKernelLockdown(src, kNoCtx);
    EXPECT_EQ(f.id, "os.kernel_lockdown");
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForFile(kKernelLockdownPath));
    ExpectFinding(f, c.verdict, c.observed, kKernelLockdownPath, c.reason);
  }
}

// ---- catalogue ----

TEST(BootCatalogueTest, AllFourRegistered) {
  for (const char* id : {"boot.arm_lifecycle", "boot.secure_boot",
                         "boot.production_keys", "os.kernel_lockdown"}) {
    const ProbeInfo* p = FindProbe(id);
    ASSERT_NE(p, nullptr) << id;
    EXPECT_NE(p->function, nullptr);
  }
  EXPECT_EQ(FindProbe("boot.arm_lifecycle")->values.size(), 9u);
  EXPECT_EQ(FindProbe("os.kernel_lockdown")->expected.size(), 2u);
}

// ---- recorded fixtures (only the files that exist) ----

TEST(BootRecordedFixturesTest, ProbesOverFixturesWhenFilesExist) {
  int checked = 0;
  for (const char* node : {"bf3-zero-trust", "bf3-privileged-host"}) {
    const std::string dir = testing::ProjectFixturePath(node);
    if (!std::filesystem::is_directory(dir)) continue;
    StatusOr<std::unique_ptr<device::DeviceSource>> src =
        device::NewRecordedDeviceSource(dir);
    ASSERT_TRUE(src.ok()) << src.status().ToString();
    auto has = [&](const std::string& path) {
      return std::filesystem::exists(dir + "/fs" + path);
    };
    if (has(kLifecycleStatePath)) {
      Finding f = ProbeBootArmLifecycle(**src, kNoCtx);
      EXPECT_NE(f.verdict, Verdict::kUnknown) << node << ": " << f.reason;
      EXPECT_FALSE(f.observed.empty()) << node;
      ++checked;
    }
    if (has(kEfiSecureBootPath) && has(kEfiSetupModePath)) {
      Finding f = ProbeBootSecureBoot(**src, kNoCtx);
      EXPECT_NE(f.verdict, Verdict::kUnknown) << node << ": " << f.reason;
      ++checked;
    }
    if (has(kKernelLockdownPath)) {
      Finding f = ProbeOsKernelLockdown(**src, kNoCtx);
      EXPECT_NE(f.verdict, Verdict::kUnknown) << node << ": " << f.reason;
      ++checked;
    }
  }
  if (checked == 0) {
    GTEST_SKIP() << "no boot evidence files in tests/fixtures/devices/bf3-*";
  }
}

}  // namespace
}  // namespace dpuaudit::isolation

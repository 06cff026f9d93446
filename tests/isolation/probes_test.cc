#include "isolation/probes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "testing/fake_device_source.h"

namespace dpuaudit::isolation {
namespace {

using testing::FakeDeviceSource;
using ::testing::HasSubstr;

constexpr char kMst[] = "/dev/mst/mt41692_pciconf0";

std::string Row(const std::string& name, const std::string& value) {
  std::string padded = name;
  padded.resize(30, ' ');
  return padded + ": " + value + "\n";
}

// mlxprivhost q in the §1.4 layout.
std::string Privhost(const std::string& level, const std::string& rshim,
                     const std::string& tracer, const std::string& port,
                     const std::string& counter) {
  return "Host configurations\n-------------------\n" + Row("level", level) +
         "\nPort functions status:\n-----------------------\n" +
         Row("disable_rshim", rshim) + Row("disable_tracer", tracer) +
         Row("disable_port_owner", port) + Row("disable_counter_rd", counter) +
         "\n";
}

std::string MlxconfigE(const std::string& type, const std::string& model,
                       const std::string& owner, const std::string& offload,
                       const std::string& offload_next = "") {
  auto row = [](std::string name, std::string c, std::string n) {
    name.resize(44, ' ');
    std::string cc = c + " ";
    cc.resize(std::max<size_t>(16, cc.size()), ' ');
    std::string nn = n + " ";
    nn.resize(std::max<size_t>(16, nn.size()), ' ');
    return "         " + name + cc + cc + nn + "\n";
  };
  return "\nDevice #1:\n----------\n\nDevice type:    " + type +
         "\nName:           n\nDescription:    d\nDevice:         " +
         std::string(kMst) +
         "\n\nConfigurations:                                      Default"
         "         Current         Next Boot\n" +
         row("INTERNAL_CPU_MODEL", model, model) +
         row("INTERNAL_CPU_PAGE_SUPPLIER", owner, owner) +
         row("INTERNAL_CPU_ESWITCH_MANAGER", owner, owner) +
         row("INTERNAL_CPU_IB_VPORT0", owner, owner) +
         row("INTERNAL_CPU_OFFLOAD_ENGINE", offload,
             offload_next.empty() ? offload : offload_next);
}

// `flint q full` with the security fields of a production device.
constexpr char kFlintProduction[] =
    "FW Version:            32.41.1000\n"
    "PSID:                  MT_0000000998\n"
    "Security Attributes:   secure-fw\n"
    "Life cycle:            GA SECURED\n"
    "EFUSE Security Ver:    0\n"
    "Image Security Ver:    0\n";

// The tool each probe covered by this file runs; nullopt for boot.* and
// os.* (their own tests feed them files and other tools).
std::optional<device::Argv> ToolArgv(std::string_view id) {
  if (id.substr(0, 5) == "host.") return device::MlxprivhostQueryArgv(kMst);
  if (id.substr(0, 4) == "dpu.") return device::MlxconfigQueryArgv(kMst);
  if (id.substr(0, 4) == "nic.") return device::FlintQueryArgv(kMst);
  return std::nullopt;
}

// host.* (5) + dpu.* (2) + nic.* (1).
constexpr size_t kToolProbes = 8;

ProbeContext Bf3Context() {
  ProbeContext ctx;
  ctx.mst = MstDeviceInfo{kMst, bluefield::Generation::kBlueField3, "/dev/mst"};
  return ctx;
}

FakeDeviceSource ZeroTrustSource() {
  FakeDeviceSource src;
  src.Dir("/dev/mst", {"mt41692_pciconf0", "mt41692_pciconf0.1"});
  src.Command(device::MlxprivhostQueryArgv(kMst),
              Privhost("RESTRICTED", "TRUE", "TRUE", "TRUE", "TRUE"));
  src.Command(
      device::MlxconfigQueryArgv(kMst),
      MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)", "ENABLED(0)"));
  src.Command(device::FlintQueryArgv(kMst), kFlintProduction);
  return src;
}

void ExpectSourceFields(const Finding& f, const device::Argv& argv) {
  std::string cmd;
  for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
  EXPECT_EQ(f.source, cmd);
  EXPECT_EQ(f.evidence_id, device::EvidenceIdForCommand(argv));
  EXPECT_FALSE(f.reason.empty());
}

// ---- Catalogue ----

TEST(ProbeCatalogueTest, IdsUniqueDottedAndComplete) {
  const std::vector<ProbeInfo>& cat = ProbeCatalogue();
  ASSERT_GE(cat.size(), kToolProbes);
  std::set<std::string> ids;
  const std::regex dotted("[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)+");
  for (const ProbeInfo& p : cat) {
    EXPECT_TRUE(ids.insert(std::string(p.id)).second) << p.id;
    EXPECT_TRUE(std::regex_match(std::string(p.id), dotted)) << p.id;
    EXPECT_FALSE(p.description.empty()) << p.id;
    EXPECT_EQ(p.expected.empty(), p.values.empty()) << p.id;  // version-valued: both empty
    EXPECT_NE(p.function, nullptr) << p.id;
    EXPECT_EQ(FindProbe(p.id), &p);
  }
  for (const char* id : {"host.privilege_level", "host.rshim_disabled",
                         "host.tracer_disabled", "host.counter_read_disabled",
                         "host.port_owner_disabled", "dpu.operation_mode",
                         "dpu.pending_change", "nic.fw_security"}) {
    EXPECT_EQ(ids.count(id), 1u) << id;
  }
  EXPECT_EQ(FindProbe("no.such_probe"), nullptr);
}

// Every probe's finding carries its catalogue id and a catalogue-expected
// value, and passes on the zero-trust device.
TEST(ProbeCatalogueTest, EveryProbePassesOnZeroTrustDevice) {
  FakeDeviceSource src = ZeroTrustSource();
  ProbeContext ctx = Bf3Context();
  size_t covered = 0;
  for (const ProbeInfo& p : ProbeCatalogue()) {
    if (!ToolArgv(p.id)) continue;
    ++covered;
    Finding f = p.function(src, ctx);
    EXPECT_EQ(f.id, p.id);
    EXPECT_EQ(f.verdict, Verdict::kPass) << p.id << ": " << f.reason;
    EXPECT_THAT(p.expected, ::testing::Contains(f.observed)) << p.id;
    EXPECT_THAT(p.values, ::testing::Contains(f.observed)) << p.id;
  }
  EXPECT_EQ(covered, kToolProbes);
}

TEST(RunProbesTest, DiscoversOnceAndRunsEachToolOnce) {
  FakeDeviceSource src = ZeroTrustSource();
  std::vector<Finding> findings = RunProbes(src);
  ASSERT_EQ(findings.size(), ProbeCatalogue().size());
  for (size_t i = 0; i < findings.size(); ++i) {
    EXPECT_EQ(findings[i].id, ProbeCatalogue()[i].id);
    if (!ToolArgv(findings[i].id)) continue;
    EXPECT_EQ(findings[i].verdict, Verdict::kPass) << findings[i].reason;
  }
  // mlxconfig serves dpu.operation_mode, dpu.pending_change and the
  // host.privilege_level cross-check: still one run.
  EXPECT_EQ(src.runs(device::MlxprivhostQueryArgv(kMst)), 1);
  EXPECT_EQ(src.runs(device::MlxconfigQueryArgv(kMst)), 1);
  EXPECT_EQ(src.runs(device::FlintQueryArgv(kMst)), 1);
}

TEST(RunProbesTest, NoMstDeviceGivesAllUnknown) {
  FakeDeviceSource src;  // nothing at all
  std::vector<Finding> findings = RunProbes(src);
  ASSERT_EQ(findings.size(), ProbeCatalogue().size());
  for (const Finding& f : findings) {
    if (!ToolArgv(f.id)) continue;  // boot.*/os.* need no MST device
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_TRUE(f.observed.empty());
    EXPECT_THAT(f.reason, HasSubstr(": no MST device (no BlueField MST "
                                    "device: /dev/mst unreadable"));
    EXPECT_EQ(f.source, "/dev/mst");
    EXPECT_EQ(f.evidence_id, device::EvidenceIdForDir("/dev/mst"));
  }
}

// ---- host.privilege_level ----

TEST(PrivilegeLevelProbeTest, Restricted) {
  FakeDeviceSource src = ZeroTrustSource();
  Finding f = ProbeHostPrivilegeLevel(src, Bf3Context());
  EXPECT_EQ(f.id, "host.privilege_level");
  EXPECT_EQ(f.verdict, Verdict::kPass);
  EXPECT_EQ(f.observed, "RESTRICTED");
  EXPECT_EQ(f.expected, "RESTRICTED");
  ExpectSourceFields(f, device::MlxprivhostQueryArgv(kMst));
}

TEST(PrivilegeLevelProbeTest, PrivilegedFailsAndNamesTheTrap) {
  FakeDeviceSource src;
  src.Command(device::MlxprivhostQueryArgv(kMst),
              Privhost("PRIVILEGED", "FALSE", "FALSE", "FALSE", "FALSE"));
  Finding f = ProbeHostPrivilegeLevel(src, Bf3Context());
  EXPECT_EQ(f.verdict, Verdict::kFail);
  EXPECT_EQ(f.observed, "PRIVILEGED");
  EXPECT_THAT(f.reason, HasSubstr("level is PRIVILEGED for host 0"));
  EXPECT_THAT(f.reason,
              HasSubstr("mlxprivhost also prints PRIVILEGED and exits 0 when "
                        "its NV-config read fails"));
  ExpectSourceFields(f, device::MlxprivhostQueryArgv(kMst));
}

TEST(PrivilegeLevelProbeTest, PartialRestrictionStillPassesLevel) {
  FakeDeviceSource src;
  src.Command(device::MlxprivhostQueryArgv(kMst),
              Privhost("RESTRICTED", "FALSE", "FALSE", "FALSE", "FALSE"));
  ProbeContext ctx = Bf3Context();
  EXPECT_EQ(ProbeHostPrivilegeLevel(src, ctx).verdict, Verdict::kPass);
  Finding rshim = FindProbe("host.rshim_disabled")->function(src, ctx);
  EXPECT_EQ(rshim.verdict, Verdict::kFail);
  EXPECT_EQ(rshim.observed, "FALSE");
  EXPECT_EQ(rshim.reason,
            "disable_rshim is FALSE for host 0: the restriction is not "
            "configured");
}

// ---- host.privilege_level cross-check with mlxconfig HOST_PRIV_LEVEL ----

// Zero-trust mlxconfig -e output plus a HOST_PRIV_LEVEL row (Current given,
// Default and Next Boot equal to it).
std::string MlxconfigWithPrivLevel(const std::string& current) {
  std::string name = "HOST_PRIV_LEVEL";
  name.resize(44, ' ');
  return MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                    "ENABLED(0)") +
         "         " + name + current + "   " + current + "   " + current +
         "\n";
}

struct CrossCase {
  const char* name;
  const char* level;      // mlxprivhost level
  std::string mlxconfig;  // "" = mlxconfig not installed
  Verdict verdict;
  const char* observed;
  const char* reason;
};

class PrivilegeCrossCheckTest : public ::testing::TestWithParam<CrossCase> {};

TEST_P(PrivilegeCrossCheckTest, Judges) {
  const CrossCase& c = GetParam();
  FakeDeviceSource src;
  src.Command(device::MlxprivhostQueryArgv(kMst),
              Privhost(c.level, "TRUE", "TRUE", "TRUE", "TRUE"));
  if (!c.mlxconfig.empty()) {
    src.Command(device::MlxconfigQueryArgv(kMst), c.mlxconfig);
  }
  Finding f = ProbeHostPrivilegeLevel(src, Bf3Context());
  EXPECT_EQ(f.verdict, c.verdict) << f.reason;
  EXPECT_EQ(f.observed, c.observed);
  EXPECT_THAT(f.reason, HasSubstr(c.reason));
  ExpectSourceFields(f, device::MlxprivhostQueryArgv(kMst));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PrivilegeCrossCheckTest,
    ::testing::Values(
        CrossCase{"AgreeRestricted", "RESTRICTED",
                  MlxconfigWithPrivLevel("LIMITED(1)"), Verdict::kPass,
                  "RESTRICTED",
                  "; corroborated by mlxconfig HOST_PRIV_LEVEL Current "
                  "LIMITED(1)"},
        CrossCase{"AgreePrivileged", "PRIVILEGED",
                  MlxconfigWithPrivLevel("PRIVILEGED(0)"), Verdict::kFail,
                  "PRIVILEGED",
                  "corroborated by mlxconfig HOST_PRIV_LEVEL Current "
                  "PRIVILEGED(0)"},
        CrossCase{"DisagreeRestrictedVsPrivileged", "RESTRICTED",
                  MlxconfigWithPrivLevel("PRIVILEGED(0)"), Verdict::kUnknown,
                  "",
                  "mlxprivhost says RESTRICTED but mlxconfig HOST_PRIV_LEVEL "
                  "Current is PRIVILEGED(0); the two reads of the same NV "
                  "TLV disagree"},
        // The §1.4 trap: a failed read printed PRIVILEGED.
        CrossCase{"DisagreeTrap", "PRIVILEGED",
                  MlxconfigWithPrivLevel("LIMITED(1)"), Verdict::kUnknown, "",
                  "mlxprivhost says PRIVILEGED but mlxconfig HOST_PRIV_LEVEL "
                  "Current is LIMITED(1)"},
        CrossCase{"UnrecognisedValue", "RESTRICTED",
                  MlxconfigWithPrivLevel("WEIRD(7)"), Verdict::kUnknown, "",
                  "mlxconfig HOST_PRIV_LEVEL Current is WEIRD(7)"},
        CrossCase{"RowAbsent", "RESTRICTED",
                  MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                             "ENABLED(0)"),
                  Verdict::kPass, "RESTRICTED",
                  "; not cross-checked: no HOST_PRIV_LEVEL row in output of "
                  "`mlxconfig -d /dev/mst/mt41692_pciconf0 -e q`"},
        CrossCase{"MlxconfigMissing", "RESTRICTED", "", Verdict::kPass,
                  "RESTRICTED",
                  "; not cross-checked: `mlxconfig` is not installed (exit "
                  "127)"},
        CrossCase{"MlxconfigGarbage", "PRIVILEGED", "\x7f" "ELF\n",
                  Verdict::kFail, "PRIVILEGED",
                  "; not cross-checked: could not parse output of "
                  "`mlxconfig"}),
    [](const ::testing::TestParamInfo<CrossCase>& info) {
      return std::string(info.param.name);
    });

// ---- disable_* flags ----

struct FlagCase {
  const char* id;
  int column;  // 0 rshim, 1 tracer, 2 port owner, 3 counter
  const char* row;
};

class FlagProbeTest : public ::testing::TestWithParam<FlagCase> {};

TEST_P(FlagProbeTest, EachFlagReadFromItsOwnLine) {
  std::string v[4] = {"TRUE", "TRUE", "TRUE", "TRUE"};
  v[GetParam().column] = "FALSE";
  FakeDeviceSource src;
  src.Command(device::MlxprivhostQueryArgv(kMst),
              Privhost("RESTRICTED", v[0], v[1], v[2], v[3]));
  ProbeContext ctx = Bf3Context();
  for (const ProbeInfo& p : ProbeCatalogue()) {
    if (p.id.substr(0, 5) != "host." || p.id == "host.privilege_level") {
      continue;
    }
    Finding f = p.function(src, ctx);
    bool target = p.id == GetParam().id;
    EXPECT_EQ(f.verdict, target ? Verdict::kFail : Verdict::kPass) << p.id;
    EXPECT_EQ(f.observed, target ? "FALSE" : "TRUE") << p.id;
    EXPECT_EQ(f.expected, "TRUE");
    ExpectSourceFields(f, device::MlxprivhostQueryArgv(kMst));
  }
  Finding f = FindProbe(GetParam().id)->function(src, ctx);
  EXPECT_EQ(f.reason, std::string(GetParam().row) +
                          " is FALSE for host 0: the restriction is not "
                          "configured");
}

TEST_P(FlagProbeTest, AbsentLineIsUnknown) {
  FakeDeviceSource src;
  src.Command(device::MlxprivhostQueryArgv(kMst),
              "Host configurations\n-------------------\n" +
                  Row("level", "RESTRICTED"));
  Finding f = FindProbe(GetParam().id)->function(src, Bf3Context());
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_TRUE(f.observed.empty());
  EXPECT_EQ(f.reason, "no '" + std::string(GetParam().row) +
                          "' line in output of `mlxprivhost -d "
                          "/dev/mst/mt41692_pciconf0 q`");
}

INSTANTIATE_TEST_SUITE_P(
    Flags, FlagProbeTest,
    ::testing::Values(FlagCase{"host.rshim_disabled", 0, "disable_rshim"},
                      FlagCase{"host.tracer_disabled", 1, "disable_tracer"},
                      FlagCase{"host.port_owner_disabled", 2,
                               "disable_port_owner"},
                      FlagCase{"host.counter_read_disabled", 3,
                               "disable_counter_rd"}),
    [](const ::testing::TestParamInfo<FlagCase>& param_info) {
      return std::string(param_info.param.row);
    });

TEST(FlagProbeTest, RshimPassMentionsPowerCycle) {
  FakeDeviceSource src = ZeroTrustSource();
  Finding f = FindProbe("host.rshim_disabled")->function(src, Bf3Context());
  EXPECT_EQ(f.verdict, Verdict::kPass);
  EXPECT_THAT(f.reason, HasSubstr("takes effect only after a power cycle"));
}

// ---- fail closed: every probe, every failure mode ----

struct FailCase {
  const char* name;
  // Applied to the argv of the probe's tool.
  void (*setup)(FakeDeviceSource&, const device::Argv&);
  std::string (*reason)(const std::string& cmd, const std::string& tool);
};

class FailClosedTest : public ::testing::TestWithParam<FailCase> {};

TEST_P(FailClosedTest, EveryProbeIsUnknownWithReason) {
  size_t covered = 0;
  for (const ProbeInfo& p : ProbeCatalogue()) {
    std::optional<device::Argv> tool = ToolArgv(p.id);
    if (!tool) continue;
    ++covered;
    const device::Argv& argv = *tool;
    std::string cmd;
    for (const std::string& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    FakeDeviceSource src;
    GetParam().setup(src, argv);
    Finding f = p.function(src, Bf3Context());
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << p.id;
    EXPECT_TRUE(f.observed.empty()) << p.id;
    EXPECT_EQ(f.id, p.id);
    EXPECT_FALSE(f.expected.empty());
    ExpectSourceFields(f, argv);
    EXPECT_THAT(f.reason, HasSubstr(GetParam().reason(cmd, argv[0]))) << p.id;
  }
  EXPECT_EQ(covered, kToolProbes);
}

INSTANTIATE_TEST_SUITE_P(
    Modes, FailClosedTest,
    ::testing::Values(
        FailCase{"NotInstalled", [](FakeDeviceSource&, const device::Argv&) {},
                 [](const std::string&, const std::string& tool) {
                   return "`" + tool + "` is not installed (exit 127)";
                 }},
        FailCase{"ExitOne",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   device::CommandResult r;
                   r.exit_code = 1;
                   r.stderr_bytes =
                       ToBytes("-E- Secure host enabled on the device\nmore\n");
                   s.Result(a, r);
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "`" + cmd +
                          "` exited with status 1: -E- Secure host enabled "
                          "on the device";
                 }},
        FailCase{"TimedOut",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   device::CommandResult r;
                   r.exit_code = -1;
                   r.timed_out = true;
                   s.Result(a, r);
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "`" + cmd + "` timed out";
                 }},
        FailCase{"Truncated",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   device::CommandResult r;
                   r.exit_code = 0;
                   r.truncated = true;
                   r.stdout_bytes = ToBytes("Host configurations\n---");
                   s.Result(a, r);
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "output of `" + cmd + "` was truncated at 23 bytes";
                 }},
        FailCase{"Garbage",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   s.Command(a, "\x7f\x45LF garbage\n");
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "could not parse output of `" + cmd + "`: ";
                 }},
        FailCase{"EmptyOutput",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   s.Command(a, "");
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "could not parse output of `" + cmd + "`: ";
                 }},
        FailCase{"RunError",
                 [](FakeDeviceSource& s, const device::Argv& a) {
                   s.RunError(a, UnavailableError("fork failed."));
                 },
                 [](const std::string& cmd, const std::string&) {
                   return "could not run `" + cmd +
                          "`: UNAVAILABLE: fork failed.";
                 }}),
    [](const ::testing::TestParamInfo<FailCase>& param_info) {
      return std::string(param_info.param.name);
    });

TEST(FailClosedTest, NoMstDeviceNamesDiscoveryError) {
  ProbeContext ctx;
  ctx.discovery_status = NotFoundError("no BlueField MST device: x.");
  FakeDeviceSource src = ZeroTrustSource();
  Finding f = ProbeHostPrivilegeLevel(src, ctx);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason,
            "cannot run mlxprivhost: no MST device (no BlueField "
            "MST device: x.)");
  EXPECT_EQ(f.expected, "RESTRICTED");
  Finding m = ProbeDpuOperationMode(src, ctx);
  EXPECT_EQ(m.verdict, Verdict::kUnknown);
  EXPECT_EQ(m.reason,
            "cannot run mlxconfig: no MST device (no BlueField "
            "MST device: x.)");
}

// ---- dpu.operation_mode ----

struct ModeCase {
  const char* name;
  std::string output;
  Verdict verdict;
  const char* observed;
  const char* reason;
};

class OperationModeProbeTest : public ::testing::TestWithParam<ModeCase> {};

TEST_P(OperationModeProbeTest, Judges) {
  FakeDeviceSource src;
  src.Command(device::MlxconfigQueryArgv(kMst), GetParam().output);
  Finding f = ProbeDpuOperationMode(src, Bf3Context());
  EXPECT_EQ(f.id, "dpu.operation_mode");
  EXPECT_EQ(f.verdict, GetParam().verdict) << f.reason;
  EXPECT_EQ(f.observed, GetParam().observed);
  EXPECT_EQ(f.expected, "dpu");
  EXPECT_THAT(f.reason, HasSubstr(GetParam().reason));
  ExpectSourceFields(f, device::MlxconfigQueryArgv(kMst));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, OperationModeProbeTest,
    ::testing::Values(
        ModeCase{"Bf3Dpu",
                 MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                            "ENABLED(0)"),
                 Verdict::kPass, "dpu", "DPU mode (BF3, Current column)"},
        ModeCase{"Bf3Nic",
                 MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                            "DISABLED(1)"),
                 Verdict::kFail, "nic", "NIC mode (BF3, Current column)"},
        ModeCase{"Bf2Nic",
                 MlxconfigE("BlueField2", "EMBEDDED_CPU(1)", "EXT_HOST_PF(1)",
                            "DISABLED(1)"),
                 Verdict::kFail, "nic", "NIC mode (BF2"},
        ModeCase{"Separated",
                 MlxconfigE("BlueField2", "SEPARATED_HOST(0)", "ECPF(0)",
                            "ENABLED(0)"),
                 Verdict::kFail, "separated_host", "separated-host mode"},
        ModeCase{"Bf2Mixed",
                 MlxconfigE("BlueField2", "EMBEDDED_CPU(1)", "EXT_HOST_PF(1)",
                            "ENABLED(0)"),
                 Verdict::kUnknown, "",
                 "operation mode undetermined (BF2): values match neither"},
        ModeCase{"PendingNicAtNextBoot",
                 MlxconfigE("BlueField3", "EMBEDDED_CPU(1)", "ECPF(0)",
                            "ENABLED(0)", "DISABLED(1)"),
                 Verdict::kPass, "dpu",
                 "pending at next boot: INTERNAL_CPU_OFFLOAD_ENGINE "
                 "ENABLED(0) -> DISABLED(1)"},
        ModeCase{"NextBootOnly",
                 "\nDevice #1:\n----------\n\nDevice type:    BlueField3\n"
                 "Name:           n\nDescription:    d\nDevice:         x\n\n"
                 "Configurations:                              Next Boot\n"
                 "         INTERNAL_CPU_MODEL                  "
                 "EMBEDDED_CPU(1)\n",
                 Verdict::kUnknown, "",
                 "output has no Current column (plain `q` prints only Next "
                 "Boot"}),
    [](const ::testing::TestParamInfo<ModeCase>& param_info) {
      return std::string(param_info.param.name);
    });

}  // namespace
}  // namespace dpuaudit::isolation

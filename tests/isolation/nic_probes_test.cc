// nic.fw_security over synthetic `flint q full` outputs and the shared BF2
// sample (catalogue entry from nic_probes.cc, reached through FindProbe).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "testing/fake_device_source.h"
#include "isolation/probe_test_util.h"
#include "isolation/probes.h"
#include "isolation/shared_fixtures.h"

namespace dpuaudit::isolation {
namespace {

using testing::FakeDeviceSource;
using ::testing::HasSubstr;

constexpr char kMst[] = "/dev/mst/mt41686_pciconf0";
constexpr char kCmd[] = "flint -d /dev/mst/mt41686_pciconf0 q full";

// The q-full security fields; an empty argument leaves its line out.
std::string Flint(const std::string& attrs, const std::string& life,
                  const std::string& efuse, const std::string& image) {
  std::string out = "FW Version:            24.35.2000\n";
  if (!attrs.empty()) out += "Security Attributes:   " + attrs + "\n";
  out += "Default Update Method: fw_ctrl\n";
  if (!life.empty()) out += "Life cycle:            " + life + "\n";
  if (!efuse.empty()) out += "EFUSE Security Ver:    " + efuse + "\n";
  if (!image.empty()) out += "Image Security Ver:    " + image + "\n";
  return out;
}

ProbeContext Bf2Context() {
  return probe_testing::ContextWithMst(kMst, bluefield::Generation::kBlueField2);
}

Finding RunFwSecurity(const FakeDeviceSource& src, const ProbeContext& ctx) {
  return probe_testing::RunCatalogueProbe("nic.fw_security", src, ctx);
}

struct Case {
  const char* name;
  std::string output;
  Verdict verdict;
  const char* observed;
  const char* reason;
};

class FwSecurityTest : public ::testing::TestWithParam<Case> {};

TEST_P(FwSecurityTest, Judges) {
  FakeDeviceSource src;
  src.Command(device::FlintQueryArgv(kMst), GetParam().output);
  Finding f = RunFwSecurity(src, Bf2Context());
  EXPECT_EQ(f.id, "nic.fw_security");
  EXPECT_EQ(f.verdict, GetParam().verdict) << f.reason;
  EXPECT_EQ(f.observed, GetParam().observed);
  EXPECT_EQ(f.expected, "production");
  EXPECT_THAT(f.reason, HasSubstr(GetParam().reason));
  EXPECT_EQ(f.source, kCmd);
  EXPECT_EQ(f.evidence_id,
            device::EvidenceIdForCommand(device::FlintQueryArgv(kMst)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, FwSecurityTest,
    ::testing::Values(
        Case{"SecureFwGaSecured", Flint("secure-fw", "GA SECURED", "0", "0"),
             Verdict::kPass, "production",
             "production NIC firmware: Security Attributes 'secure-fw', "
             "Life cycle 'GA SECURED', EFUSE Security Ver 0, Image Security "
             "Ver 0"},
        Case{"SignedFwProductionNewerImage",
             Flint("signed-fw", "PRODUCTION", "2", "3"), Verdict::kPass,
             "production", "production NIC firmware"},
        Case{"DebugTokenIsNotDebug",
             Flint("secure-fw, debug-token, dbg-token", "GA SECURED", "1",
                   "1"),
             Verdict::kPass, "production",
             "accepts debug tokens (debug-token, dbg-token)"},
        Case{"Debug", Flint("secure-fw, debug", "GA SECURED", "0", "0"),
             Verdict::kFail, "debug", "NIC firmware is a debug build"},
        Case{"Dev", Flint("secure-fw, dev", "GA SECURED", "0", "0"),
             Verdict::kFail, "development",
             "NIC firmware is a development build"},
        // Precedence: debug > development > not_secured > rollback.
        Case{"DebugBeatsDevAndRollback",
             Flint("N/A, dev, debug", "RMA", "5", "1"), Verdict::kFail,
             "debug", "debug build"},
        Case{"DevBeatsNotSecured", Flint("secure-fw, dev", "RMA", "0", "0"),
             Verdict::kFail, "development", "development build"},
        Case{"AttributesNA", Flint("N/A", "GA SECURED", "0", "0"),
             Verdict::kFail, "not_secured",
             "neither secure-fw nor signed-fw"},
        Case{"GaNonSecured", Flint("secure-fw", "GA NON SECURED", "0", "0"),
             Verdict::kFail, "not_secured", "life cycle is not secured"},
        Case{"PreProduction", Flint("secure-fw", "PRE PRODUCTION", "0", "0"),
             Verdict::kFail, "not_secured", "Life cycle 'PRE PRODUCTION'"},
        Case{"NotSecuredBeatsRollback", Flint("secure-fw", "RMA", "3", "1"),
             Verdict::kFail, "not_secured", "life cycle is not secured"},
        Case{"Rollback", Flint("secure-fw", "GA SECURED", "3", "2"),
             Verdict::kFail, "rollback",
             "below the fused minimum (anti-rollback)"},
        Case{"PlainQMissesLifeCycle", Flint("secure-fw", "", "", ""),
             Verdict::kUnknown, "",
             "no 'Life cycle' line in output of `flint -d "
             "/dev/mst/mt41686_pciconf0 q full` (it is printed only by `q "
             "full`)"},
        Case{"MissingAttributes", Flint("", "GA SECURED", "0", "0"),
             Verdict::kUnknown, "", "no 'Security Attributes' line"},
        Case{"MissingImageVer", Flint("secure-fw", "GA SECURED", "0", ""),
             Verdict::kUnknown, "", "no 'Image Security Ver' line"},
        Case{"UnknownBase", Flint("weird-fw", "GA SECURED", "0", "0"),
             Verdict::kUnknown, "",
             "unrecognised Security Attributes 'weird-fw'"},
        Case{"UnknownItem", Flint("secure-fw, turbo", "GA SECURED", "0", "0"),
             Verdict::kUnknown, "",
             "unrecognised Security Attributes item 'turbo'"},
        Case{"UnknownLifeCycle", Flint("secure-fw", "BLANK CHIP", "0", "0"),
             Verdict::kUnknown, "", "unrecognised Life cycle 'BLANK CHIP'"},
        Case{"BadEfuseVer", Flint("secure-fw", "GA SECURED", "0x1", "0"),
             Verdict::kUnknown, "",
             "EFUSE Security Ver '0x1' is not a decimal number"},
        Case{"BadImageVer", Flint("secure-fw", "GA SECURED", "0", "N/A"),
             Verdict::kUnknown, "",
             "Image Security Ver 'N/A' is not a decimal number"},
        Case{"Garbage", "\x7f" "ELF\n", Verdict::kUnknown, "",
             "could not parse output of `flint"},
        Case{"Empty", "", Verdict::kUnknown, "",
             "could not parse output of `flint"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.name);
    });

TEST(FwSecurityToolTest, ToolFailuresAreUnknown) {
  const device::Argv argv = device::FlintQueryArgv(kMst);
  struct Failure {
    device::CommandResult result;
    std::string reason;
  };
  device::CommandResult locked;
  locked.exit_code = 1;
  locked.stderr_bytes = ToBytes("-E- HW access is disabled on the device.\n");
  device::CommandResult timeout;
  timeout.exit_code = -1;
  timeout.timed_out = true;
  device::CommandResult truncated;
  truncated.exit_code = 0;
  truncated.truncated = true;
  truncated.stdout_bytes =
      ToBytes(Flint("secure-fw", "GA SECURED", "0", "0"));
  for (const Failure& c :
       {Failure{device::CommandResult{}, "`flint` is not installed (exit 127)"},
        Failure{locked, std::string("`") + kCmd +
                            "` exited with status 1: -E- HW access is "
                            "disabled"},
        Failure{timeout, std::string("`") + kCmd + "` timed out"},
        Failure{truncated, std::string("output of `") + kCmd +
                               "` was truncated"}}) {
    FakeDeviceSource src;
    src.Result(argv, c.result);
    Finding f = RunFwSecurity(src, Bf2Context());
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << c.reason;
    EXPECT_TRUE(f.observed.empty());
    EXPECT_THAT(f.reason, HasSubstr(c.reason));
  }
}

TEST(FwSecurityToolTest, NoMstDevice) {
  ProbeContext ctx;
  ctx.discovery_status = NotFoundError("no BlueField MST device: x.");
  FakeDeviceSource src;
  Finding f = RunFwSecurity(src, ctx);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason,
            "cannot run flint: no MST device (no BlueField MST device: x.)");
  EXPECT_EQ(f.expected, "production");
}

TEST(FwSecurityToolTest, CatalogueEntry) {
  const ProbeInfo* info = FindProbe("nic.fw_security");
  ASSERT_NE(info, nullptr);
  EXPECT_THAT(info->values,
              ::testing::ElementsAre("production", "development", "debug",
                                     "not_secured", "rollback"));
  EXPECT_THAT(info->expected, ::testing::ElementsAre("production"));
}

// Real BF2 sample: secure-fw, GA SECURED, 0/0.
TEST(FwSecuritySharedTest, Bf2FlintSampleIsProduction) {
  SHARED_FIXTURE_OR_SKIP(text, "bmm-flint-q-full-bf2.txt");
  ASSERT_EQ(text_expected["Security Attributes"], "secure-fw");
  ASSERT_EQ(text_expected["Life cycle"], "GA SECURED");
  FakeDeviceSource src;
  src.Command(device::FlintQueryArgv(kMst), text);
  Finding f = RunFwSecurity(src, Bf2Context());
  EXPECT_EQ(f.verdict, Verdict::kPass) << f.reason;
  EXPECT_EQ(f.observed, "production");
  EXPECT_EQ(f.reason,
            "production NIC firmware: Security Attributes 'secure-fw', Life "
            "cycle 'GA SECURED', EFUSE Security Ver 0, Image Security Ver 0");
}

}  // namespace
}  // namespace dpuaudit::isolation

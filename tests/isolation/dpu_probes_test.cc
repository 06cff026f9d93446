// dpu.pending_change over synthetic `mlxconfig -e q` outputs (catalogue
// entry from dpu_probes.cc, reached through FindProbe).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "device/canonical_commands.h"
#include "device/evidence.h"
#include "testing/fake_device_source.h"
#include "isolation/probe_test_util.h"
#include "isolation/probes.h"

namespace dpuaudit::isolation {
namespace {

using testing::FakeDeviceSource;
using ::testing::HasSubstr;

constexpr char kMst[] = "/dev/mst/mt41686_pciconf0";

struct Param {
  std::string name;
  std::string current;
  std::string next;
};

// One `-e` row: name, Default (= Current), Current, Next Boot.
std::string Row(const Param& p) {
  std::string name = p.name;
  name.resize(40, ' ');
  return "         " + name + p.current + "    " + p.current + "    " + p.next +
         "\n";
}

std::string Header(bool with_current) {
  return std::string(
             "\nDevice #1:\n----------\n\nDevice type:    BlueField2\n"
             "Name:           MBF2M516A-EEEO_Ax\nDescription:    d\n"
             "Device:         ") +
         kMst + "\n\n" +
         (with_current
              ? "Configurations:        Default   Current   Next Boot\n"
              : "Configurations:        Next Boot\n");
}

std::string MlxconfigE(const std::vector<Param>& params) {
  std::string out = Header(true);
  for (const Param& p : params) out += Row(p);
  return out;
}

std::vector<Param> DpuMode() {
  return {{"INTERNAL_CPU_MODEL", "EMBEDDED_CPU(1)", "EMBEDDED_CPU(1)"},
          {"INTERNAL_CPU_PAGE_SUPPLIER", "ECPF(0)", "ECPF(0)"},
          {"INTERNAL_CPU_ESWITCH_MANAGER", "ECPF(0)", "ECPF(0)"},
          {"INTERNAL_CPU_IB_VPORT0", "ECPF(0)", "ECPF(0)"},
          {"INTERNAL_CPU_OFFLOAD_ENGINE", "ENABLED(0)", "ENABLED(0)"},
          {"HOST_PRIV_LEVEL", "LIMITED(1)", "LIMITED(1)"}};
}

std::vector<Param> With(std::vector<Param> params, Param p) {
  for (Param& q : params) {
    if (q.name == p.name) {
      q = p;
      return params;
    }
  }
  params.push_back(std::move(p));
  return params;
}

ProbeContext Bf2Context() {
  return probe_testing::ContextWithMst(kMst, bluefield::Generation::kBlueField2);
}

Finding RunPending(const FakeDeviceSource& src, const ProbeContext& ctx) {
  return probe_testing::RunCatalogueProbe("dpu.pending_change", src, ctx);
}

struct Case {
  const char* name;
  std::string output;
  Verdict verdict;
  const char* observed;
  const char* reason;
};

class PendingChangeTest : public ::testing::TestWithParam<Case> {};

TEST_P(PendingChangeTest, Judges) {
  FakeDeviceSource src;
  src.Command(device::MlxconfigQueryArgv(kMst), GetParam().output);
  Finding f = RunPending(src, Bf2Context());
  EXPECT_EQ(f.id, "dpu.pending_change");
  EXPECT_EQ(f.verdict, GetParam().verdict) << f.reason;
  EXPECT_EQ(f.observed, GetParam().observed);
  EXPECT_EQ(f.expected, "none");
  EXPECT_THAT(f.reason, HasSubstr(GetParam().reason));
  EXPECT_EQ(f.source, "mlxconfig -d /dev/mst/mt41686_pciconf0 -e q");
  EXPECT_EQ(f.evidence_id,
            device::EvidenceIdForCommand(device::MlxconfigQueryArgv(kMst)));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, PendingChangeTest,
    ::testing::Values(
        Case{"AllEqual", MlxconfigE(DpuMode()), Verdict::kPass, "none",
             "Next Boot equals Current for all 6 mode and isolation "
             "parameters"},
        Case{"StagedNicMode",
             MlxconfigE(With(DpuMode(), {"INTERNAL_CPU_OFFLOAD_ENGINE",
                                         "ENABLED(0)", "DISABLED(1)"})),
             Verdict::kFail, "pending",
             "staged change applies at the next power cycle: "
             "INTERNAL_CPU_OFFLOAD_ENGINE: ENABLED(0) -> DISABLED(1)"},
        Case{"StagedPrivilegedAndRshim",
             MlxconfigE(With(With(DpuMode(), {"HOST_PRIV_LEVEL", "LIMITED(1)",
                                              "PRIVILEGED(0)"}),
                             {"INTERNAL_CPU_RSHIM", "DISABLED(1)",
                              "ENABLED(0)"})),
             Verdict::kFail, "pending",
             "HOST_PRIV_LEVEL: LIMITED(1) -> PRIVILEGED(0), "
             "INTERNAL_CPU_RSHIM: DISABLED(1) -> ENABLED(0)"},
        Case{"HostDisableRow",
             MlxconfigE(With(DpuMode(),
                             {"HOST_DISABLE_RSHIM", "True(1)", "False(0)"})),
             Verdict::kFail, "pending",
             "HOST_DISABLE_RSHIM: True(1) -> False(0)"},
        Case{"UnwatchedParamIgnored",
             MlxconfigE(With(DpuMode(), {"LINK_TYPE_P1", "ETH(2)", "IB(1)"})),
             Verdict::kPass, "none", "for all 6 mode"},
        // `_INTERNAL_CPU_MODEL` is not the mode row (shared fixture quirk).
        Case{"LookalikeNameIgnored",
             MlxconfigE(With(DpuMode(),
                             {"_INTERNAL_CPU_MODEL", "EMBEDDED_CPU(1)",
                              "SEPARATED_HOST(0)"})),
             Verdict::kPass, "none", "for all 6 mode"},
        Case{"NoCurrentColumn",
             Header(false) + "         INTERNAL_CPU_MODEL   EMBEDDED_CPU(1)\n",
             Verdict::kUnknown, "", "has no Current column (was -e dropped?)"},
        Case{"NoModelRow", MlxconfigE({{"LINK_TYPE_P1", "ETH(2)", "ETH(2)"}}),
             Verdict::kUnknown, "",
             "no INTERNAL_CPU_MODEL row in output of `mlxconfig -d "
             "/dev/mst/mt41686_pciconf0 -e q`"},
        Case{"ShortRow",
             Header(true) + "         INTERNAL_CPU_MODEL   EMBEDDED_CPU(1)\n",
             Verdict::kUnknown, "", "could not parse output of `mlxconfig"},
        Case{"Empty", "", Verdict::kUnknown, "",
             "could not parse output of `mlxconfig"}),
    [](const ::testing::TestParamInfo<Case>& info) {
      return std::string(info.param.name);
    });

TEST(PendingChangeToolTest, ToolFailuresAreUnknown) {
  const device::Argv argv = device::MlxconfigQueryArgv(kMst);
  const std::string cmd = "mlxconfig -d /dev/mst/mt41686_pciconf0 -e q";
  struct Failure {
    device::CommandResult result;
    std::string reason;
  };
  device::CommandResult exit1;
  exit1.exit_code = 1;
  exit1.stderr_bytes = ToBytes("-E- Failed to open device\n");
  device::CommandResult timeout;
  timeout.exit_code = -1;
  timeout.timed_out = true;
  device::CommandResult truncated;
  truncated.exit_code = 0;
  truncated.truncated = true;
  truncated.stdout_bytes = ToBytes(MlxconfigE(DpuMode()));
  for (const Failure& c :
       {Failure{device::CommandResult{},
                "`mlxconfig` is not installed "
                "(exit 127)"},
        Failure{exit1, "`" + cmd + "` exited with status 1: -E- Failed"},
        Failure{timeout, "`" + cmd + "` timed out"},
        Failure{truncated, "output of `" + cmd + "` was truncated"}}) {
    FakeDeviceSource src;
    src.Result(argv, c.result);
    Finding f = RunPending(src, Bf2Context());
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << c.reason;
    EXPECT_TRUE(f.observed.empty());
    EXPECT_THAT(f.reason, HasSubstr(c.reason));
  }
}

TEST(PendingChangeToolTest, NoMstDevice) {
  ProbeContext ctx;
  ctx.discovery_status = NotFoundError("no BlueField MST device: x.");
  FakeDeviceSource src;
  Finding f = RunPending(src, ctx);
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_EQ(f.reason,
            "cannot run mlxconfig: no MST device (no BlueField MST device: "
            "x.)");
  EXPECT_EQ(f.source, "/dev/mst");
}

TEST(PendingChangeToolTest, CatalogueEntry) {
  const ProbeInfo* info = FindProbe("dpu.pending_change");
  ASSERT_NE(info, nullptr);
  EXPECT_THAT(info->values, ::testing::ElementsAre("none", "pending"));
  EXPECT_THAT(info->expected, ::testing::ElementsAre("none"));
}

}  // namespace
}  // namespace dpuaudit::isolation

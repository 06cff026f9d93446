#include "verifier/bmc_crosscheck.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace dpuaudit::verifier {
namespace {

using ::testing::HasSubstr;

Finding Agent(const std::string& id, const std::string& observed,
              Verdict v = Verdict::kPass) {
  Finding f;
  f.id = id;
  f.verdict = v;
  f.observed = observed;
  f.source = "agent source of " + id;
  f.reason = v == Verdict::kUnknown ? "tool missing" : "";
  if (v == Verdict::kUnknown) f.observed.clear();
  return f;
}

std::vector<Finding> ZeroTrustAgent() {
  return {Agent("dpu.operation_mode", "dpu"),   Agent("host.rshim_disabled", "TRUE"),
          Agent("host.privilege_level", "RESTRICTED"), Agent("boot.secure_boot", "enabled"),
          Agent("fw.atf_version", "v2.2(release):4.9.1-21-gfc25b08d9"),
          Agent("fw.uefi_version", "4.9.1-36-g0c3239837a"),
          Agent("fw.bsp_version", "4.9.1.13442"), Agent("fw.nic_version", "32.43.2402")};
}

bmc::BmcEvidence ZeroTrustBmc() {
  bmc::BmcEvidence e;
  e.base_url = "https://192.0.2.10";
  e.system = redfish::System{"MT2334X00001", "BlueField-3", "On"};
  e.oem = redfish::SystemOemNvidia{"DpuMode", "Disabled"};
  e.bios = redfish::Bios{"Restricted", "Embedded", "DpuMode", false};
  e.secure_boot = redfish::SecureBoot{true, "Enabled", "UserMode"};
  e.firmware = {{"DPU_ATF", "v2.2(release):4.9.1-21-gfc25b08d9"},
                {"DPU_UEFI", "4.9.1-36-g0c3239837a"},
                {"DPU_BSP", "4.9.1.13442"},
                {"DPU_NIC", "32.43.2402"}};
  return e;
}

const Finding& ById(const BmcCrossCheck& c, const std::string& id) {
  for (const Finding& f : c.findings) {
    if (f.id == id) return f;
  }
  static Finding none;
  ADD_FAILURE() << "no " << id;
  return none;
}

TEST(BmcCrossCheckTest, AgreeingPathsCorroborateEveryPairedClaim) {
  BmcCrossCheck c = CrossCheckBmc(ZeroTrustAgent(), "MT2334X00001", ZeroTrustBmc());
  ASSERT_EQ(c.findings.size(), BmcCrossCheckIds().size());
  for (size_t i = 0; i < c.findings.size(); ++i) {
    EXPECT_EQ(c.findings[i].id, BmcCrossCheckIds()[i]);
    EXPECT_EQ(c.findings[i].verdict, Verdict::kPass) << c.findings[i].reason;
  }
  EXPECT_TRUE(c.contraindicated.empty());
  EXPECT_EQ(c.tiers.size(), 9u);
  EXPECT_EQ(c.tiers.at("host.rshim_disabled"), Tier::kCorroborated);
  EXPECT_EQ(c.tiers.at("device.identity"), Tier::kCorroborated);
  EXPECT_THAT(ById(c, "bmc.host.rshim_disabled").reason,
              HasSubstr("corroborated by BMC https://192.0.2.10 Systems/Bluefield/Oem/Nvidia "
                        "HostRshim"));
}

TEST(BmcCrossCheckTest, ARestrictedAgentOverAPrivilegedBmcIsContraindicatedNamingBoth) {
  bmc::BmcEvidence e = ZeroTrustBmc();
  e.bios->host_privilege_level = "Privileged";
  e.oem->host_rshim = "Enabled";
  e.oem->mode = "NicMode";
  e.system->serial_number = "MT0000000000";
  BmcCrossCheck c = CrossCheckBmc(ZeroTrustAgent(), "MT2334X00001", e);
  for (const char* id : {"bmc.host.privilege_level", "bmc.host.rshim_disabled",
                         "bmc.dpu.operation_mode", "bmc.serial"}) {
    EXPECT_EQ(ById(c, id).verdict, Verdict::kFail) << id;
    EXPECT_EQ(c.contraindicated.count(id), 1u) << id;
  }
  const Finding& priv = ById(c, "bmc.host.privilege_level");
  EXPECT_EQ(priv.observed, "agent RESTRICTED, BMC PRIVILEGED");
  EXPECT_THAT(priv.reason, HasSubstr("(agent source of host.privilege_level)"));
  EXPECT_THAT(priv.reason, HasSubstr("Systems/Bluefield/Bios HostPrivilegeLevel"));
  EXPECT_EQ(c.tiers.count("host.privilege_level"), 0u);
  EXPECT_EQ(ById(c, "bmc.serial").observed, "agent MT2334X00001, BMC MT0000000000");
}

TEST(BmcCrossCheckTest, AnUnreachableOrSilentBmcIsUnknownNeverPass) {
  bmc::BmcEvidence e;
  e.base_url = "https://192.0.2.10";
  e.errors["/redfish/v1/Systems/Bluefield/Oem/Nvidia"] = "UNAVAILABLE: connection refused";
  BmcCrossCheck c = CrossCheckBmc(ZeroTrustAgent(), "MT2334X00001", e);
  for (const Finding& f : c.findings) {
    EXPECT_EQ(f.verdict, Verdict::kUnknown) << f.id;
    EXPECT_FALSE(f.reason.empty());
  }
  EXPECT_THAT(ById(c, "bmc.host.rshim_disabled").reason,
              HasSubstr("the BMC path is unavailable for host.rshim_disabled: UNAVAILABLE: "
                        "connection refused"));
  EXPECT_THAT(ById(c, "bmc.fw.atf_version").reason,
              HasSubstr("did not report FirmwareInventory/DPU_ATF"));
  EXPECT_TRUE(c.tiers.empty());
}

TEST(BmcCrossCheckTest, AnUnknownAgentFindingCannotBeCorroborated) {
  std::vector<Finding> agent = ZeroTrustAgent();
  agent[1] = Agent("host.rshim_disabled", "", Verdict::kUnknown);
  BmcCrossCheck c = CrossCheckBmc(agent, "", ZeroTrustBmc());
  EXPECT_EQ(ById(c, "bmc.host.rshim_disabled").verdict, Verdict::kUnknown);
  EXPECT_THAT(ById(c, "bmc.host.rshim_disabled").reason, HasSubstr("tool missing"));
  EXPECT_EQ(ById(c, "bmc.serial").verdict, Verdict::kUnknown);
}

TEST(BmcCrossCheckTest, MappingsOfSeparatedHostSetupModeAndMultiHostValues) {
  std::vector<Finding> agent = ZeroTrustAgent();
  agent[0] = Agent("dpu.operation_mode", "separated_host");
  agent[1] = Agent("host.rshim_disabled", "TRUE,FALSE");
  agent[3] = Agent("boot.secure_boot", "setup_mode");
  bmc::BmcEvidence e = ZeroTrustBmc();
  e.bios->internal_cpu_model = "Separated";
  e.secure_boot = redfish::SecureBoot{false, "Disabled", "SetupMode"};
  BmcCrossCheck c = CrossCheckBmc(agent, "MT2334X00001", e);
  EXPECT_EQ(ById(c, "bmc.dpu.operation_mode").verdict, Verdict::kPass);
  EXPECT_EQ(ById(c, "bmc.boot.secure_boot").verdict, Verdict::kPass);
  // One host of two not restricted: the BMC's single TRUE does not agree.
  EXPECT_EQ(ById(c, "bmc.host.rshim_disabled").verdict, Verdict::kFail);
}

TEST(BmcCrossCheckTest, UnexpectedBmcValuesAreUnknownWithTheValue) {
  bmc::BmcEvidence e = ZeroTrustBmc();
  e.oem->host_rshim = "Maybe\x1b[31m";
  BmcCrossCheck c = CrossCheckBmc(ZeroTrustAgent(), "MT2334X00001", e);
  const Finding& f = ById(c, "bmc.host.rshim_disabled");
  EXPECT_EQ(f.verdict, Verdict::kUnknown);
  EXPECT_THAT(f.reason, HasSubstr("HostRshim \"Maybe"));
  EXPECT_TRUE(IsSafe(f));
}

}  // namespace
}  // namespace dpuaudit::verifier

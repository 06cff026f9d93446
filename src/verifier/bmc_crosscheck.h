// The cross-check of the agent's claims against the node's BMC (issue 14
// §5, docs/redfish.md): pure, from the findings the verifier re-derived
// from the agent's evidence and one pull of the BMC's evidence.
//
// Pairings (agent finding <- BMC resource):
//   dpu.operation_mode   <- Oem/Nvidia Mode (NicMode -> nic), Bios
//                           InternalCPUModel (Separated -> separated_host),
//                           else DpuMode -> dpu
//   host.rshim_disabled  <- Oem/Nvidia HostRshim (Disabled -> TRUE,
//                           Enabled -> FALSE)
//   host.privilege_level <- Bios HostPrivilegeLevel (Restricted ->
//                           RESTRICTED, Privileged -> PRIVILEGED)
//   boot.secure_boot     <- SecureBoot (SetupMode -> setup_mode;
//                           SecureBootEnable and CurrentBoot Enabled ->
//                           enabled; else disabled)
//   fw.atf_version, fw.uefi_version, fw.bsp_version, fw.nic_version
//                        <- FirmwareInventory DPU_ATF, DPU_UEFI, DPU_BSP,
//                           DPU_NIC (exact strings)
//   device.identity      <- Systems/Bluefield SerialNumber (the serial only)
// Each pairing gives one finding "bmc.<agent id>" (and "bmc.serial"):
//   pass     both paths read and agree (observed "agree", the value in
//            the reason); the agent's finding is then
//            corroborated (`tiers`);
//   fail     both read and differ: the reason names both values and both
//            sources; `contraindicated` lists the ids (the caller denies
//            whatever the policy, AR4SI 96);
//   unknown  either side unreadable, with the reason (the policy decides).
// The agent's value for a multi-host field ("TRUE,TRUE") agrees only when
// every host's value is the BMC's.
// Does not: fetch anything, or judge whether a value is good (the agent's
// findings and the policy do that); compare fields the BMC does not report.
#ifndef DPUAUDIT_VERIFIER_BMC_CROSSCHECK_H_
#define DPUAUDIT_VERIFIER_BMC_CROSSCHECK_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "bmc/collect.h"
#include "common/finding.h"
#include "verifier/policy.h"

namespace dpuaudit::verifier {

struct BmcCrossCheck {
  std::vector<Finding> findings;         // one per pairing, in the order above
  std::map<std::string, Tier> tiers;     // agent finding id -> corroborated
  std::set<std::string> contraindicated;  // bmc.* ids whose paths diverge
};

// The pairing ids, in order ("bmc.dpu.operation_mode", ..., "bmc.serial").
const std::vector<std::string>& BmcCrossCheckIds();

BmcCrossCheck CrossCheckBmc(const std::vector<Finding>& agent_findings,
                            const std::string& agent_serial,
                            const bmc::BmcEvidence& bmc);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_BMC_CROSSCHECK_H_

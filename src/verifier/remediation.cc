#include "verifier/remediation.h"

#include <algorithm>

namespace dpuaudit::verifier {
namespace {

// Host restriction (NVIDIA BlueField DPU documentation, "Restricting
// Host Privileges", mlxprivhost). The RShim restriction takes effect only
// after a power cycle of host and DPU.
#define DPA_PRIVHOST                                                           \
  "On the DPU Arm: mlxprivhost -d /dev/mst/<mst device> r --disable_rshim "    \
  "--disable_tracer --disable_counter_rd --disable_port_owner; then power "    \
  "cycle the host and the DPU (the RShim restriction applies only after it); " \
  "verify with mlxprivhost -d /dev/mst/<mst device> q."

// Reference values (README "Gating a fleet upgrade").
#define DPA_REFVALS                                                            \
  "pending: promote the release once canaries are clean (dpuaudit refvals "    \
  "promote RELEASE --by WHO --reason WHY); unmatched, expired or revoked: "    \
  "install the approved release (bfb-install --bfb <approved.bfb> --rshim "    \
  "<rshim>), or, after checking the new release is genuine NVIDIA firmware, "  \
  "stage its reference values (dpuaudit refvals import-bfb FILE --state "      \
  "pending, or refvals import FILE.json) and promote them; obsolete: upgrade " \
  "the node; mixed: re-install one whole release."

#define DPA_COMPROMISE                                                         \
  "Treat as a possible compromise: keep the node out of the tenant pool, "     \
  "preserve its report and EAR (dpuaudit result show), and investigate "       \
  "before re-admitting it."

const std::vector<RemediationEntry>* BuildTable() {
  return new std::vector<RemediationEntry>{
      {"host.privilege_level", DPA_PRIVHOST},
      {"host.rshim_disabled", DPA_PRIVHOST},
      {"host.tracer_disabled", DPA_PRIVHOST},
      {"host.counter_read_disabled", DPA_PRIVHOST},
      {"host.port_owner_disabled", DPA_PRIVHOST},
      {"dpu.operation_mode",
       "Set DPU mode: through the BMC, POST "
       "/redfish/v1/Systems/Bluefield/Oem/Nvidia/Actions/Mode.Set with "
       "{\"Mode\": \"DpuMode\"}; or on the DPU Arm, BlueField-3: mlxconfig -d "
       "/dev/mst/<mst device> s INTERNAL_CPU_OFFLOAD_ENGINE=0, BlueField-2 or "
       "separated host: mlxconfig -d /dev/mst/<mst device> s "
       "INTERNAL_CPU_MODEL=1 INTERNAL_CPU_PAGE_SUPPLIER=0 "
       "INTERNAL_CPU_ESWITCH_MANAGER=0 INTERNAL_CPU_IB_VPORT0=0 "
       "INTERNAL_CPU_OFFLOAD_ENGINE=0. Then AC power cycle the server (a warm "
       "reboot does not apply it) and check mlxconfig -d /dev/mst/<mst "
       "device> -e q shows the change in the Current column."},
      {"dpu.pending_change",
       "A mode or isolation change is staged (mlxconfig Next Boot differs "
       "from Current): if it is intended, AC power cycle the server to apply "
       "it (a warm reboot does not); if not, undo it with mlxconfig -d "
       "/dev/mst/<mst device> s <PARAM>=<Current value> for each staged "
       "parameter the reason names, and re-check with -e q."},
      {"boot.arm_lifecycle",
       "The Arm lifecycle state is fused: a development, non-secured or RMA "
       "device cannot be brought to GA Secured in the field. Replace the DPU "
       "or return it to NVIDIA (RMA); do not admit it to tenant work."},
      {"boot.secure_boot",
       "Enable UEFI secure boot: re-install a production-signed BFB "
       "(bfb-install --bfb <file.bfb> --rshim <rshim>, from the BMC or the "
       "host), enable Secure Boot in the DPU UEFI setup with the NVIDIA "
       "production keys enrolled (not setup mode), and reboot the DPU."},
      {"boot.production_keys",
       "Development keys or secure boot disabled: re-install a "
       "production-signed BFB (bfb-install --bfb <file.bfb> --rshim "
       "<rshim>) and enroll the NVIDIA production UEFI keys; a device fused "
       "for development keys cannot be fixed in the field: replace or RMA "
       "it."},
      {"os.kernel_lockdown",
       "Boot the DPU OS with kernel lockdown: add lockdown=integrity (or "
       "confidentiality) to the kernel command line (the BFB's bf.cfg or the "
       "GRUB configuration), or keep UEFI secure boot on so the kernel locks "
       "down itself; reboot and check /sys/kernel/security/lockdown."},
      {"nic.fw_security",
       "Install production-signed NIC firmware: the firmware in the approved "
       "BFB (bfb-install --bfb <file.bfb> --rshim <rshim>) or mlxfwmanager -d "
       "/dev/mst/<mst device> -u -i <signed image>; debug, development or "
       "unsecured firmware on a tenant node is a possible compromise: "
       "investigate its origin. Then power cycle the server."},
      {"fw.atf_build",
       "A debug ATF build is installed: re-install the approved release BFB "
       "(bfb-install --bfb <file.bfb> --rshim <rshim>), whose ATF is a "
       "release build."},
      {"fw.atf_version",
       "Install the approved BlueField release (bfb-install --bfb "
       "<file.bfb> --rshim <rshim>), or, if this version is an approved "
       "upgrade, add it to the policy's allow-list or minimum."},
      {"fw.uefi_version",
       "Install the approved BlueField release (bfb-install --bfb "
       "<file.bfb> --rshim <rshim>), or, if this version is an approved "
       "upgrade, add it to the policy's allow-list or minimum."},
      {"fw.bsp_version",
       "Install the approved BlueField release (bfb-install --bfb "
       "<file.bfb> --rshim <rshim>), or, if this version is an approved "
       "upgrade, add it to the policy's allow-list or minimum."},
      {"fw.os_release",
       "Install the approved DPU OS image (bfb-install --bfb <file.bfb> "
       "--rshim <rshim>), or add this release to the policy's allow-list "
       "once it is approved."},
      {"fw.nic_version",
       "Upgrade the NIC firmware to the approved release (the firmware in "
       "the approved BFB, or mlxfwmanager -d /dev/mst/<mst device> -u -i "
       "<image>), then power cycle the server so it runs."},
      {"fw.nic_version_consistent",
       "The running and flashed NIC firmware differ: power cycle the server "
       "so the flashed image runs, or re-flash the approved image "
       "(mlxfwmanager -d /dev/mst/<mst device> -u -i <image>)."},
      {"fw.nic_staged",
       "A NIC firmware image is staged for the next reset: if it is the "
       "approved release, power cycle the server to apply it; if not, "
       "re-flash the approved image before the next reset."},
      {"boot.stream_integrity",
       "The primary boot partition's boot stream is corrupt: re-install the "
       "approved BFB (bfb-install --bfb <file.bfb> --rshim <rshim>) and check "
       "mlxbf-bootctl shows the expected primary partition."},
      {"refval.arm_firmware", DPA_REFVALS},
      {"refval.os_release", DPA_REFVALS},
      {"refval.nic_firmware", DPA_REFVALS},
      {"refval.boot_stream", DPA_REFVALS},
      {"refval.os_boot",
       "The OS boot artefacts (kernel, initrd, GRUB) match no approved "
       "reference values: re-install the approved OS image, or, after "
       "checking the new image is genuine, stage and promote its values "
       "(dpuaudit refvals import FILE.json, dpuaudit refvals promote "
       "RELEASE)."},
      {"refval.upgrade_path",
       "This release is not an allowed upgrade from the node's previous "
       "one (a downgrade or an undeclared path): re-install the approved "
       "release, or declare the path in its reference values (refvals "
       "import-bfb --upgrade-from PREVIOUS) after review."},
      {"tpm.ak_bound",
       "The report's TPM attestation key is not the one bound at "
       "enrollment, or the node has no TPM binding: " DPA_COMPROMISE
       " A node whose TPM was legitimately replaced is revoked (dpuaudit "
       "nodes revoke) and re-enrolled with dpuaudit-agent enroll --tpm."},
      {"tpm.signature", "The TPM quote signature does not verify. " DPA_COMPROMISE},
      {"tpm.attest_type", "The TPM evidence is not a quote. " DPA_COMPROMISE},
      {"tpm.qualifying_data",
       "The TPM quote is not bound to this challenge and report (a replay "
       "or a report assembled elsewhere). " DPA_COMPROMISE},
      {"tpm.pcr_selection",
       "The quote does not cover the PCRs the policy asks for: update the "
       "agent (it quotes the selection sent with each challenge); if it is "
       "current, " DPA_COMPROMISE},
      {"tpm.pcr_digest",
       "The quoted PCR values do not match the quote's digest. " DPA_COMPROMISE},
      {"tpm.replay",
       "The event log does not replay to the quoted PCRs (an edited or "
       "partial log). Check the agent reads the right log (dpuaudit-agent "
       "attest --eventlog, dpuaudit eventlog FILE); otherwise " DPA_COMPROMISE},
      {"tpm.reference_values", DPA_REFVALS},
      {"tpm.ek_certificate",
       "The TPM's EK has no certificate chaining to a trusted manufacturer "
       "CA: add the TPM vendor's CA to dpuaudit-verifier serve --ek-ca-dir, "
       "or accept the lower tier knowingly (policy tpm.allow_uncertified_ek)."},
      {"tpm.secure_boot",
       "The TPM event log shows secure boot off: enable UEFI secure boot "
       "(re-install a production-signed BFB with bfb-install --bfb <file.bfb> "
       "--rshim <rshim>, Secure Boot on in UEFI setup) and reboot the DPU."},
      {"bmc.dpu.operation_mode",
       "The agent and the BMC disagree on the operation mode. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID; if the BMC is stale or "
       "unreachable, fix the BMC link (serve --bmc-config)."},
      {"bmc.host.rshim_disabled",
       "The agent and the BMC disagree on the host RShim restriction. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID."},
      {"bmc.host.privilege_level",
       "The agent and the BMC disagree on the host privilege level. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID."},
      {"bmc.boot.secure_boot",
       "The agent and the BMC disagree on secure boot. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID."},
      {"bmc.fw.atf_version",
       "The agent and the BMC report different ATF versions. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID (a BMC inventory lagging an "
       "upgrade clears after the next reboot)."},
      {"bmc.fw.uefi_version",
       "The agent and the BMC report different UEFI versions. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID (a BMC inventory lagging an "
       "upgrade clears after the next reboot)."},
      {"bmc.fw.bsp_version",
       "The agent and the BMC report different BSP versions. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID (a BMC inventory lagging an "
       "upgrade clears after the next reboot)."},
      {"bmc.fw.nic_version",
       "The agent and the BMC report different NIC firmware. " DPA_COMPROMISE
       " Check dpuaudit bmc status --node ID (a BMC inventory lagging an "
       "upgrade clears after the next reboot)."},
      {"bmc.serial",
       "The report's device serial is not the one the node's BMC reports: "
       "the agent runs on another DPU than the BMC manages, or the BMC "
       "configuration names the wrong BMC. " DPA_COMPROMISE
       " Check serve --bmc-config and dpuaudit bmc status --node ID."},
      {"irot.measurements",
       "The IRoT's SPDM measurements changed from the baseline: if a "
       "reviewed firmware update explains it, approve the new baseline "
       "(dpuaudit bmc approve --node ID --target irot --by WHO --reason "
       "WHY); a rollback or unverified evidence is not approvable: " DPA_COMPROMISE},
      {"erot.measurements",
       "The ERoT's SPDM measurements changed from the baseline: if a "
       "reviewed BMC or ERoT firmware update explains it, approve it "
       "(dpuaudit bmc approve --node ID --target erot --by WHO --reason "
       "WHY); a rollback or unverified evidence is not approvable: " DPA_COMPROMISE},
      {"irot.identity",
       "Another IRoT DeviceID answers for this node than the one bound. "
       "If the DPU was replaced on purpose, re-bind it (dpuaudit bmc rebind "
       "--node ID --by WHO --reason WHY); otherwise " DPA_COMPROMISE},
      {"irot.reference_values", DPA_REFVALS},
      {"erot.reference_values", DPA_REFVALS},
      // Reasons the appraisal builds without a policy rule.
      {"device.identity",
       "The report names another DPU than its evidence or its enrollment "
       "(serial pinned at enrollment). " DPA_COMPROMISE
       " A legitimately replaced DPU is revoked (dpuaudit nodes revoke) and "
       "re-enrolled with a new token (dpuaudit tokens issue)."},
      {"agent.consistency",
       "The agent's own findings differ from the verifier's re-derivation "
       "(the verifier's are used): upgrade the agent to the verifier's "
       "release; if it is current, " DPA_COMPROMISE},
      {"require.bmc",
       "The policy requires the BMC path: configure the node's BMC "
       "(dpuaudit-verifier serve --bmc-config) and make sure the verifier "
       "can reach it (dpuaudit bmc status --node ID shows the last pull)."},
      {"require.irot",
       "The policy requires verified IRoT measurements: configure the DICE "
       "anchor and the node's BMC (serve --bmc-config) and check dpuaudit "
       "bmc status --node ID; evidence that does not verify is a possible "
       "compromise."},
      {"require.erot",
       "The policy requires verified ERoT measurements: configure the DICE "
       "anchor and the node's BMC (serve --bmc-config) and check dpuaudit "
       "bmc status --node ID; evidence that does not verify is a possible "
       "compromise."},
      {"verifier.reappraisal",
       "The node's admitted report could not stand after a reference-value "
       "or policy change: let the agent attest again (dpuaudit-agent run "
       "does so on its interval) and fix what the new result names."},
      {"require.tpm",
       "The policy requires TPM evidence: enroll the node with its TPM "
       "(dpuaudit-agent enroll --tpm device:/dev/tpmrm0) and attest with "
       "--tpm."},
  };
}

#undef DPA_PRIVHOST
#undef DPA_REFVALS
#undef DPA_COMPROMISE

constexpr std::string_view kFallback =
    "No built-in remediation for this rule: inspect the reason and the "
    "node's evidence (dpuaudit result show, dpuaudit report show).";

}  // namespace

const std::vector<RemediationEntry>& RemediationTable() {
  static const std::vector<RemediationEntry>* const kTable = BuildTable();
  return *kTable;
}

bool HasBuiltinRemediation(std::string_view rule_id) {
  const auto& t = RemediationTable();
  return std::any_of(t.begin(), t.end(),
                     [&](const RemediationEntry& e) { return e.rule_id == rule_id; });
}

std::string_view BuiltinRemediation(std::string_view rule_id) {
  for (const RemediationEntry& e : RemediationTable()) {
    if (e.rule_id == rule_id) return e.text;
  }
  return kFallback;
}

void SetActionAndRemediation(report::DecisionReason& r, RuleAction action,
                             std::string_view override_text) {
  r.action = std::string(RuleActionName(action));
  if (r.verdict == Verdict::kPass) {
    r.remediation.clear();
    return;
  }
  r.remediation =
      std::string(override_text.empty() ? BuiltinRemediation(r.rule_id) : override_text);
}

}  // namespace dpuaudit::verifier

#include "verifier/appraise.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "attest/quote.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "isolation/device_facts.h"
#include "verifier/identity_check.h"
#include "verifier/refvals/appraisal.h"
#include "verifier/tpm_appraisal.h"

namespace dpuaudit::verifier {
namespace {

report::ClaimTier ToClaimTier(Tier t) {
  switch (t) {
    case Tier::kHardwareRooted:
      return report::ClaimTier::kHardwareRooted;
    case Tier::kCorroborated:
      return report::ClaimTier::kCorroborated;
    case Tier::kSelfReported:
      return report::ClaimTier::kSelfReported;
  }
  return report::ClaimTier::kSelfReported;
}

std::string Describe(const Finding& f) {
  std::string s(VerdictName(f.verdict));
  if (!f.observed.empty()) s += " (" + f.observed + ")";
  return s;
}

std::string Or(const std::string& s, const std::string& fallback) {
  return s.empty() ? fallback : s;
}

// What the reference-value appraisal needs, all re-derived from evidence
// except the digests, which come from the (parsed, well-formed) boot_chain.
FirmwareFacts BuildFacts(const isolation::DeviceFacts& device,
                         const firmware::BootChainInfo* boot) {
  FirmwareFacts facts;
  const isolation::DeviceIdentity& id = device.identity;
  const firmware::FirmwareInfo& fw = device.firmware;
  const std::string& primary = device.primary;
  facts.model = CanonicalModel(id.model).value_or("");
  facts.psid = fw.psid.empty() ? id.psid : fw.psid;
  if (fw.bfver_status.ok()) {
    facts.atf = fw.bfver.atf_version;
    facts.uefi = fw.bfver.uefi_version;
    facts.bsp = fw.bfver.bsp_version;
    facts.os_release = fw.bfver.os_release;
  } else {
    facts.arm_error = fw.bfver_status.message();
  }
  facts.arm_source = fw.bfver_source;
  facts.nic_source = fw.nic_fw_source;
  if (fw.nic_fw_status.ok()) {
    facts.nic_fw = fw.nic_fw_version;
  } else {
    facts.nic_error = fw.nic_fw_status.message();
  }
  facts.boot_stream_source =
      primary.empty() ? "boot partitions" : "boot partition " + primary;
  if (boot == nullptr) {
    facts.boot_stream_error = "the report carries no boot_chain measurement";
    facts.os_error = facts.boot_stream_error;
  } else {
    const firmware::PartitionMeasurement* m = nullptr;
    for (const auto& p : boot->partitions.partitions) {
      if (p.path == primary) m = &p;
    }
    if (primary.empty()) {
      facts.boot_stream_error = "the primary boot partition is unknown";
    } else if (m == nullptr) {
      facts.boot_stream_error = "the primary " + primary + " was not measured";
    } else if (!m->status.ok() || !m->layout) {
      facts.boot_stream_error = primary + ": " + m->status.message();
    } else {
      std::vector<FirmwareFacts::Image> images;
      for (const auto& img : m->layout->images) {
        images.push_back({img.name, img.sha384, img.offset});
      }
      facts.boot_stream = std::move(images);
    }
    std::vector<FirmwareFacts::Artefact> artefacts;
    for (const auto& a : boot->os.artefacts) {
      if (a.status.ok()) artefacts.push_back({a.role, a.path, a.sha384});
    }
    if (artefacts.empty()) {
      facts.os_error = "no OS boot artefact was measured";
    } else {
      facts.os_artefacts = std::move(artefacts);
    }
  }
  MakeSafe(facts);
  return facts;
}

// AR4SI "executables" from the reference-value findings (not upgrade_path):
// unset when none could be appraised.
std::optional<int> ExecutablesClaim(const std::vector<Finding>& ref_findings) {
  std::optional<int> worst;
  for (const Finding& f : ref_findings) {
    if (f.id == "refval.upgrade_path" || f.verdict == Verdict::kUnknown)
      continue;
    int v = f.observed == "active"     ? report::kAr4siAffirming
            : f.observed == "obsolete" ? report::kAr4siWarning
            : f.observed == "revoked" || f.observed == "mixed"
                ? report::kAr4siContraindicated
                : report::kAr4siUnrecognised;  // pending, expired, unmatched
    worst = worst ? std::max(*worst, v) : v;
  }
  return worst;
}

// The agent's advisory findings (and its boot-chain primary) against the
// verifier's re-derivation: one agent.consistency reason per difference.
std::vector<report::DecisionReason> ConsistencyReasons(
    const report::ReportClaims& claims, const firmware::BootChainInfo* boot,
    const isolation::DeviceFacts& facts) {
  std::vector<report::DecisionReason> consistency;
  const std::string& primary = facts.primary;
  if (boot != nullptr && boot->partitions.primary != primary) {
    consistency.push_back(
        {"agent.consistency", Verdict::kFail,
         "verifier: primary " + Or(primary, "unknown"),
         "agent: primary " + Or(boot->partitions.primary, "unknown"),
         "mlxbf-bootctl",
         "the boot_chain claims a different primary boot partition than the "
         "mlxbf-bootctl evidence shows; the evidence is used",
         report::ClaimTier::kSelfReported});
  }
  std::map<std::string, const Finding*> agent;
  for (const auto& f : claims.findings) agent[f.id] = &f;
  for (const auto& f : facts.findings) {
    auto it = agent.find(f.id);
    if (it != agent.end() && it->second->verdict == f.verdict &&
        it->second->observed == f.observed) {
      continue;
    }
    consistency.push_back(
        {"agent.consistency", Verdict::kFail, "verifier: " + Describe(f),
         it == agent.end() ? "agent: (no finding)"
                           : "agent: " + Describe(*it->second),
         f.source,
         "the agent's advisory finding for " + f.id +
             " differs from the verifier's re-derivation from the raw "
             "evidence; "
             "the verifier's is used",
         report::ClaimTier::kSelfReported});
  }
  return consistency;
}

}  // namespace

StatusOr<Appraisal> Appraise(const AppraisalInput& in) {
  const report::ReportClaims& claims = in.report->claims;
  const Policy& policy = *in.policy;
  const RefIndex& refs = *in.refs;
  const int64_t now = in.now;
  // Re-derive every finding from the raw evidence with the agent's own
  // collection; the report's boot chain stands in for the streamed parts.
  DPA_ASSIGN_OR_RETURN(auto evidence_source,
                       device::NewEvidenceDeviceSource(claims.evidence));
  device::MemoizingDeviceSource evidence(*evidence_source);
  isolation::DeviceFacts device =
      isolation::CollectDeviceFacts(evidence, in.boot_chain);
  std::vector<Finding> findings = device.findings;
  // The device block must name the DPU the evidence shows, and the serial
  // pinned at enrollment: a report about another DPU is contraindicated
  // whatever the policy says (AR4SI instance_identity 96). The derived
  // block is made safe as the agent makes its own (CollectDeviceFacts), so
  // hostile tool output compares equal on both sides.
  const isolation::DeviceIdentity& d = device.device;
  std::vector<report::DecisionReason> identity = CheckReportedIdentity(
      claims.device,
      report::DeviceInfo{d.model, d.serial, d.part_number, d.psid, d.base_mac,
                         d.fw_version},
      in.node->device_serial);
  // Which boot partition is primary comes from the mlxbf-bootctl evidence,
  // not from the agent's claim; a disagreement is reported. The agent's own
  // verdicts are advisory: a disagreement is itself reported.
  std::vector<report::DecisionReason> consistency =
      ConsistencyReasons(claims, in.boot_chain, device);
  const int mismatches = static_cast<int>(consistency.size());

  // Reference values: the verifier's own appraisal (the agent has none).
  FirmwareFacts facts = BuildFacts(device, in.boot_chain);
  std::vector<Finding> ref_findings = AppraiseReferenceValues(facts, refs, now);
  const std::string arm_release = MatchedArmRelease(facts, refs, now);
  ref_findings.push_back(
      AppraiseUpgradePath(in.previous_release, arm_release, refs));
  std::optional<int> executables = ExecutablesClaim(ref_findings);
  for (Finding& f : ref_findings) findings.push_back(std::move(f));

  // TPM evidence (issue 5): the eight ordered steps, for nodes bound to a
  // TPM, reports that carry a quote, or every node under applies_to
  // "all-nodes".
  const std::string policy_id =
      "policy:" + policy.name() + "@sha256:" + policy.sha256();
  EvaluationContext eval;
  std::optional<report::Submod> tpm_submod;
  if (in.tpm_binding != nullptr || in.tpm_claims != nullptr ||
      policy.tpm().all_nodes) {
    DPA_ASSIGN_OR_RETURN(Bytes nonce_bytes, Base64UrlDecode(claims.nonce));
    TpmAppraisalInput tin;
    tin.binding = in.tpm_binding;
    tin.claims = in.tpm_claims;
    tin.expected_qualifying_data = attest::QualifyingData(
        nonce_bytes, AsBytes(report::SerializeClaimsWithoutTpm(claims)));
    tin.policy = &policy.tpm();
    tin.refs = &refs;
    tin.model = facts.model;
    tin.psid = facts.psid;
    tin.bluefield = !facts.model.empty();
    tin.now = now;
    TpmAppraisal tpm = AppraiseTpm(tin);
    eval.tiers = std::move(tpm.tiers);
    for (Finding& f : tpm.findings) findings.push_back(std::move(f));
    tpm.submod.appraisal_policy_id = policy_id;
    tpm_submod = std::move(tpm.submod);
  } else {
    for (const RuleSpec& spec : TpmRuleSpecs())
      eval.not_applicable.insert(spec.id);
  }

  std::vector<report::DecisionReason> reasons = identity;
  PolicyOutcome policy_outcome = policy.Evaluate(findings, eval);
  bool any_warn = false;
  for (const auto& r : policy_outcome.results) {
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kWarn)
      any_warn = true;
    reasons.push_back({r.rule_id, r.verdict, r.expected, r.observed, r.source,
                       r.reason, ToClaimTier(r.tier)});
  }
  for (auto& r : consistency) reasons.push_back(std::move(r));
  // Every reason leaves here for the EAR, the store and the response: its
  // text (evidence-derived through the findings, the facts, the TPM claims
  // and the agent's own findings) is made safe once more, whatever path
  // built it.
  for (auto& r : reasons) report::MakeSafe(r);

  report::AttestationResult ar;
  ar.iat = now;
  ar.exp = now + policy.decision_ttl_seconds();
  ar.nonce = claims.nonce;
  ar.verifier_id = in.verifier_id;

  report::Submod agent_submod;
  agent_submod.trust_vector.instance_identity =
      identity.empty() ? report::kAr4siAffirming : report::kAr4siContraindicated;
  agent_submod.trust_vector.configuration =
      mismatches == 0 ? report::kAr4siAffirming : report::kAr4siWarning;
  // AR4SI executables from the reference-value appraisal: 2 all approved,
  // 32 approved but obsolete, 33 unrecognised/not yet approved, 96 revoked.
  agent_submod.trust_vector.executables = executables;
  agent_submod.status = report::StatusOfVector(agent_submod.trust_vector);
  agent_submod.appraisal_policy_id = policy_id;
  ar.submods[std::string(report::kSubmodArmAgent)] = agent_submod;

  report::Submod posture;
  posture.trust_vector.configuration =
      policy_outcome.decision == Decision::kDeny ? report::kAr4siContraindicated
      : any_warn                                 ? report::kAr4siWarning
                                                 : report::kAr4siAffirming;
  posture.status = report::StatusOfVector(posture.trust_vector);
  posture.appraisal_policy_id = policy_id;
  ar.submods[std::string(report::kSubmodPosture)] = posture;
  if (tpm_submod) ar.submods[std::string(report::kSubmodTpm)] = *tpm_submod;

  bool contraindicated = false;
  for (const auto& [name, s] : ar.submods) {
    contraindicated =
        contraindicated || s.status == report::ArStatus::kContraindicated;
  }
  ar.dpuaudit.node_id = in.node->node_id;
  ar.dpuaudit.decision =
      policy_outcome.decision == Decision::kAdmit && !contraindicated
          ? report::Decision::kAdmit
          : report::Decision::kDeny;
  ar.dpuaudit.reasons = std::move(reasons);
  ar.dpuaudit.report_sha256 = in.report->jws_sha256;
  ar.dpuaudit.policy = {policy.name(), policy.sha256()};
  return Appraisal{std::move(ar), arm_release, in.previous_release};
}

}  // namespace dpuaudit::verifier

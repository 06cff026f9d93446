#include "verifier/appraise.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include "attest/quote.h"
#include "device/evidence.h"
#include "device/memoizing_source.h"
#include "isolation/device_facts.h"
#include "verifier/bmc_crosscheck.h"
#include "verifier/derivation_cache.h"
#include "verifier/identity_check.h"
#include "verifier/refvals/appraisal.h"
#include "verifier/remediation.h"
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


// The BMC path of one report: the agent's re-derived findings against the
// node's latest BMC pull, and that pull's SPDM verdicts.
struct BmcPath {
  std::vector<Finding> findings;
  std::map<std::string, Tier> tiers;       // finding id -> tier reached
  std::set<std::string> contraindicated;   // finding ids
  std::map<std::string, report::Submod> submods;
  std::set<std::string> verified;          // paths whose evidence verified
  std::map<std::string, std::pair<std::string, std::string>> provenance;  // id -> path, key
  std::string why_unverified;              // for "require", when the pull is missing
};

int Ar4si(const Finding& f, int on_fail) {
  return f.verdict == Verdict::kPass ? report::kAr4siAffirming
         : f.verdict == Verdict::kFail ? on_fail
                                       : report::kAr4siUnrecognised;
}

BmcPath AppraiseBmcPath(const AppraisalInput& in, const std::vector<Finding>& agent,
                        const std::string& agent_serial, const std::string& model,
                        const std::string& psid, std::set<std::string>* matched) {
  BmcPath out;
  std::vector<std::string> ids = BmcCrossCheckIds();
  for (const std::string& id : SpdmFindingIds()) ids.push_back(id);
  ids.push_back("irot.reference_values");
  ids.push_back("erot.reference_values");
  if (!in.bmc_configured) {
    for (const std::string& id : ids) {
      out.findings.push_back(UnknownFinding(
          id, "BMC path",
          "no BMC is configured for node " + in.node->node_id +
              " (dpuaudit-verifier serve --bmc-config), so nothing corroborates the agent"));
    }
    out.why_unverified = "no BMC is configured for this node";
    return out;
  }
  const BmcVerdict* v = in.bmc;
  std::string stale;
  if (v == nullptr) {
    stale = "the verifier has not pulled this node's BMC yet";
  } else if (in.now - v->pulled_at > in.bmc_max_age_seconds) {
    stale = "the last BMC pull is " + std::to_string(in.now - v->pulled_at) +
            " s old, over the " + std::to_string(in.bmc_max_age_seconds) + " s limit";
  }
  if (!stale.empty()) {
    for (const std::string& id : ids) {
      out.findings.push_back(UnknownFinding(id, "BMC path", stale));
    }
    out.why_unverified = stale;
    report::Submod bmc;
    bmc.trust_vector.configuration = report::kAr4siUnrecognised;
    bmc.status = report::StatusOfVector(bmc.trust_vector);
    out.submods[std::string(report::kSubmodBmc)] = bmc;
    return out;
  }
  const std::string bmc_key = in.bmc_key_sha256.empty()
                                  ? "BMC TLS certificate (CA mode) of " + v->evidence.base_url
                                  : "BMC TLS key " + in.bmc_key_sha256.substr(0, 16) + "…";
  // Posture: the cross-check.
  BmcCrossCheck cross = CrossCheckBmc(agent, agent_serial, v->evidence);
  int worst = report::kAr4siAffirming;
  std::optional<int> identity;
  for (Finding& f : cross.findings) {
    const int value = Ar4si(f, report::kAr4siContraindicated);
    if (f.id == "bmc.serial") {
      identity = value;
    } else {
      worst = std::max(worst, value);
    }
    out.provenance[f.id] = {"bmc", bmc_key};
    out.tiers[f.id] = Tier::kCorroborated;
    out.findings.push_back(std::move(f));
  }
  // A BMC that answers for another device than the one bound corroborates
  // nothing (the decision is deny anyway: irot.identity is contraindicated).
  if (!v->identity_contraindicated) {
    for (auto& [id, tier] : cross.tiers) {
      out.tiers[id] = tier;
      out.provenance[id] = {"agent+bmc", bmc_key};
    }
  }
  for (const std::string& id : cross.contraindicated) out.contraindicated.insert(id);
  report::Submod bmc;
  bmc.trust_vector.configuration = worst;
  bmc.trust_vector.instance_identity = identity;
  bmc.status = report::StatusOfVector(bmc.trust_vector);
  out.submods[std::string(report::kSubmodBmc)] = bmc;
  if (v->evidence.errors.count("") == 0 && v->evidence.system) out.verified.insert("bmc");

  // SPDM targets: hardware-rooted when verified.
  for (const SpdmTargetVerdict& t : v->targets) {
    Finding f = t.finding;
    const std::string key = t.verified ? t.redfish_id + " key " + t.leaf_spki_sha256.substr(0, 16) +
                                             "… under anchor " +
                                             t.anchor_spki_sha256.substr(0, 16) + "…"
                                       : "";
    out.provenance[f.id] = {t.target, key};
    if (t.verified) out.tiers[f.id] = Tier::kHardwareRooted;
    if (t.contraindicated) out.contraindicated.insert(f.id);
    report::Submod sm;
    // The reference values of the indices some release lists.
    Finding ref;
    if (t.verified && t.proposed) {
      SpdmFacts sf{t.target, model, psid, f.source, t.proposed->values};
      ref = AppraiseSpdmReferenceValues(sf, *in.refs, in.now, matched);
      out.tiers[ref.id] = Tier::kHardwareRooted;
      out.provenance[ref.id] = {t.target, key + " + reference values"};
      if (ref.observed == "revoked" || ref.observed == "mixed") out.contraindicated.insert(ref.id);
    } else {
      ref = UnknownFinding(t.target + ".reference_values", f.source,
                           "the " + t.target + " measurements did not verify: " + f.reason);
    }
    if (t.verified) {
      out.verified.insert(t.target);
      sm.trust_vector.hardware = report::kAr4siAffirming;
      int executables = t.finding.observed == "rollback" ? report::kAr4siContraindicated
                        : t.finding.verdict == Verdict::kPass ? report::kAr4siAffirming
                                                              : report::kAr4siUnrecognised;
      if (ref.verdict != Verdict::kUnknown) {
        const int r = ref.observed == "active"     ? report::kAr4siAffirming
                      : ref.observed == "obsolete" ? report::kAr4siWarning
                      : ref.observed == "revoked" || ref.observed == "mixed"
                          ? report::kAr4siContraindicated
                          : report::kAr4siUnrecognised;
        executables = std::max(executables, r);
      }
      sm.trust_vector.executables = executables;
      if (t.target == "irot") {
        sm.trust_vector.instance_identity =
            Ar4si(v->identity, report::kAr4siContraindicated);
      }
    } else if (t.contraindicated) {
      sm.trust_vector.hardware = report::kAr4siContraindicated;
    }
    sm.status = report::StatusOfVector(sm.trust_vector);
    if (sm.status != report::ArStatus::kNone) out.submods[t.target] = sm;
    out.findings.push_back(std::move(f));
    out.findings.push_back(std::move(ref));
  }
  Finding id = v->identity;
  const SpdmTargetVerdict* irot = v->Target("irot");
  if (irot != nullptr && irot->verified) {
    out.tiers[id.id] = Tier::kHardwareRooted;
    out.provenance[id.id] = {"irot", "IRoT DeviceID " + irot->deviceid_spki_sha256.substr(0, 16) +
                                         "… (serial " + irot->deviceid_serial + ")"};
  }
  if (v->identity_contraindicated) out.contraindicated.insert(id.id);
  out.findings.push_back(std::move(id));
  return out;
}

}  // namespace

StatusOr<Appraisal> Appraise(const AppraisalInput& in) {
  const report::ReportClaims& claims = in.report->claims;
  // By-digest evidence must have been resolved against the node's own base
  // (verifier/service.cc ResolveByDigest): never judged without its bytes.
  if (!claims.evidence_resolved) {
    return FailedPreconditionError(
        "the report carries evidence by digest that was not resolved against "
        "the node's base report.");
  }
  const Policy& policy = *in.policy;
  const RefIndex& refs = *in.refs;
  const int64_t now = in.now;
  // Re-derive every finding from the raw evidence with the agent's own
  // collection; the report's boot chain stands in for the streamed parts.
  // Identical inputs (item digests, boot chain) give identical facts: from
  // the cache when one is given.
  std::string derivation_key;
  std::shared_ptr<const isolation::DeviceFacts> derived;
  if (in.derivation_cache != nullptr) {
    derivation_key = DerivationCache::KeyOf(claims);
    derived = in.derivation_cache->Get(derivation_key);
  }
  if (derived == nullptr) {
    DPA_ASSIGN_OR_RETURN(auto evidence_source,
                         device::NewEvidenceDeviceSource(claims.evidence));
    device::MemoizingDeviceSource evidence(*evidence_source);
    derived = std::make_shared<const isolation::DeviceFacts>(
        isolation::CollectDeviceFacts(evidence, in.boot_chain));
    if (in.derivation_cache != nullptr) in.derivation_cache->Put(derivation_key, derived);
  }
  const isolation::DeviceFacts& device = *derived;
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
  std::set<std::string> matched;  // releases the checks matched (collateral)
  std::vector<Finding> ref_findings =
      AppraiseReferenceValues(facts, refs, now, &matched);
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
    tin.matched_releases = &matched;
    TpmAppraisal tpm = AppraiseTpm(tin);
    eval.tiers = std::move(tpm.tiers);
    for (Finding& f : tpm.findings) findings.push_back(std::move(f));
    tpm.submod.appraisal_policy_id = policy_id;
    tpm_submod = std::move(tpm.submod);
  } else {
    for (const RuleSpec& spec : TpmRuleSpecs())
      eval.not_applicable.insert(spec.id);
  }

  // The BMC path: corroboration, hardware-rooted measurements and identity.
  BmcPath bmc_path = AppraiseBmcPath(in, device.findings, d.serial, facts.model, facts.psid,
                                     &matched);
  for (const auto& [id, tier] : bmc_path.tiers) {
    auto it = eval.tiers.find(id);
    if (it == eval.tiers.end() || it->second < tier) eval.tiers[id] = tier;
  }
  for (Finding& f : bmc_path.findings) findings.push_back(std::move(f));

  const std::string agent_key = "agent key " + in.node->key_thumbprint.substr(0, 16) + "…";
  auto provenance = [&](const std::string& id, Tier tier) -> std::pair<std::string, std::string> {
    auto it = bmc_path.provenance.find(id);
    if (it != bmc_path.provenance.end() && (tier != Tier::kSelfReported || id.rfind("bmc.", 0) == 0 ||
                                            id.rfind("irot.", 0) == 0 || id.rfind("erot.", 0) == 0)) {
      if (it->second.first == "agent+bmc") return {"agent+bmc", agent_key + " + " + it->second.second};
      return it->second;
    }
    if (id.rfind("tpm.", 0) == 0) return {"tpm", in.tpm_binding != nullptr
                                                     ? "TPM AK " + in.tpm_binding->ak_name_hex.substr(0, 20) + "…"
                                                     : ""};
    if (id.rfind("refval.", 0) == 0) return {"agent", agent_key + " (evidence) + reference values"};
    return {"agent", agent_key};
  };

  std::vector<report::DecisionReason> reasons = identity;
  for (auto& r : reasons) {
    r.path = "agent";
    r.key = agent_key;
    SetActionAndRemediation(r, RuleAction::kDeny);  // contraindicated
  }
  PolicyOutcome policy_outcome = policy.Evaluate(findings, eval);
  bool any_warn = false;
  for (const auto& r : policy_outcome.results) {
    if (r.verdict != Verdict::kPass && r.action == RuleAction::kWarn)
      any_warn = true;
    reasons.push_back({r.rule_id, r.verdict, r.expected, r.observed, r.source,
                       r.reason, ToClaimTier(r.tier)});
    std::tie(reasons.back().path, reasons.back().key) = provenance(r.rule_id, r.tier);
    SetActionAndRemediation(reasons.back(), r.action, r.remediation);
  }
  // A divergence between the paths, forged SPDM evidence, a rollback or
  // another device denies whatever the policy says: named here when the
  // policy has no rule for it.
  std::set<std::string> ruled;
  for (const PolicyRule& rule : policy.rules()) ruled.insert(rule.id);
  for (const Finding& f : findings) {
    if (bmc_path.contraindicated.count(f.id) == 0 || ruled.count(f.id) != 0) continue;
    auto tier = eval.tiers.count(f.id) ? eval.tiers.at(f.id) : Tier::kSelfReported;
    reasons.push_back({f.id, f.verdict, f.expected, f.observed, f.source,
                       f.reason + " (contraindicated: denies whatever the policy says)",
                       ToClaimTier(tier)});
    std::tie(reasons.back().path, reasons.back().key) = provenance(f.id, tier);
    SetActionAndRemediation(reasons.back(), RuleAction::kDeny);
  }
  // The policy's required paths.
  bool required_missing = false;
  for (const std::string& path : policy.required_paths()) {
    bool ok = false;
    std::string observed;
    if (path == "tpm") {
      ok = tpm_submod.has_value() && tpm_submod->status != report::ArStatus::kNone &&
           tpm_submod->status != report::ArStatus::kContraindicated;
      observed = tpm_submod ? std::string(report::ArStatusName(tpm_submod->status)) : "no TPM evidence";
    } else {
      ok = bmc_path.verified.count(path) != 0;
      observed = ok ? "verified"
                 : !bmc_path.why_unverified.empty() ? bmc_path.why_unverified
                                                    : "not verified";
    }
    if (ok) continue;
    required_missing = true;
    report::DecisionReason r{"require." + path, Verdict::kFail, path + " evidence verified",
                             observed, "policy require",
                             "the policy requires the " + path +
                                 " path, and this node's evidence on it did not verify",
                             report::ClaimTier::kSelfReported};
    r.path = path;
    SetActionAndRemediation(r, RuleAction::kDeny);
    reasons.push_back(std::move(r));
  }
  for (auto& r : consistency) {
    r.path = "verifier";
    r.key = agent_key;
    // Only a warning: the agent submod's configuration 32, never a deny.
    SetActionAndRemediation(r, RuleAction::kWarn);
    reasons.push_back(std::move(r));
  }
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
  // The agent key alone never affirms who the device is: only a
  // contradiction is asserted (AR4SI instance-identity 96).
  if (!identity.empty()) {
    agent_submod.trust_vector.instance_identity = report::kAr4siContraindicated;
  }
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
      policy_outcome.decision == Decision::kDeny || required_missing
          ? report::kAr4siContraindicated
      : any_warn                                 ? report::kAr4siWarning
                                                 : report::kAr4siAffirming;
  posture.status = report::StatusOfVector(posture.trust_vector);
  posture.appraisal_policy_id = policy_id;
  ar.submods[std::string(report::kSubmodPosture)] = posture;
  if (tpm_submod) ar.submods[std::string(report::kSubmodTpm)] = *tpm_submod;
  for (auto& [name, sm] : bmc_path.submods) {
    sm.appraisal_policy_id = policy_id;
    ar.submods[name] = sm;
  }

  bool contraindicated = false;
  for (const auto& [name, s] : ar.submods) {
    contraindicated =
        contraindicated || s.status == report::ArStatus::kContraindicated;
  }
  ar.dpuaudit.node_id = in.node->node_id;
  ar.dpuaudit.decision =
      policy_outcome.decision == Decision::kAdmit && !contraindicated &&
              bmc_path.contraindicated.empty() && !required_missing
          ? report::Decision::kAdmit
          : report::Decision::kDeny;
  ar.dpuaudit.reasons = std::move(reasons);
  ar.dpuaudit.report_sha256 = in.report->jws_sha256;
  ar.dpuaudit.policy = {policy.name(), policy.sha256()};
  // Collateral (issue 16 §2): what judged this node, by content hash.
  report::Collateral& collateral = ar.dpuaudit.collateral;
  collateral.refvals_sha256 = refs.sha256();
  for (const std::string& release : matched) {  // std::set: sorted
    collateral.matched.push_back({release, refs.ReleaseSha256(release)});
  }
  collateral.trust_anchors = in.trust_anchors;
  std::sort(collateral.trust_anchors.begin(), collateral.trust_anchors.end(),
            [](const report::CollateralRef& a, const report::CollateralRef& b) {
              return a.set < b.set;
            });
  return Appraisal{std::move(ar), arm_release, in.previous_release};
}

}  // namespace dpuaudit::verifier

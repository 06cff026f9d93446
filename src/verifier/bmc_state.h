// What one pull of a node's BMC says (issue 14, docs/redfish.md#in-the-verifier):
// the SPDM targets verified and appraised against the device's baselines,
// and the IRoT identity against the node's binding. Pure: the monitor
// (verifier/bmc_monitor.h) fetches and stores; this judges.
//
// Per SPDM target ("irot" = Bluefield_DPU_IRoT, "erot" = Bluefield_ERoT),
// finding "<target>.measurements":
//   unknown  the BMC did not give the evidence (no ComponentIntegrity, no
//            such target, a failed Task): never a pass;
//   fail     "unverified": the chain does not end at a trust anchor, a
//            certificate is out of date, the signature or our nonce does
//            not verify; contraindicated (forged or replayed evidence);
//   else     verifier/spdm_appraisal.h against the stored baseline
//            (first seen, baseline, changed, rollback).
// Finding "irot.identity": the IRoT's DICE DeviceID (DeviceIdCertificate)
// against the node's binding: pass when the same DeviceID answers (or on
// first sight, which binds it); fail, contraindicated, when another one
// does or the BMC reports another serial, naming both; unknown when the
// IRoT evidence did not verify.
// Does not: fetch or store anything; compare the posture resources with
// the agent (verifier/bmc_crosscheck.h does, per report).
#ifndef DPUAUDIT_VERIFIER_BMC_STATE_H_
#define DPUAUDIT_VERIFIER_BMC_STATE_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "bmc/collect.h"
#include "common/finding.h"
#include "common/status.h"
#include "spdm/dice.h"
#include "spdm/evidence.h"
#include "verifier/spdm_appraisal.h"

namespace dpuaudit::verifier {

// The identity a node's hardware path is bound to (hardware record
// "bmc-binding").
struct BmcBinding {
  std::string bmc_url;
  std::string bmc_key_sha256;        // the pinned TLS key ("" in CA mode)
  std::string irot_deviceid_sha256;  // SPKI SHA-256 of the DeviceID cert
  std::string irot_deviceid_serial;  // its serial number, hex
  std::string irot_anchor_sha256;    // the anchor key the chain ended at
  std::string serial;                // the system serial the BMC reported
  bool operator==(const BmcBinding&) const = default;
};
std::string BmcBindingJson(const BmcBinding& b);  // canonical
StatusOr<BmcBinding> ParseBmcBinding(std::string_view json);

std::string BaselineJson(const MeasurementBaseline& b);  // canonical
StatusOr<MeasurementBaseline> ParseBaseline(std::string_view json);

// The DICE DeviceID of a validated chain, the root (self-signed, or the
// anchor's key) left out: walking from the leaf towards the root, the first
// certificate that carries no DICE evidence extension (on NVIDIA's chains
// the boot ROM's, below the alias layers that each carry their FWIDs); when
// every one carries some, the one nearest the root (the first layer the
// manufacturer's CA certified).
const spdm::ChainCertificate& DeviceIdCertificate(const spdm::ValidatedChain& chain);

struct SpdmTargetVerdict {
  std::string target;      // "irot" | "erot"
  std::string redfish_id;  // "Bluefield_DPU_IRoT" | "Bluefield_ERoT"
  Finding finding;         // "<target>.measurements"
  bool verified = false;   // chain, signature and nonce all checked
  bool contraindicated = false;
  std::optional<MeasurementBaseline> proposed;  // when verified
  bool first_seen = false;
  std::string leaf_spki_sha256;    // the key that signed the measurements
  std::string anchor_spki_sha256;  // the anchor the chain ended at
  std::string deviceid_spki_sha256;
  std::string deviceid_serial;
  std::vector<std::string> fwids;  // per layer, "<subject CN>: <alg>:<hex>"
};

struct BmcVerdict {
  std::string node_id;
  int64_t pulled_at = 0;
  bmc::BmcEvidence evidence;
  std::vector<SpdmTargetVerdict> targets;  // irot, then erot
  Finding identity;                        // "irot.identity"
  bool identity_contraindicated = false;
  // What this pull showed, when the IRoT verified: the binding to store on
  // first sight, or to approve when an administrator re-binds.
  std::optional<BmcBinding> observed;
  const SpdmTargetVerdict* Target(std::string_view target) const;
};

struct JudgeBmcInput {
  std::string node_id;
  const bmc::BmcEvidence* evidence = nullptr;
  const spdm::TrustAnchors* anchors = nullptr;  // none configured: unverified
  // Chains validated by earlier pulls under `anchors` (optional; only
  // their dates are re-checked): the monitor keeps one.
  spdm::ChainCache* chain_cache = nullptr;
  std::string bmc_key_sha256;                  // the node's configured pin
  std::optional<MeasurementBaseline> irot_baseline, erot_baseline;
  // Indices judged by reference values, left out of the baseline
  // comparison (verifier/refvals/appraisal.h SpdmReferencedIndices).
  std::set<uint8_t> irot_referenced, erot_referenced;
  std::optional<BmcBinding> binding;
  int64_t now = 0;
};

BmcVerdict JudgeBmcPull(const JudgeBmcInput& in);

// The verdict for GET /v1/nodes/{id}/bmc and `dpuaudit bmc status`
// (docs/bmc-evidence-schema.md#verdict).
nlohmann::json BmcVerdictJson(const BmcVerdict& v);

// The finding ids a BMC pull contributes ("irot.measurements",
// "erot.measurements", "irot.identity").
const std::vector<std::string>& SpdmFindingIds();

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_BMC_STATE_H_

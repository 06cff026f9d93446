// verifier::Appraise: what the evidence of one authenticated report says —
// the pure middle of the report pipeline (verifier/service.h steps 7-8,
// without storing or signing).
//
// In order: the findings re-derived from the report's raw evidence with the
// agent's own collection (isolation::CollectDeviceFacts over an evidence
// source, the report's boot chain standing in for the partitions and files
// too large to carry); the device block checked against that identity and
// the serial pinned at enrollment (verifier/identity_check.h); the agent's
// advisory findings and boot-chain primary compared with the re-derivation
// (agent.consistency); the reference values and the upgrade edge from the
// node's previous release (verifier/refvals/appraisal.h); the TPM steps
// (verifier/tpm_appraisal.h) for nodes bound to a TPM, reports carrying a
// quote, or every node under applies_to "all-nodes"; the policy; the AR4SI
// trust vectors; the BMC path (the agent's claims cross-checked with the
// node's latest BMC pull, verifier/bmc_crosscheck.h, and its SPDM verdicts,
// verifier/bmc_state.h) with submods "bmc", "irot" and "erot"; the
// policy's "require"d paths; and the AttestationResult the caller signs as
// the EAR. Every reason names its tier and its provenance (path, key).
// A node proved only by its agent key never affirms instance-identity or
// hardware: the arm-agent submod asserts instance-identity only when it is
// contraindicated.
//
// Guarantees: pure — no store, no clock (`now` is an input), no signing;
// the same input gives the same Appraisal. Errors: INVALID_ARGUMENT when
// the evidence does not form an evidence source
// (device::NewEvidenceDeviceSource) or, for a TPM appraisal, the nonce is
// not base64url. Every reason is report::MakeSafe'd.
// Does not: verify the signature, the nonce or the node's state (the
// caller did, before: verifier/service.cc).
#ifndef DPUAUDIT_VERIFIER_APPRAISE_H_
#define DPUAUDIT_VERIFIER_APPRAISE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "attest/tpm_claims.h"
#include "common/status.h"
#include "firmware/boot_chain.h"
#include "report/claims.h"
#include "report/ear.h"
#include "verifier/bmc_state.h"
#include "verifier/policy.h"
#include "verifier/refvals/index.h"
#include "verifier/store/store.h"

namespace dpuaudit::verifier {

class DerivationCache;  // verifier/derivation_cache.h

struct AppraisalInput {
  // The report, its signature verified and its claims parsed.
  const report::VerifiedReport* report = nullptr;
  // Its boot_chain and tpm members parsed; nullptr when absent.
  const firmware::BootChainInfo* boot_chain = nullptr;
  const attest::TpmClaims* tpm_claims = nullptr;
  const NodeRecord* node = nullptr;
  const TpmBinding* tpm_binding = nullptr;  // the node's, nullptr if none
  const RefIndex* refs = nullptr;
  // The node's baseline ARM release ("" when it has none yet).
  std::string previous_release;
  const Policy* policy = nullptr;
  report::VerifierId verifier_id;  // carried into the EAR
  // The node's BMC path (verifier/bmc_monitor.h): whether one is
  // configured, its latest pull (nullptr when none yet) and how old a pull
  // may be to count. Without a BMC the bmc.*, irot.* and erot.* findings
  // are unknown and the node reaches no tier above self-reported.
  bool bmc_configured = false;
  const BmcVerdict* bmc = nullptr;
  int64_t bmc_max_age_seconds = 0;
  std::string bmc_key_sha256;  // the pinned BMC TLS key, for provenance
  int64_t now = 0;                 // iat; exp = now + the decision TTL
  // The trust-anchor sets this appraisal relied on, by hash (the EK CA set
  // that validated the node's TPM binding, the DICE roots of its BMC path):
  // copied into the EAR's collateral, sorted by set.
  std::vector<report::CollateralRef> trust_anchors;
  // When set, the re-derivation of the evidence (the probes and the boot
  // chain findings, isolation::CollectDeviceFacts) is looked up and kept
  // there by the digest of its inputs (verifier/derivation_cache.h); every
  // later step runs afresh. nullptr: derived every time.
  DerivationCache* derivation_cache = nullptr;
};

struct Appraisal {
  report::AttestationResult result;  // to be signed as the EAR
  std::string arm_release;       // the release the ARM firmware matched
  std::string previous_release;  // in.previous_release
};

StatusOr<Appraisal> Appraise(const AppraisalInput& in);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_APPRAISE_H_

// One SPDM target's evidence as a BMC returns it (docs/spdm.md): the slot-0
// certificate chain and the SPDMGetSignedMeasurements result, verified in
// order: chain to a trust anchor, leaf key, signature over the transcript,
// our nonce.
//
// Guarantees: with anchors, the chain is validated (dice.h) before its leaf
// key is used; without (`anchors` null, for `dpuaudit spdm verify` on
// evidence whose chain is incomplete), only the first certificate's key is
// used and `chain_validated` is false, which the caller must show. The
// Version must be "1.1.0" or "1.1" (what is verified); the algorithm names
// are Redfish's. Every failure names the step.
// Does not: appraise the measurements (the verifier does).
#ifndef DPUAUDIT_SPDM_EVIDENCE_H_
#define DPUAUDIT_SPDM_EVIDENCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"
#include "spdm/dice.h"
#include "spdm/measurements.h"

namespace dpuaudit::spdm {

struct TargetEvidence {
  std::string chain_pem;
  std::string signed_measurements_b64;
  std::string signing_algorithm;  // "TPM_ALG_ECDSA_ECC_NIST_P384"
  std::string hashing_algorithm;  // "TPM_ALG_SHA_384"
  std::string version;            // "1.1.0"
};

struct VerifiedTarget {
  bool chain_validated = false;
  std::optional<ValidatedChain> chain;  // when validated
  std::string leaf_subject;
  std::string leaf_spki_sha256;
  VerifiedMeasurements measurements;
};

StatusOr<VerifiedTarget> VerifyTargetEvidence(const TargetEvidence& e, ByteView our_nonce,
                                              const TrustAnchors* anchors, int64_t now);

}  // namespace dpuaudit::spdm

#endif  // DPUAUDIT_SPDM_EVIDENCE_H_

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
#include <map>
#include <memory>
#include <mutex>
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
  std::shared_ptr<const ValidatedChain> chain;  // when validated
  std::string leaf_subject;
  std::string leaf_spki_sha256;
  VerifiedMeasurements measurements;
};

// Chains that validated before, by the SHA-256 of their PEM text, for one
// set of trust anchors (the caller's: a cache must not outlive or be shared
// across anchor sets). A chain found here is not validated again; only its
// certificates' validity dates are re-checked at `now`. At most kMaxChains
// entries (when full, it is emptied). Thread-safe.
class ChainCache {
 public:
  static constexpr size_t kMaxChains = 4096;
  std::shared_ptr<const ValidatedChain> Find(const std::string& pem_sha256) const;
  void Put(const std::string& pem_sha256, std::shared_ptr<const ValidatedChain> chain);
  size_t size() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<const ValidatedChain>> chains_;
};

// `cache` (optional, with `anchors` only) skips re-validating a chain seen
// before (see ChainCache).
StatusOr<VerifiedTarget> VerifyTargetEvidence(const TargetEvidence& e, ByteView our_nonce,
                                              const TrustAnchors* anchors, int64_t now,
                                              ChainCache* cache = nullptr);

}  // namespace dpuaudit::spdm

#endif  // DPUAUDIT_SPDM_EVIDENCE_H_

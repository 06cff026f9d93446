// One SPDM target's evidence, verified (evidence.h).
#include "spdm/evidence.h"

#include <utility>

namespace dpuaudit::spdm {

StatusOr<VerifiedTarget> VerifyTargetEvidence(const TargetEvidence& e, ByteView our_nonce,
                                              const TrustAnchors* anchors, int64_t now) {
  if (e.version != "1.1.0" && e.version != "1.1") {
    return InvalidArgumentError("SPDM evidence Version \"" + e.version.substr(0, 32) +
                                "\" is not 1.1.0: only SPDM 1.1 transcripts are verified");
  }
  DPA_ASSIGN_OR_RETURN(SigningAlgorithm signing, ParseSigningAlgorithm(e.signing_algorithm));
  DPA_ASSIGN_OR_RETURN(HashingAlgorithm hashing, ParseHashingAlgorithm(e.hashing_algorithm));
  StatusOr<Bytes> transcript = Base64Decode(e.signed_measurements_b64);
  if (!transcript.ok()) {
    return InvalidArgumentError("SignedMeasurements is not base64: " +
                                transcript.status().message());
  }
  VerifiedTarget out;
  const SpdmPublicKey* key = nullptr;
  std::optional<UnvalidatedLeaf> leaf;
  if (anchors != nullptr) {
    StatusOr<ValidatedChain> chain = ValidateChain(e.chain_pem, *anchors, now);
    if (!chain.ok()) {
      return Status(chain.status().code(),
                    "certificate chain: " + chain.status().message());
    }
    out.chain = std::move(chain).value();
    out.chain_validated = true;
    out.leaf_subject = out.chain->certificates().front().subject;
    out.leaf_spki_sha256 = out.chain->certificates().front().spki_sha256;
    key = &out.chain->leaf_key();
  } else {
    DPA_ASSIGN_OR_RETURN(UnvalidatedLeaf l, ReadLeafUnvalidated(e.chain_pem));
    leaf = std::move(l);
    out.leaf_subject = leaf->certificate.subject;
    out.leaf_spki_sha256 = leaf->certificate.spki_sha256;
    key = &leaf->key;
  }
  StatusOr<VerifiedMeasurements> m =
      VerifySignedMeasurements(*transcript, *key, signing, hashing, our_nonce);
  if (!m.ok()) {
    return Status(m.status().code(), "signed measurements: " + m.status().message());
  }
  out.measurements = std::move(m).value();
  return out;
}

}  // namespace dpuaudit::spdm

// One SPDM target's evidence, verified (evidence.h).
#include "spdm/evidence.h"

#include <utility>

#include "common/crypto.h"

namespace dpuaudit::spdm {

std::shared_ptr<const ValidatedChain> ChainCache::Find(const std::string& pem_sha256) const {
  std::lock_guard<std::mutex> l(mu_);
  auto it = chains_.find(pem_sha256);
  return it == chains_.end() ? nullptr : it->second;
}

void ChainCache::Put(const std::string& pem_sha256, std::shared_ptr<const ValidatedChain> chain) {
  std::lock_guard<std::mutex> l(mu_);
  if (chains_.size() >= kMaxChains) chains_.clear();
  chains_[pem_sha256] = std::move(chain);
}

size_t ChainCache::size() const {
  std::lock_guard<std::mutex> l(mu_);
  return chains_.size();
}

namespace {

// The dates OpenSSL checked when the chain was first validated, at `now`.
Status CheckDates(const ValidatedChain& chain, int64_t now) {
  for (const ChainCertificate& c : chain.certificates()) {
    if (now > c.not_after) {
      return UnauthenticatedError("certificate has expired (" + c.subject.substr(0, 128) +
                                  ", not after " + std::to_string(c.not_after) + ")");
    }
    if (now < c.not_before) {
      return UnauthenticatedError("certificate is not yet valid (" + c.subject.substr(0, 128) +
                                  ", not before " + std::to_string(c.not_before) + ")");
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<VerifiedTarget> VerifyTargetEvidence(const TargetEvidence& e, ByteView our_nonce,
                                              const TrustAnchors* anchors, int64_t now,
                                              ChainCache* cache) {
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
    const std::string pem_sha256 = cache != nullptr ? Sha256Hex(AsBytes(e.chain_pem)) : "";
    std::shared_ptr<const ValidatedChain> cached = cache != nullptr ? cache->Find(pem_sha256) : nullptr;
    if (cached) {
      Status dates = CheckDates(*cached, now);
      if (!dates.ok()) {
        return Status(dates.code(), "certificate chain: " + dates.message());
      }
      out.chain = std::move(cached);
    } else {
      StatusOr<ValidatedChain> chain = ValidateChain(e.chain_pem, *anchors, now);
      if (!chain.ok()) {
        return Status(chain.status().code(),
                      "certificate chain: " + chain.status().message());
      }
      out.chain = std::make_shared<const ValidatedChain>(std::move(chain).value());
      if (cache != nullptr) cache->Put(pem_sha256, out.chain);
    }
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

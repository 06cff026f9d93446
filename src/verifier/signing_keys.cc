#include "verifier/signing_keys.h"

#include <algorithm>

#include "common/strict_json.h"
#include "report/jws.h"
#include "verifier/service.h"

namespace dpuaudit::verifier {

std::string_view SigningKeyStatus(const SigningKeyRecord& k, bool current,
                                  int64_t now) {
  if (current) return "current";
  return now < k.published_until() ? "published" : "retired";
}

StatusOr<EcPublicKey> SigningKeyPublic(const SigningKeyRecord& k) {
  auto j = strict_json::ParseStrictJson(AsBytes(k.public_jwk), "signing key JWK");
  if (!j.ok()) {
    return DataLossError("stored signing key " + k.kid + ": " +
                         std::string(j.status().message()));
  }
  auto key = report::ParsePublicJwk(*j);
  if (!key.ok()) {
    return DataLossError("stored signing key " + k.kid + ": " +
                         std::string(key.status().message()));
  }
  if (key->Thumbprint() != k.kid) {
    return DataLossError("stored signing key " + k.kid +
                         " does not match its thumbprint.");
  }
  return *std::move(key);
}

nlohmann::json SigningKeysJson(const std::vector<SigningKeyRecord>& keys,
                               int64_t now) {
  nlohmann::json a = nlohmann::json::array();
  for (size_t i = 0; i < keys.size(); ++i) {
    const SigningKeyRecord& k = keys[i];
    a.push_back({{"kid", k.kid},
                 {"status", SigningKeyStatus(k, i == 0, now)},
                 {"first_used_at", k.first_used_at},
                 {"last_used_at", k.last_used_at},
                 {"max_result_ttl_seconds", k.max_result_ttl_seconds},
                 {"published_until_at", k.published_until()}});
  }
  return nlohmann::json{{"keys", a}};
}

// --- VerifierService members (service.h, issue 15 keys block) -------------

Status VerifierService::RegisterSigningKeys() {
  // The previous keys first (a read, which works on a full disk too), so
  // stored results they signed keep verifying whatever happens below.
  DPA_ASSIGN_OR_RETURN(std::vector<SigningKeyRecord> all, store_->ListSigningKeys());
  for (const SigningKeyRecord& r : all) {
    if (r.kid == kid_) continue;
    DPA_ASSIGN_OR_RETURN(EcPublicKey pub, SigningKeyPublic(r));
    previous_keys_.push_back({report::NamedKey{r.kid, std::move(pub)}, r.published_until()});
  }
  std::lock_guard<std::mutex> lock(key_use_mu_);
  return RegisterCurrentKeyLocked();
}

Status VerifierService::RegisterCurrentKeyLocked() {
  const int64_t now = clock_.NowUnixSeconds();
  SigningKeyRecord k;
  k.kid = kid_;
  k.public_jwk = strict_json::DumpJson(report::PublicJwk(key_.public_key(), kid_));
  k.first_used_at = now;
  k.last_used_at = now + kSigningKeyUseAheadSeconds;
  k.max_result_ttl_seconds = policy().decision_ttl_seconds();
  DPA_ASSIGN_OR_RETURN(SigningKeyRecord stored, store_->RegisterSigningKey(k));
  key_used_through_ = stored.last_used_at;
  key_registered_ = true;
  return OkStatus();
}

StatusOr<std::unique_ptr<Es256Verifier>> VerifierService::OwnVerifierFor(
    std::string_view ear_jwt) const {
  DPA_ASSIGN_OR_RETURN(report::UnverifiedJwsHeader header,
                       report::PeekUnverifiedHeader(ear_jwt));
  if (header.kid == kid_) return Es256Verifier::New(key_.public_key());
  for (const PreviousKey& p : previous_keys_) {
    if (p.key.kid == header.kid) return Es256Verifier::New(p.key.key);
  }
  return DataLossError("stored result names signing key " +
                       strict_json::Quote(header.kid) +
                       ", which this verifier never used.");
}

std::vector<report::NamedKey> VerifierService::PublishedKeys(int64_t now) const {
  std::vector<report::NamedKey> out = {report::NamedKey{kid_, key_.public_key()}};
  for (const PreviousKey& p : previous_keys_) {
    if (now < p.published_until) out.push_back(p.key);
  }
  return out;
}

StatusOr<std::string> VerifierService::SignEarRecorded(
    const report::AttestationResult& ar) {
  const int64_t now = clock_.NowUnixSeconds();
  // The last_used_at that keeps this EAR inside the key's publication.
  const int64_t needed = std::max(now, ar.exp - policy().decision_ttl_seconds());
  {
    std::lock_guard<std::mutex> lock(key_use_mu_);
    // Not recorded at start (the store could not be written then): record
    // it now, before it signs anything.
    if (!key_registered_) DPA_RETURN_IF_ERROR(RegisterCurrentKeyLocked());
    if (needed > key_used_through_) {
      const int64_t through = needed + kSigningKeyUseAheadSeconds;
      DPA_RETURN_IF_ERROR(store_->ExtendSigningKeyUse(kid_, through));
      key_used_through_ = through;
    }
  }
  return report::SignEar(ar, *signer_, kid_);
}

}  // namespace dpuaudit::verifier

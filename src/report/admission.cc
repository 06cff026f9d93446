#include "report/admission.h"

#include <algorithm>

#include "common/clock.h"
#include "common/strict_json.h"
#include "report/jws.h"

namespace dpuaudit::report {
namespace {

using strict_json::ObjectReader;
using strict_json::Quote;
using nlohmann::json;

constexpr size_t kMaxTrustedKeys = 256;
constexpr size_t kMaxTrustText = 256;

// A clock stopped at `now`, so VerifyEar's expiry check uses the caller's
// time (tests and relying parties decide what "now" is).
class FixedClock final : public Clock {
 public:
  explicit FixedClock(int64_t now) : now_(now) {}
  int64_t NowUnixSeconds() const override { return now_; }

 private:
  int64_t now_;
};

bool PrintableShort(const std::string& s) {
  if (s.empty() || s.size() > kMaxTrustText) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return c >= 0x20 && c < 0x7f; });
}

}  // namespace

StatusOr<TrustedKeys> TrustedKeys::FromJwks(const json& jwks,
                                            const std::string& source,
                                            int64_t now) {
  DPA_ASSIGN_OR_RETURN(std::vector<NamedKey> named, ParseJwks(jwks));
  if (named.empty()) return InvalidArgumentError("the JWKS has no keys.");
  TrustedKeys t;
  for (auto& k : named) {
    std::string tp = k.key.Thumbprint();
    DPA_RETURN_IF_ERROR(
        t.Add(TrustedKey{k.kid, std::move(k.key), tp, source, now}).status());
  }
  return t;
}

StatusOr<TrustedKeys> TrustedKeys::FromPem(std::string_view pem,
                                           const std::string& source,
                                           int64_t now) {
  DPA_ASSIGN_OR_RETURN(EcPublicKey key, EcPublicKey::FromPem(pem));
  std::string tp = key.Thumbprint();
  TrustedKeys t;
  DPA_RETURN_IF_ERROR(
      t.Add(TrustedKey{tp, std::move(key), tp, source, now}).status());
  return t;
}

StatusOr<TrustedKeys> TrustedKeys::ParseTrustFile(ByteView bytes) {
  if (bytes.size() > (1u << 20)) {
    return ResourceExhaustedError("trust file is larger than 1 MiB.");
  }
  DPA_ASSIGN_OR_RETURN(json j, strict_json::ParseStrictJson(bytes, "trust file"));
  DPA_ASSIGN_OR_RETURN(ObjectReader root, ObjectReader::New(j, ""));
  DPA_ASSIGN_OR_RETURN(std::string format, root.String("format"));
  if (format != kTrustFileFormat) {
    return InvalidArgumentError("trust file format " + Quote(format) +
                                " is not \"" + std::string(kTrustFileFormat) +
                                "\".");
  }
  DPA_ASSIGN_OR_RETURN(const json* keys, root.Array("keys"));
  DPA_RETURN_IF_ERROR(root.Finish());
  if (keys->size() > kMaxTrustedKeys) {
    return ResourceExhaustedError("trust file has more than " +
                                  std::to_string(kMaxTrustedKeys) + " keys.");
  }
  TrustedKeys t;
  for (size_t i = 0; i < keys->size(); ++i) {
    std::string path = strict_json::Index("keys", i);
    DPA_ASSIGN_OR_RETURN(ObjectReader k, ObjectReader::New((*keys)[i], path));
    DPA_ASSIGN_OR_RETURN(std::string kid, k.String("kid"));
    DPA_ASSIGN_OR_RETURN(std::string thumbprint, k.String("thumbprint"));
    DPA_ASSIGN_OR_RETURN(const json* jwk, k.Object("jwk"));
    DPA_ASSIGN_OR_RETURN(std::string source, k.String("source"));
    DPA_ASSIGN_OR_RETURN(int64_t added_at, k.Int64("added_at"));
    DPA_RETURN_IF_ERROR(k.Finish());
    if (!PrintableShort(kid)) {
      return InvalidArgumentError(path + ".kid must be 1-256 printable ASCII characters.");
    }
    if (source.size() > 4096) {
      return InvalidArgumentError(path + ".source is longer than 4096 bytes.");
    }
    auto key = ParsePublicJwk(*jwk);
    if (!key.ok()) return key.status().WithPrefix(path + ".jwk");
    if (key->Thumbprint() != thumbprint) {
      return InvalidArgumentError(path + ".thumbprint " + Quote(thumbprint) +
                                  " is not the thumbprint of its jwk (" +
                                  key->Thumbprint() + ").");
    }
    auto added = t.Add(TrustedKey{kid, *key, thumbprint, source, added_at});
    if (!added.ok()) return added.status().WithPrefix(path);
    if (!*added) {
      return InvalidArgumentError(path + ": kid " + Quote(kid) +
                                  " appears twice.");
    }
  }
  return t;
}

std::string TrustedKeys::SerializeTrustFile() const {
  json keys = json::array();
  for (const auto& k : keys_) {
    // The kid travels next to the JWK, not inside it: ParsePublicJwk keeps
    // its own strictness, and the pinned kid is what a JWS must name.
    keys.push_back({{"kid", k.kid},
                    {"thumbprint", k.thumbprint},
                    {"jwk", PublicJwk(k.key, "")},
                    {"source", k.source},
                    {"added_at", k.added_at}});
  }
  json j = {{"format", kTrustFileFormat}, {"keys", std::move(keys)}};
  return j.dump(2) + "\n";
}

StatusOr<bool> TrustedKeys::Add(TrustedKey key) {
  if (!PrintableShort(key.kid)) {
    return InvalidArgumentError("key id must be 1-256 printable ASCII characters.");
  }
  if (const TrustedKey* old = Find(key.kid)) {
    if (old->key == key.key) return false;
    return AlreadyExistsError("key id " + Quote(key.kid) +
                              " is already pinned to another key (thumbprint " +
                              old->thumbprint + "); remove it first.");
  }
  if (keys_.size() >= kMaxTrustedKeys) {
    return ResourceExhaustedError("more than " + std::to_string(kMaxTrustedKeys) +
                                  " pinned keys.");
  }
  keys_.push_back(std::move(key));
  return true;
}

bool TrustedKeys::Remove(std::string_view kid) {
  auto it = std::find_if(keys_.begin(), keys_.end(),
                         [kid](const TrustedKey& k) { return k.kid == kid; });
  if (it == keys_.end()) return false;
  keys_.erase(it);
  return true;
}

const TrustedKey* TrustedKeys::Find(std::string_view kid) const {
  for (const auto& k : keys_) {
    if (k.kid == kid) return &k;
  }
  return nullptr;
}

StatusOr<TrustedKeys> TrustedKeys::FromAnyFile(ByteView bytes, const std::string& source,
                                               int64_t now) {
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && text[first] == '-') {
    return FromPem(text, "pem:" + source, now);
  }
  DPA_ASSIGN_OR_RETURN(nlohmann::json j,
                       strict_json::ParseStrictJson(bytes, "verifier keys " + source));
  if (j.is_object() && j.contains("format")) return ParseTrustFile(bytes);
  return FromJwks(j, "jwks:" + source, now);
}

StatusOr<AttestationResult> VerifyPinnedEar(std::string_view ear_jwt,
                                            const TrustedKeys& pinned,
                                            int64_t now,
                                            int64_t max_skew_seconds,
                                            bool allow_expired,
                                            std::string* kid) {
  if (pinned.empty()) {
    return FailedPreconditionError("no verifier key is pinned.");
  }
  // 1. The kid only picks a pinned key; nothing in the header is trusted.
  DPA_ASSIGN_OR_RETURN(UnverifiedJwsHeader header,
                       PeekUnverifiedHeader(ear_jwt, kMaxEarBytes));
  const TrustedKey* key = pinned.Find(header.kid);
  if (key == nullptr) {
    return UnauthenticatedError("EAR key id " + Quote(header.kid) +
                                " is not pinned; it was not signed by a "
                                "verifier you trust.");
  }
  // 2. Signature (ES256 pinned), typ, strict parse; expiry at `now`.
  DPA_ASSIGN_OR_RETURN(auto verifier, Es256Verifier::New(key->key));
  FixedClock clock(now);
  DPA_ASSIGN_OR_RETURN(AttestationResult ar,
                       VerifyEar(ear_jwt, *verifier, clock, /*allow_expired=*/true));
  // 3. Issued in the future: a verifier clock ahead of ours, or an EAR
  // minted to outlive its window.
  if (ar.iat > now + max_skew_seconds) {
    return InvalidArgumentError("EAR issued at " + std::to_string(ar.iat) +
                                " lies " + std::to_string(ar.iat - now) +
                                " s in the future (now " + std::to_string(now) +
                                ", allowed skew " +
                                std::to_string(max_skew_seconds) + " s).");
  }
  // 4. RFC 7519 §4.1.4: not accepted on or after exp.
  if (!allow_expired && now >= ar.exp) {
    return DeadlineExceededError("EAR expired at " + std::to_string(ar.exp) +
                                 ", now " + std::to_string(now) + ".");
  }
  if (kid != nullptr) *kid = key->kid;
  return ar;
}

StatusOr<AdmissionVerdict> CheckAdmission(std::string_view ear_jwt,
                                          const TrustedKeys& pinned,
                                          const AdmissionExpectation& expect) {
  if (expect.node_id.empty()) {
    return InvalidArgumentError("the node id to check admission for is empty.");
  }
  AdmissionVerdict v;
  DPA_ASSIGN_OR_RETURN(v.result,
                       VerifyPinnedEar(ear_jwt, pinned, expect.now,
                                       expect.max_skew_seconds,
                                       expect.allow_expired, &v.kid));
  const AttestationResult& ar = v.result;
  // 5. An admit for another node proves nothing about this one.
  if (ar.dpuaudit.node_id != expect.node_id) {
    return PermissionDeniedError("EAR is for node " + Quote(ar.dpuaudit.node_id) +
                                 ", not " + Quote(expect.node_id) + ".");
  }
  // 6. Several verifiers may share a key store; the instance says which.
  if (expect.verifier_id) {
    if (ar.verifier_id.instance.empty()) {
      return PermissionDeniedError("EAR names no verifier id; expected " +
                                   Quote(*expect.verifier_id) + ".");
    }
    if (ar.verifier_id.instance != *expect.verifier_id) {
      return PermissionDeniedError("EAR is from verifier " +
                                   Quote(ar.verifier_id.instance) + ", not " +
                                   Quote(*expect.verifier_id) + ".");
    }
  }
  if (expect.now >= ar.exp) {
    v.reason = "EAR expired at " + std::to_string(ar.exp) + ".";
    return v;
  }
  v.admit = ar.dpuaudit.decision == Decision::kAdmit;
  if (!v.admit) v.reason = FailingRules(ar.dpuaudit);
  return v;
}

AdmissionAnswer ParseAdmissionAnswer(std::string_view body) {
  AdmissionAnswer a;
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    a.malformed = true;
    return a;
  }
  auto str = [&j](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  a.decision = str("decision");
  a.reason = str("reason");
  a.ear = str("ear");
  a.status = str("status");
  return a;
}

AdmissionDecision DecideAdmission(const AdmissionAnswer& answer,
                                  const TrustedKeys& pinned,
                                  const AdmissionExpectation& expect) {
  AdmissionDecision out;
  out.status = answer.status;
  if (answer.malformed) {
    out.reason = "the verifier's answer is not a JSON object.";
    return out;
  }
  // An EAR file alone: its own decision is the only one.
  const std::string server = answer.decision.value_or("admit");
  if (answer.ear.empty()) {
    out.reason = server == "admit"          ? "the answer says admit but carries no EAR."
                 : !answer.reason.empty() ? answer.reason
                                          : "the verifier has no attestation result for it.";
    return out;
  }
  auto verdict = CheckAdmission(answer.ear, pinned, expect);
  if (!verdict.ok()) {
    out.reason = "EAR rejected: " + verdict.status().message();
    return out;
  }
  out.verified = true;
  out.expires_at = verdict->result.exp;
  out.kid = verdict->kid;
  out.verifier_id = verdict->result.verifier_id.instance;
  for (const DecisionReason& r : verdict->result.dpuaudit.reasons) {
    if (r.verdict != Verdict::kPass) out.not_passing.push_back(r);
  }
  if (!verdict->admit) {
    out.reason = verdict->reason;
    return out;
  }
  // The EAR says admit; a verifier that itself says deny now (node
  // suspended, a newer result) still wins: admit needs both.
  if (server != "admit") {
    out.reason = "the verifier answers " +
                 (server.empty() ? std::string("without a decision") : server) +
                 (answer.reason.empty() ? "" : ": " + answer.reason);
    return out;
  }
  out.admit = true;
  return out;
}

std::string FailingRules(const DpuauditResult& r) {
  std::string out;
  for (const auto& reason : r.reasons) {
    if (reason.verdict == Verdict::kPass) continue;
    if (!out.empty()) out += "; ";
    out += reason.rule_id + ": observed " +
           (reason.observed.empty() ? std::string("(none)") : reason.observed) +
           ", expected " + reason.expected;
    if (reason.verdict == Verdict::kUnknown) out += " [unknown: " + reason.reason + "]";
  }
  return out.empty() ? "-" : out;
}

}  // namespace dpuaudit::report

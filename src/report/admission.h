// The relying party's admission check: is this EAR, from the verifier we
// pinned, a current "admit" for the node we asked about? One function,
// CheckAdmission, used by `dpuaudit admit`, `dpuaudit result show/summary`
// and any later relying-party code.
//
// Trust comes only from TrustedKeys: verifier public keys pinned out of band
// (a JWKS file, a PEM public key, or a trust file written by `dpuaudit trust
// add`, docs/trust-file.md). Nothing here fetches a key; a key published by
// the server being checked is never trusted because it is published.
//
// Guarantees, in this order, each failing closed with a precise Status:
//   1. the EAR's protected header names a kid that is pinned
//      (UNAUTHENTICATED "EAR key id \"…\" is not pinned …");
//   2. report::VerifyEar under that key: ES256 pinned, typ JWT, signature
//      over the received bytes, then the strict ParseEar (UNAUTHENTICATED /
//      INVALID_ARGUMENT);
//   3. iat not later than now + max_skew_seconds (INVALID_ARGUMENT "EAR
//      issued at … lies … s in the future …");
//   4. now < exp unless allow_expired (DEADLINE_EXCEEDED "EAR expired at …");
//   5. node id equal to the one asked for (PERMISSION_DENIED);
//   6. when a verifier id is expected, ear.verifier-id "instance" equal to
//      it (PERMISSION_DENIED; an EAR without one is refused too).
// A verified EAR whose decision is deny is not an error: the verdict says
// deny, with the failing rules as the reason.
// DecideAdmission is the whole gate (`dpuaudit admit`): CheckAdmission on
// the EAR, and, when the verifier was asked, its current decision too —
// admit needs both (a node suspended or re-appraised since the EAR was
// signed is denied). Every failure is a deny with its reason, never an
// error.
// Does not: check the nonce against a challenge of ours (EARs are fetched,
// not challenged), or decide whether a warning-tier submod is acceptable
// (the verifier's policy decided that); fetch anything.
#ifndef DPUAUDIT_REPORT_ADMISSION_H_
#define DPUAUDIT_REPORT_ADMISSION_H_

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "common/crypto.h"
#include "common/status.h"
#include "report/ear.h"

namespace dpuaudit::report {

inline constexpr std::string_view kTrustFileFormat = "dpuaudit-trust/1";
inline constexpr int64_t kDefaultMaxSkewSeconds = 60;

struct TrustedKey {
  std::string kid;         // the JWS kid it verifies (the verifier's: the thumbprint)
  EcPublicKey key;
  std::string thumbprint;  // RFC 7638 SHA-256 thumbprint of `key`
  std::string source;      // where it was pinned from ("jwks:/etc/…", "pem:…")
  int64_t added_at = 0;
};

// A set of pinned verifier keys, unique by kid. A value type.
class TrustedKeys {
 public:
  TrustedKeys() = default;
  // Every key of a strict JWK Set (ParseJwks).
  static StatusOr<TrustedKeys> FromJwks(const nlohmann::json& jwks,
                                        const std::string& source,
                                        int64_t now);
  // One P-256 public key (PEM SubjectPublicKeyInfo); kid = its thumbprint.
  static StatusOr<TrustedKeys> FromPem(std::string_view pem,
                                       const std::string& source, int64_t now);
  // A trust file (docs/trust-file.md): strict JSON
  // {"format": "dpuaudit-trust/1", "keys": [{"kid", "thumbprint", "jwk",
  //  "source", "added_at"}, …]}; each thumbprint must match its jwk, kids
  // unique; unknown members rejected at every level.
  static StatusOr<TrustedKeys> ParseTrustFile(ByteView bytes);
  std::string SerializeTrustFile() const;  // what ParseTrustFile reads
  // Whichever of the three the bytes are: a trust file (JSON with "format"
  // dpuaudit-trust/1), a JWK Set (JSON with "keys"), or a PEM public key.
  static StatusOr<TrustedKeys> FromAnyFile(ByteView bytes, const std::string& source,
                                           int64_t now);

  // ALREADY_EXISTS if `kid` is pinned to another key; pinning the same key
  // again is a no-op (returns false), a new one returns true.
  StatusOr<bool> Add(TrustedKey key);
  // True if a key was removed.
  bool Remove(std::string_view kid);
  const TrustedKey* Find(std::string_view kid) const;
  const std::vector<TrustedKey>& keys() const { return keys_; }
  bool empty() const { return keys_.empty(); }

 private:
  std::vector<TrustedKey> keys_;
};

struct AdmissionExpectation {
  std::string node_id;                     // required
  std::optional<std::string> verifier_id;  // ear.verifier-id "instance"
  int64_t now = 0;
  int64_t max_skew_seconds = kDefaultMaxSkewSeconds;
  // Only for display (`result show`): an expired EAR still verifies, and
  // the verdict then says deny "expired".
  bool allow_expired = false;
};

struct AdmissionVerdict {
  bool admit = false;
  std::string reason;  // deny: the failing rules or "expired …"; admit: ""
  std::string kid;     // the pinned key that verified it
  AttestationResult result;
};

// Steps 1-4 above, without the node and verifier checks: for tools that
// display EARs of any node (`dpuaudit result show/summary`).
StatusOr<AttestationResult> VerifyPinnedEar(std::string_view ear_jwt,
                                            const TrustedKeys& pinned,
                                            int64_t now,
                                            int64_t max_skew_seconds,
                                            bool allow_expired,
                                            std::string* kid = nullptr);

// Steps 1-6. INVALID_ARGUMENT if expectation.node_id is empty.
StatusOr<AdmissionVerdict> CheckAdmission(std::string_view ear_jwt,
                                          const TrustedKeys& pinned,
                                          const AdmissionExpectation& expect);

// What a relying party has to decide on: the verifier's answer to GET
// /v1/nodes/{id}/admission, or an EAR file alone.
struct AdmissionAnswer {
  std::string ear;  // the EAR JWT; "" if none came
  // The verifier's decision and reason now; nullopt for an EAR file (the
  // EAR alone decides).
  std::optional<std::string> decision;
  std::string reason;
  // The verifier's node status (issue 15: admitted, failed, stale, held,
  // unattested, pending, revoked; "" from older verifiers). Informational:
  // it never admits by itself.
  std::string status;
  bool malformed = false;  // the verifier's answer was not a JSON object
};

// The admission endpoint's body {"decision", "reason", "ear", …}: each
// member taken if it is a string ("" otherwise); a body that is not a JSON
// object is `malformed`. Never throws.
AdmissionAnswer ParseAdmissionAnswer(std::string_view body);

struct AdmissionDecision {
  bool admit = false;
  std::string reason;    // deny: why; admit: ""
  bool verified = false;  // the EAR verified under a pinned key
  // Of the verified EAR (else empty / 0):
  std::string kid;
  int64_t expires_at = 0;
  std::string verifier_id;  // its ear.verifier-id instance
  std::string status;       // AdmissionAnswer.status, as the verifier said
  // Its reasons that did not pass, each with its action and remediation
  // (what `dpuaudit admit` prints under the decision).
  std::vector<DecisionReason> not_passing = {};
};

// The gate above. Deny reasons: "the verifier's answer is not a JSON
// object.", the verifier's reason when it sent no EAR, "EAR rejected: <the
// CheckAdmission error>", the EAR's failing rules, "the verifier answers
// <decision>: <reason>".
AdmissionDecision DecideAdmission(const AdmissionAnswer& answer,
                                  const TrustedKeys& pinned,
                                  const AdmissionExpectation& expect);

// "rule: observed X, expected Y; …" for the non-passing reasons, "-" if none.
std::string FailingRules(const DpuauditResult& r);

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_ADMISSION_H_

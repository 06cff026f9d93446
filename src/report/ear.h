// Attestation result: an EAR (draft-ietf-rats-ear, JWT serialisation) signed
// ES256 by the verifier, with dpuaudit's decision in a private "dpuaudit"
// member.
//
//   {"eat_profile": "tag:github.com,2023:veraison/ear",
//    "iat": …, "exp": …, "eat_nonce": "<base64url>",
//    "ear.verifier-id": {"developer": …, "build": …, "instance": …},
//    "submods": {"arm-agent": {"ear.status": "affirming",
//                              "ear.trustworthiness-vector": {"hardware": 2,
//                                                             …},
//                              "ear.appraisal-policy-id": "…"}, …},
//    "dpuaudit": {"node_id": …, "decision": "admit"|"deny",
//                 "reasons": [{"rule_id", "verdict", "expected", "observed",
//                              "source", "reason", "tier", "action",
//                              "remediation"}],
//                 "report_sha256": …, "policy": {"name", "sha256"}}}
//
// Claim names follow the draft's JSON serialisation ("ear.status",
// "ear.trustworthiness-vector", ...), which is what EAR libraries (veraison
// ear, jose-based relying parties) read; the draft's dotted names are the
// contract (docs/architecture.md#result-format).
//
// Guarantees:
//  - SerializeEar is deterministic (sorted members, compact).
//  - ParseEar is strict and never throws: unknown members are rejected at
//    every level we model; eat_profile is exactly kEarProfile; iat >= 0,
//    exp > iat; eat_nonce (optional) is base64url of 8-64 bytes (EAT
//    §4.1); ear.verifier-id has non-empty developer and build; submods is a
//    non-empty object whose names are in kKnownSubmods; each trustworthiness
//    claim is an integer in [-128, 127]; ear.status is not better than the
//    worst tier of its vector; "admit" is impossible when any submod is
//    contraindicated (§6); report_sha256 and policy.sha256 are 64 lower-case
//    hex digits; reasons have a rule_id, a verdict pass|fail|unknown and a
//    tier hardware-rooted|corroborated|self-reported (§2); a reason's
//    "action" (optional: EARs before issue 15 have none) is deny|warn and
//    its "remediation" (optional) is non-empty text of at most
//    kMaxRemediationBytes.
//  - SignEar signs only what ParseEar accepts (header {"alg":"ES256","kid",
//    "typ":"JWT"}): it checks the value with ValidateEar, which applies
//    ParseEar's rules without a second parse.
//  - VerifyEar: signature (ES256 pinned, typ JWT) first, then ParseEar, then
//    expiry: now >= exp is DEADLINE_EXCEEDED `EAR expired at <exp>, now
//    <now>.` unless allow_expired.
// Does not: check iat against the clock, the nonce against a challenge, or
// that the vector values are the ones AR4SI assigns to a given meaning.
#ifndef DPUAUDIT_REPORT_EAR_H_
#define DPUAUDIT_REPORT_EAR_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/bytes.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/finding.h"
#include "common/status.h"

namespace dpuaudit::report {

inline constexpr std::string_view kEarProfile =
    "tag:github.com,2023:veraison/ear";
inline constexpr size_t kMaxEarBytes = 1u << 20;  // 1 MiB

// Submodule names, one per evidence path (docs/architecture.md#result-format).
inline constexpr std::string_view kSubmodArmAgent = "arm-agent";
inline constexpr std::string_view kSubmodPosture = "posture";
inline constexpr std::string_view kSubmodTpm = "tpm";
inline constexpr std::string_view kSubmodIrot = "irot";
inline constexpr std::string_view kSubmodErot = "erot";
inline constexpr std::string_view kSubmodBmc = "bmc";
inline constexpr std::string_view kKnownSubmods[] = {
    kSubmodArmAgent, kSubmodPosture, kSubmodTpm, kSubmodIrot, kSubmodErot, kSubmodBmc};

// AR4SI trust tiers (draft-ietf-rats-ar4si §2.3.1), in order of severity:
// kNone < kAffirming < kWarning < kContraindicated.
enum class ArStatus { kNone, kAffirming, kWarning, kContraindicated };
std::string_view ArStatusName(ArStatus s);  // "none", "affirming", ...
std::optional<ArStatus> ParseArStatus(std::string_view s);

// Tier of one trustworthiness claim value:
//   none             -1..1
//   affirming         2..31   and  -2..-32
//   warning          32..95   and -33..-96
//   contraindicated  96..127  and -97..-128
// (negative values are the draft's implementation-specific mirror ranges).
// Values outside [-128, 127] are contraindicated: callers never produce
// them and ParseEar rejects them.
ArStatus TierOf(int value);

// The claim values dpuaudit assigns, written once (the verifier's appraisal
// and TPM steps use them): 2 affirming, 32 warning (approved but obsolete),
// 33 warning (unrecognised / not yet approved), 96 contraindicated.
inline constexpr int kAr4siAffirming = 2;
inline constexpr int kAr4siWarning = 32;
inline constexpr int kAr4siUnrecognised = 33;
inline constexpr int kAr4siContraindicated = 96;

// The eight AR4SI trustworthiness claims; absent ones are not asserted.
struct TrustVector {
  std::optional<int> instance_identity;
  std::optional<int> configuration;
  std::optional<int> executables;
  std::optional<int> file_system;
  std::optional<int> hardware;
  std::optional<int> runtime_opaque;
  std::optional<int> storage_opaque;
  std::optional<int> sourced_data;
  bool operator==(const TrustVector&) const = default;
};

// The eight claims by their AR4SI names ("instance-identity", ...), in the
// draft's order: the one table the EAR codec and every printer use.
struct TrustVectorMember {
  const char* name;
  std::optional<int> TrustVector::*member;
};
const std::vector<TrustVectorMember>& TrustVectorMembers();

// The worst tier across the claims present; kNone for an empty vector.
ArStatus StatusOfVector(const TrustVector& v);

struct Submod {
  ArStatus status = ArStatus::kNone;  // "ear.status"
  TrustVector trust_vector;           // "ear.trustworthiness-vector"
  std::string appraisal_policy_id;    // omitted when empty
  bool operator==(const Submod&) const = default;
};

// "ear.verifier-id": developer and build name the software (AR4SI
// §2.2.1); `instance` (optional member "instance", 1-128 characters of
// [A-Za-z0-9._-]) names the deployment (`dpuaudit-verifier serve
// --verifier-id`), so a relying party can insist on the verifier it trusts
// (report/admission.h).
struct VerifierId {
  std::string developer;
  std::string build;
  std::string instance;  // omitted when empty
  bool operator==(const VerifierId&) const = default;
};

// Trust tier a claim reached (docs/architecture.md#trust-tiers).
enum class ClaimTier { kHardwareRooted, kCorroborated, kSelfReported };
std::string_view ClaimTierName(ClaimTier t);  // "hardware-rooted", ...
std::optional<ClaimTier> ParseClaimTier(std::string_view s);

enum class Decision { kDeny, kAdmit };
std::string_view DecisionName(Decision d);  // "deny" | "admit"

inline constexpr std::string_view kActionDeny = "deny";
inline constexpr std::string_view kActionWarn = "warn";
inline constexpr size_t kMaxRemediationBytes = 1024;

struct DecisionReason {
  std::string rule_id;
  Verdict verdict = Verdict::kUnknown;
  std::string expected;
  std::string observed;
  std::string source;
  std::string reason;
  ClaimTier tier = ClaimTier::kSelfReported;
  // Provenance (members "path" and "key", omitted when empty): the evidence
  // path that proved the claim ("agent", "agent+bmc", "tpm", "bmc",
  // "irot", "erot", "verifier") and the key that signed it ("agent key
  // <thumbprint>", "BMC TLS key <sha256>", "IRoT key <sha256> under
  // anchor <sha256>", ...).
  std::string path = {};
  std::string key = {};
  // What the rule does to the decision when it does not pass (member
  // "action", kActionDeny | kActionWarn; empty only in EARs signed before
  // issue 15), and what an operator does about it (member "remediation",
  // set for reasons that do not pass; omitted when empty;
  // docs/remediation.md).
  std::string action = {};
  std::string remediation = {};
  bool operator==(const DecisionReason&) const = default;
};

// Every text field of `r` replaced by SafeText of it (common/safe_text.h;
// idempotent): what the verifier applies to each reason before it goes into
// an EAR, the store or a response.
void MakeSafe(DecisionReason& r);

// The JSON form of reasons, one object each with "rule_id", "verdict"
// (VerdictName), "expected", "observed", "source", "reason" and "tier"
// (ClaimTierName), and "path", "key", "action", "remediation" when not
// empty: the EAR's "reasons", and the verifier's responses and stored job
// results.
nlohmann::json DecisionReasonsJson(const std::vector<DecisionReason>& reasons);

struct PolicyRef {
  std::string name;
  std::string sha256;  // hex
  bool operator==(const PolicyRef&) const = default;
};

// The collateral that judged a result (issue 16 §2, docs/audit.md
// #collateral): the content hash of the whole reference-value set the
// appraisal saw (RefManifestJson of every release, canonical), the releases
// its findings matched with the hash of each one's canonical manifest, and
// the trust-anchor sets it relied on by hash. EAR member
// "dpuaudit.collateral", omitted when empty (EARs signed before issue 16).
struct CollateralRef {
  std::string set;     // "ek-ca" | "dice-roots"
  std::string sha256;  // hex
  bool operator==(const CollateralRef&) const = default;
};
struct MatchedRelease {
  std::string release;
  std::string sha256;  // hex SHA-256 of the release's canonical manifest
  bool operator==(const MatchedRelease&) const = default;
};
struct Collateral {
  std::string refvals_sha256;            // "" = not recorded
  std::vector<MatchedRelease> matched;   // sorted by release
  std::vector<CollateralRef> trust_anchors;  // sorted by set
  bool empty() const {
    return refvals_sha256.empty() && matched.empty() && trust_anchors.empty();
  }
  bool operator==(const Collateral&) const = default;
};

struct DpuauditResult {
  std::string node_id;
  Decision decision = Decision::kDeny;
  std::vector<DecisionReason> reasons;
  std::string report_sha256;  // hex SHA-256 of the report JWS
  PolicyRef policy;
  Collateral collateral;
  bool operator==(const DpuauditResult&) const = default;
};

struct AttestationResult {
  std::string profile = std::string(kEarProfile);  // "eat_profile"
  int64_t iat = 0;
  int64_t exp = 0;
  std::string nonce;  // "eat_nonce", base64url; omitted when empty
  VerifierId verifier_id;
  std::map<std::string, Submod> submods;
  DpuauditResult dpuaudit;
  bool operator==(const AttestationResult&) const = default;
};

// True for a valid VerifierId::instance (and `--verifier-id`).
bool ValidVerifierInstance(std::string_view id);

std::string SerializeEar(const AttestationResult& ar);
StatusOr<AttestationResult> ParseEar(ByteView payload);
// The value rules of ParseEar checked on an AttestationResult: OK exactly
// when ParseEar(SerializeEar(ar)) is OK (ear_test checks this on every
// mutation it knows), with the same messages. SignEar uses it instead of
// re-parsing what it just serialised.
Status ValidateEar(const AttestationResult& ar);
StatusOr<std::string> SignEar(const AttestationResult& ar, const Signer& signer,
                              const std::string& kid);
StatusOr<AttestationResult> VerifyEar(std::string_view jwt,
                                      const Verifier& verifier,
                                      const Clock& clock,
                                      bool allow_expired = false);

}  // namespace dpuaudit::report

#endif  // DPUAUDIT_REPORT_EAR_H_

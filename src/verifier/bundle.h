// Audit bundles (issue 16 §3, docs/audit.md#bundles): one self-contained
// JSON file with a node's signed reports and EARs, the exact policy
// documents and reference values that judged them (by hash), the appraisal
// contexts, the verifier's public keys, and the audit-log entries from the
// node's first exported entry up to a signed checkpoint.
//
// VerifyBundle works offline and trusts only the verifier keys it is
// given: it verifies the checkpoint, the chain of entries up to it, every
// EAR, every report (under the node key the appraisal context names), every
// collateral hash, and that the items and the log agree both ways (an item
// without its entry, or an entry of the node within the window without its
// item, fails — unless a retention entry records its removal). It then
// re-appraises each report through verifier::Appraise, the function the
// verifier itself runs, and confirms each recorded decision.
//
// Guarantees: ParseBundle is strict (unknown members refused, sizes
// bounded); VerifyBundle never throws and names each failing item
// ("report 12 (sha256 3fa2…)", "result 9", "audit log entry 41",
// "checkpoint", "collateral policy 9ab1…") with why. Does not: prove the
// log was not rewritten by someone holding the verifier key (compare the
// checkpoint with one kept elsewhere); re-derive the BMC path (its
// bmc/irot/erot reasons are taken from the signed EAR: "partial").
#ifndef DPUAUDIT_VERIFIER_BUNDLE_H_
#define DPUAUDIT_VERIFIER_BUNDLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "report/admission.h"
#include "verifier/audit_chain.h"
#include "verifier/policy.h"

namespace dpuaudit::verifier {

inline constexpr std::string_view kBundleFormat = "dpuaudit-bundle/1";
inline constexpr size_t kMaxBundleBytes = size_t{1} << 30;  // 1 GiB

struct BundleReport {
  int64_t report_id = 0;
  std::string sha256;
  int64_t received_at = 0;
  bool accepted = false;
  std::string error;
  int64_t bytes = 0;
  std::string jws;  // "" when retention dropped the body
};

struct BundleResult {
  int64_t result_id = 0;
  std::string report_sha256;
  int64_t created_at = 0;
  std::string decision;  // as stored: "admit" | "deny"
  std::string ear;       // the signed EAR (compact JWS)
  std::string context;   // AppraisalContextJson; "" when not recorded
};

struct BundleCollateral {
  std::string sha256;
  std::string kind;  // "policy" | "refvals"
  std::string body;
};

struct Bundle {
  std::string node_id;
  int64_t exported_at = 0, since = 0, until = 0;
  std::string verifier_instance;
  nlohmann::json verifier_keys;  // JWKS
  std::vector<BundleReport> reports;
  std::vector<BundleResult> results;
  std::vector<BundleCollateral> collateral;
  std::vector<ChainedEntry> entries;
  std::string checkpoint;  // compact JWS
};

nlohmann::json BundleJson(const Bundle& b);
// Strict structure only (nothing is verified): INVALID_ARGUMENT naming the
// member, RESOURCE_EXHAUSTED over kMaxBundleBytes.
StatusOr<Bundle> ParseBundle(std::string_view text);

struct BundleFailure {
  std::string item;  // what failed
  std::string why;
};

struct BundleVerdict {
  bool verified = false;  // no failure
  std::vector<BundleFailure> failures;
  Checkpoint checkpoint;
  std::string checkpoint_kid;
  int64_t entries = 0;
  int64_t reports = 0, results = 0;
  int64_t reappraised_full = 0;     // recomputed EAR equal to the signed one
  int64_t reappraised_partial = 0;  // BMC path taken from the EAR
  int64_t not_reappraisable = 0;    // no context or no report body (pruned)
  int64_t pruned = 0;               // items retention removed, as logged
};

BundleVerdict VerifyBundle(const Bundle& b, const report::TrustedKeys& keys);

// Policy what-if (issue 16 §4): each result of a VERIFIED bundle
// re-appraised with `candidate` instead of the recorded policy (the same
// reference values, node and time), with the rule ids whose outcome
// differs. Results that cannot be re-appraised are listed with `error`.
struct WhatIf {
  int64_t result_id = 0;
  std::string node_id;
  int64_t created_at = 0;
  std::string recorded;  // decision
  std::string candidate; // decision under the candidate ("" on error)
  std::vector<std::string> newly_failing;  // deny-action reasons now not passing
  std::vector<std::string> no_longer_failing;
  std::string error;
};
std::vector<WhatIf> WhatIfUnder(const Bundle& b, const Policy& candidate);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_BUNDLE_H_

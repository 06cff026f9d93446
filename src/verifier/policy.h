// Policy: which posture findings a node must show to be admitted, loaded
// from a JSON file whose schema is docs/policy-schema.md
// ("dpuaudit-policy/1").
//
// Guarantees:
//  - A Policy exists only after Create() validated it completely: strict JSON
//    (no duplicate keys, valid UTF-8), the exact schema string, no unknown
//    field at any level, every rule id in the caller's catalogue and named
//    once, exactly one of expect / min_version (min_version only for
//    version-valued rules, and it must parse), every expect and warn value
//    allowed for its rule, action in {deny, warn}, remediation (optional)
//    1-1024 bytes of safe text,
//    min_tier in {self-reported, corroborated, hardware-rooted},
//    decision_ttl_seconds in [10, 86400], at least one rule. Errors name the
//    field and rule index: `rules[2].id "host.foo" is not a known rule.`
//  - sha256() is over the exact bytes given to Create (what an audit bundle
//    records), not over a re-serialisation.
//  - Evaluate is fail-closed: a rule is admitted only by a finding that
//    exists once, is not unknown, has an observed value equal to the
//    policy's expect (or, for min_version, parses and is not lower), and
//    reached the rule's min_tier. A deny rule that is not pass denies unless
//    the observed value is one of its warn values; a warn rule that is not
//    pass is reported but admits. A failing rule's reason ends with the
//    finding's own reason (which names components, releases, approvals).
//  - Copyable value type; const methods are thread-safe.
// Does not: check that the findings are authentic or were re-derived from
// evidence (the appraisal pipeline's job); evaluate findings the policy does
// not name (they are ignored); use a finding's own expected/verdict beyond
// "unknown" (the policy's expect wins).
#ifndef DPUAUDIT_VERIFIER_POLICY_H_
#define DPUAUDIT_VERIFIER_POLICY_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "attest/tpm_types.h"
#include "common/finding.h"
#include "common/status.h"

namespace dpuaudit::verifier {

// What a rule may name, supplied by the caller (the probe catalogue).
struct RuleSpec {
  std::string id;  // probe id, e.g. "dpu.operation_mode"
  std::vector<std::string> allowed_values;  // empty: any non-empty string
  // Non-empty for version-valued findings ("nic-fw", "atf", "uefi", "bsp"):
  // the rule may then give "min_version" instead of "expect", compared with
  // bluefield::ParseComparableVersion(version_component, ...).
  std::string version_component;
};

enum class RuleAction { kDeny, kWarn };
std::string_view RuleActionName(RuleAction a);  // "deny" | "warn"

// How strongly a claim is backed (docs/architecture.md#trust-tiers). Ordered: a
// higher tier satisfies every lower min_tier.
enum class Tier { kSelfReported = 0, kCorroborated = 1, kHardwareRooted = 2 };
std::string_view TierName(Tier t);  // "self-reported" | "corroborated" | ...
std::optional<Tier> ParseTier(std::string_view s);

enum class Decision { kAdmit, kDeny };
std::string_view DecisionName(Decision d);  // "admit" | "deny"

struct PolicyRule {
  std::string id;
  std::string expect;
  RuleAction action = RuleAction::kDeny;
  Tier min_tier = Tier::kSelfReported;
  // Set when "expect" is an array: any of these passes; `expect` then holds
  // them joined by "|" for display. Empty for a single expected value.
  std::vector<std::string> expect_any;
  // "min_version" rules (expect then holds ">= <min_version>"): observed
  // must parse in `version_component`'s scheme and be >= min_version. For
  // "nic-fw" the first field is the device family (24 = BlueField-2, 32 =
  // BlueField-3): a policy may list one minimum per family, and a version is
  // only compared with the minimum of its own family (none: unknown).
  std::string min_version;  // display: the minimums joined by "|"
  std::vector<std::string> min_versions;
  std::string version_component;
  // Observed values that make a failing rule a warning whatever `action`
  // says (e.g. "obsolete" for reference values). Each must be an allowed
  // value and not an expected one.
  std::vector<std::string> warn_values;
  // "sticky": true (deny rules only, issue 15): a failure holds the node
  // denied until an administrator acknowledges it (verifier/node_status.h).
  bool sticky = false;
  // "remediation": the operator's text for this rule when it does not
  // pass, replacing the built-in one (verifier/remediation.h); empty: the
  // built-in. 1-1024 bytes of safe text (common/safe_text.h).
  std::string remediation = {};

  bool operator==(const PolicyRule&) const = default;
};

struct RuleResult {
  std::string rule_id;
  Verdict verdict = Verdict::kUnknown;
  std::string expected;  // the policy's expect
  std::string observed;  // from the finding ("" if none)
  std::string source;    // the finding's evidence source ("" if none)
  std::string reason;    // why, for fail and unknown ("" for pass)
  RuleAction action = RuleAction::kDeny;  // kWarn also for warn_values
  Tier tier = Tier::kSelfReported;  // tier the finding reached
  std::string remediation = {};     // the rule's override ("" if none)

  bool operator==(const RuleResult&) const = default;
};

struct PolicyOutcome {
  Decision decision = Decision::kDeny;
  std::vector<RuleResult> results;  // one per rule, in policy order
};

// The policy's "tpm" section (issue 5), all optional:
//   "tpm": {"applies_to": "bound-nodes" | "all-nodes",
//           "pcr_selection": {"sha256": [0, 1, ..., 15]},
//           "allow_uncertified_ek": false}
// applies_to: which nodes the tpm.* rules judge. "bound-nodes" (default):
// only nodes enrolled with a TPM; for others the tpm.* rules are not
// applicable (no result). "all-nodes": a node without a TPM fails them.
// pcr_selection: what the agent must quote (default sha256 PCRs 0-15).
// allow_uncertified_ek: enroll a TPM whose EK has no certificate chaining
// to a trusted manufacturer CA (default false: enrollment is refused).
struct TpmPolicy {
  bool all_nodes = false;
  attest::PcrSelection pcr_selection = attest::PcrSelection::DefaultSha256();
  bool allow_uncertified_ek = false;
};

// What Evaluate needs beyond the findings.
struct EvaluationContext {
  // Rules with these ids produce no result (e.g. tpm.* for a node without
  // a TPM under applies_to "bound-nodes").
  std::set<std::string> not_applicable;
  // The tier each finding reached; findings not named are self-reported.
  std::map<std::string, Tier> tiers;
};

// The evidence paths a policy's "require" may name: the BMC's Redfish
// view, the IRoT's and the ERoT's SPDM measurements, the TPM quote.
inline constexpr std::string_view kEvidencePaths[] = {"bmc", "irot", "erot", "tpm"};

class Policy {
 public:
  static constexpr std::string_view kSchema = "dpuaudit-policy/1";
  static constexpr int64_t kMinTtlSeconds = 10;
  static constexpr int64_t kMaxTtlSeconds = 86400;
  static constexpr size_t kMaxBytes = 64 * 1024;
  static constexpr size_t kMaxRules = 256;

  // Parses and validates. INVALID_ARGUMENT with the field named on any
  // defect; RESOURCE_EXHAUSTED over kMaxBytes. `known_rules` must not list
  // an id twice (INVALID_ARGUMENT).
  static StatusOr<Policy> Create(std::string_view json_bytes,
                                 const std::vector<RuleSpec>& known_rules);

  const std::string& name() const { return name_; }
  const std::string& description() const { return description_; }
  const std::string& sha256() const { return sha256_; }  // lower-case hex
  // The exact bytes it was created from (what sha256() hashes): the
  // collateral an auditor re-appraises with (issue 16).
  const std::string& document() const { return document_; }
  int64_t decision_ttl_seconds() const { return ttl_seconds_; }
  const std::vector<PolicyRule>& rules() const { return rules_; }

  const TpmPolicy& tpm() const { return tpm_; }
  // "require": the evidence paths (kEvidencePaths) whose evidence must
  // have verified for an admit, whatever the rules say; empty by default.
  const std::vector<std::string>& required_paths() const { return required_paths_; }

  // Findings are self-reported unless `ctx.tiers` says otherwise.
  PolicyOutcome Evaluate(const std::vector<Finding>& findings,
                         const EvaluationContext& ctx = {}) const;

 private:
  Policy() = default;
  static StatusOr<Policy> CreateUnchecked(
      std::string_view json_bytes, const std::vector<RuleSpec>& known_rules);
  std::string name_;
  std::string document_;
  std::string description_;
  std::string sha256_;
  int64_t ttl_seconds_ = 0;
  std::vector<PolicyRule> rules_;
  TpmPolicy tpm_;
  std::vector<std::string> required_paths_;
};

// Reads at most Policy::kMaxBytes from `path` and calls Policy::Create.
// Errors are prefixed with the path.
StatusOr<Policy> LoadPolicyFile(const std::string& path,
                                const std::vector<RuleSpec>& known_rules);

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_POLICY_H_

#include "apps/agent/local_policy.h"

#include <algorithm>
#include <set>
#include <string>

#include "verifier/refvals/appraisal.h"
#include "verifier/tpm_appraisal.h"

namespace dpuaudit::apps {
namespace {

constexpr char kRefvalReason[] =
    "appraised by the verifier against its reference values; not decided locally.";
constexpr char kTpmReason[] =
    "appraised by the verifier from the TPM quote and its TPM binding; not decided "
    "locally.";

}  // namespace

bool AllFindingsPass(const std::vector<Finding>& findings) {
  return std::all_of(findings.begin(), findings.end(),
                     [](const Finding& f) { return f.verdict == Verdict::kPass; });
}

verifier::PolicyOutcome AppraiseLocally(const verifier::Policy& policy,
                                        const std::vector<Finding>& findings) {
  std::set<std::string> refval_rules, tpm_rules;
  for (std::string_view id : verifier::RefRuleIds()) refval_rules.emplace(id);
  for (const verifier::RuleSpec& spec : verifier::TpmRuleSpecs()) tpm_rules.insert(spec.id);

  verifier::EvaluationContext ctx;
  for (const verifier::PolicyRule& rule : policy.rules()) {
    if (refval_rules.count(rule.id) || tpm_rules.count(rule.id)) {
      ctx.not_applicable.insert(rule.id);
    }
  }
  verifier::PolicyOutcome decided = policy.Evaluate(findings, ctx);

  // Evaluate's results in policy order, with the verifier's rules put back
  // where the policy names them.
  verifier::PolicyOutcome out;
  out.decision = decided.decision;
  size_t next = 0;
  for (const verifier::PolicyRule& rule : policy.rules()) {
    if (!ctx.not_applicable.count(rule.id)) {
      if (next < decided.results.size()) out.results.push_back(decided.results[next++]);
      continue;
    }
    verifier::RuleResult r;
    r.rule_id = rule.id;
    r.verdict = Verdict::kUnknown;
    r.expected = rule.expect;
    r.action = rule.action;
    r.reason = refval_rules.count(rule.id) ? kRefvalReason : kTpmReason;
    out.results.push_back(std::move(r));
  }
  return out;
}

}  // namespace dpuaudit::apps

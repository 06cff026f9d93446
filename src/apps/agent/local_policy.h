// The agent's local view of its findings (`dpuaudit-agent probe`), decided
// in one place each: without a policy, whether every finding passes; with
// one, the policy's own evaluation (verifier::Policy::Evaluate) of the
// rules this agent can decide.
//
// Guarantees: the rules the verifier appraises from what only it holds —
// reference values (verifier::RefRuleIds) and the TPM quote with its
// binding (verifier::TpmRuleSpecs) — are listed, in policy order, as
// unknown "not decided locally" with their expect and action, and take no
// part in the decision; every other rule's result and the decision are
// exactly Evaluate's over the same findings.
// Does not: stand in for the verifier's appraisal (no evidence
// re-derivation, no tiers: every finding is self-reported here).
#ifndef DPUAUDIT_APPS_AGENT_LOCAL_POLICY_H_
#define DPUAUDIT_APPS_AGENT_LOCAL_POLICY_H_

#include <vector>

#include "common/finding.h"
#include "verifier/policy.h"

namespace dpuaudit::apps {

// True when every finding is pass (an empty list passes).
bool AllFindingsPass(const std::vector<Finding>& findings);

verifier::PolicyOutcome AppraiseLocally(const verifier::Policy& policy,
                                        const std::vector<Finding>& findings);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_AGENT_LOCAL_POLICY_H_

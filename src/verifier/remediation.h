// Built-in remediation: for every rule id the verifier judges, what an
// operator does when it does not pass — the exact command or Redfish call
// where one exists (docs/remediation.md, with the public NVIDIA sources).
//
// Guarantees:
//  - Every id in KnownRules() (verifier/service.h), and every reason id the
//    appraisal builds without a policy rule (device.identity,
//    agent.consistency, require.<path>), has a non-empty entry of at most
//    report::kMaxRemediationBytes of safe ASCII text (tested).
//  - Static data; thread-safe.
// Does not: run anything, or know the node's MST device path (commands say
// /dev/mst/<mst device>: the one `mst status -v` lists on the DPU Arm).
#ifndef DPUAUDIT_VERIFIER_REMEDIATION_H_
#define DPUAUDIT_VERIFIER_REMEDIATION_H_

#include <string_view>
#include <vector>

#include "report/ear.h"
#include "verifier/policy.h"

namespace dpuaudit::verifier {

struct RemediationEntry {
  std::string_view rule_id;
  std::string_view text;
};

// The whole table, in catalogue order (docs/remediation.md prints it).
const std::vector<RemediationEntry>& RemediationTable();

// The built-in remediation for `rule_id`; a generic "investigate" text for
// an id the table does not hold (never empty).
std::string_view BuiltinRemediation(std::string_view rule_id);

// True when the table holds `rule_id` itself.
bool HasBuiltinRemediation(std::string_view rule_id);

// Sets `r.action` to RuleActionName(action) and, for a reason that is not
// pass, `r.remediation` to `override_text` or, when that is empty, the
// built-in text; a pass keeps no remediation.
void SetActionAndRemediation(report::DecisionReason& r, RuleAction action,
                             std::string_view override_text = {});

}  // namespace dpuaudit::verifier

#endif  // DPUAUDIT_VERIFIER_REMEDIATION_H_

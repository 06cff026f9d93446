// `dpuaudit policy check FILE [--json]`: validates a policy exactly as the
// verifier loads it (verifier::Policy::Create with the verifier's rule
// catalogue, KnownRules()) and prints what it requires: name, content hash
// (SHA-256 of the exact bytes, what EARs and audit bundles name), decision
// TTL, the evidence paths it requires, the TPM section and every rule with
// its action, expected value or minimum version, minimum trust tier,
// stickiness, warn values and the remediation an operator will see.
//
// Exit codes: 0 a valid policy, 1 the file was read but is not a valid
// policy (the message names the field and rule index), 2 the file cannot be
// read (or usage). `-` reads stdin.
// Does not: evaluate the policy against any node (`dpuaudit policy test`,
// issue 16, will).
#ifndef DPUAUDIT_APPS_CLI_POLICY_H_
#define DPUAUDIT_APPS_CLI_POLICY_H_

#include <string>

namespace dpuaudit::apps {

int PolicyCheck(const std::string& file, bool json, bool wide);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_POLICY_H_

// Reading reports and results (issue 16 §5): the pieces `dpuaudit report
// show` and `dpuaudit result show` print beyond the raw claims.
//
//  - findings grouped fail, unknown, pass (in that order), each with
//    observed vs expected, its trust tier and evidence source;
//  - a firmware table (component, version, digest) and a boot-chain table
//    (stage, digest, integrity, signed/verified as the report's boot_chain
//    says: the agent's boot_chain carries digests and CRCs, never a
//    signature check, so that column says "not recorded");
//  - the reference-value collateral an EAR records (dpuaudit.collateral:
//    the refvals sha256, the releases that matched, the trust-anchor sets'
//    hashes); an EAR without it says "not recorded".
//
// Guarantees: text fits 100 columns; the JSON forms only add members.
// Does not: check any signature (the callers do), nor re-appraise.
#ifndef DPUAUDIT_APPS_CLI_REPORT_VIEW_H_
#define DPUAUDIT_APPS_CLI_REPORT_VIEW_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/finding.h"
#include "report/claims.h"
#include "report/ear.h"

namespace dpuaudit::apps {

// One finding to show: rule, verdict, observed, expected, tier, source,
// reason (from a report's finding or an EAR's reason).
struct FindingView {
  std::string rule_id;
  Verdict verdict = Verdict::kUnknown;
  std::string observed, expected, tier, source, reason;
  std::string note;  // e.g. "re-derived: fail" (report show), "" otherwise
};

// "fail (2):" then per finding "  rule: observed "X", expected "Y"" and
// "      tier T, source S" and the wrapped reason; "unknown (n):"; then
// "pass (n):" as a wrapped list of ids (their details: --json). Empty
// groups are printed as "fail (0)".
std::string GroupedFindingsText(const std::vector<FindingView>& findings);
// {"fail": [rule ids], "unknown": [...], "pass": [...]}
nlohmann::json GroupedFindingsJson(const std::vector<FindingView>& findings);
std::vector<FindingView> FindingViews(const std::vector<report::DecisionReason>& reasons);

// The firmware table rows from a report: atf, uefi, bsp, os (the agent's
// bfver), nic-fw (running, and staged when it differs), each {"component",
// "version", "digest"} (digest null: versions are not hashed), then the
// primary boot partition as component "boot-stream" with its sha256.
nlohmann::json FirmwareTableJson(const report::ReportClaims& claims);
// The boot-chain rows: each image of the primary partition ({"stage":
// "bl31", "digest": "sha384:…", "integrity": "crc ok"|"CRC BAD",
// "signed": "not recorded"}), then each OS artefact ("os:kernel", sha384 or
// the reason it was not measured). [] when the report has no boot_chain.
nlohmann::json BootChainTableJson(const report::ReportClaims& claims);
std::string FirmwareTablesText(const report::ReportClaims& claims);

// The EAR payload's dpuaudit.collateral, normalised: {"recorded": false}
// when absent, else {"recorded": true, "refvals_sha256", "matched":
// [{"release", "sha256"}], "trust_anchors": [{"set", "sha256"}], "policy"
// (dpuaudit.policy when present)}. Malformed members become "error".
nlohmann::json CollateralJson(const nlohmann::json& ear_payload);
std::string CollateralText(const nlohmann::json& collateral);

// The releases the EAR's refval.* reasons name as matched ("matches
// release X"), in order, each once: what an EAR without collateral still
// tells.
std::vector<std::string> ReleasesNamedInReasons(const std::vector<report::DecisionReason>& r);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_REPORT_VIEW_H_

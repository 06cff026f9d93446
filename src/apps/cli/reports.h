// The CLI's report commands: `dpuaudit report show|firmware|export-quote`.
// Each returns the process exit code: 0 shown / written, 2 an error or a
// report whose signature does not verify (its claims are then never
// shown; the reason goes to stderr, or the "signature:" line / the JSON
// "signature" member).
//
// Guarantees: a report is verified when a key is given (--pubkey, or the
// node's enrolled key from --verifier); without one it is shown and
// labelled "NOT CHECKED".
#ifndef DPUAUDIT_APPS_CLI_REPORTS_H_
#define DPUAUDIT_APPS_CLI_REPORTS_H_

#include <string>

#include "apps/cli/api_client.h"

namespace dpuaudit::apps {

// `verifier`: where to read the node's enrolled key (or AK) from:
// --verifier URL, --cacert, the reader (or admin) token, --insecure-http.
// `file` "-" reads stdin (once). `as_json`: one JSON document on stdout
// (the schema named below), the same exit code; errors still go to stderr
// with exit 2 and no JSON.

// `report show`: signature, claims, evidence, and every finding next to
// the one re-derived here from the evidence (isolation::CollectDeviceFacts,
// as the verifier does), failing and unknown first. Text fits 100 columns.
// JSON: docs/schemas/report-show.schema.json.
// Issue 16 §5: findings also grouped fail, unknown, pass with tier and
// source; a firmware table and a boot-chain table (apps/cli/report_view.h);
// `ear_file` (optional, "-" reads stdin): the EAR of this report (matched by
// the report's sha256, exit 2 otherwise), whose matched releases and
// collateral are shown next to the firmware table.
int ReportShow(const std::string& file, const std::string& pubkey_file,
               const ReadTarget& verifier, bool as_json, const std::string& ear_file = "");
// `report firmware`: the firmware and boot-chain sections (DescribeFirmware;
// JSON: FirmwareSectionsJson, docs/schemas/report-firmware.schema.json).
int ReportFirmware(const std::string& file, const std::string& pubkey_file,
                   const ReadTarget& verifier, bool as_json);
// `report export-quote` (quote.h): the AK comes from `ak` (a file), or
// from the verifier's record of the node that signed the report. JSON:
// docs/schemas/report-export-quote.schema.json.
int ExportQuoteCmd(const std::string& file, const std::string& out, const std::string& ak,
                   const ReadTarget& verifier, bool as_json);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_REPORTS_H_

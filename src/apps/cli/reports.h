// The CLI's report commands: `dpuaudit report show|firmware|export-quote`.
// Each returns the process exit code: 0 shown / written, 2 an error or a
// report whose signature does not verify (its claims are then never
// shown; the reason goes to stderr or the "signature:" line).
//
// Guarantees: a report is verified when a key is given (--pubkey, or the
// node's enrolled key from --verifier); without one it is shown and
// labelled "NOT CHECKED".
#ifndef DPUAUDIT_APPS_CLI_REPORTS_H_
#define DPUAUDIT_APPS_CLI_REPORTS_H_

#include <string>

#include "apps/cli/api_client.h"

namespace dpuaudit::apps {

// A verifier to read node state from: --verifier URL, --cacert, the
// reader (or admin) token, --insecure-http.
// `report show`: signature, claims, evidence, and every finding next to
// the one re-derived here from the evidence.
int ReportShow(const std::string& file, const std::string& pubkey_file,
               const ReadTarget& verifier);
// `report firmware`: the firmware and boot-chain sections (DescribeFirmware).
int ReportFirmware(const std::string& file, const std::string& pubkey_file,
                   const ReadTarget& verifier);
// `report export-quote`: the AK comes from `ak` (a file), or from the
// verifier's record of the node that signed the report.
int ExportQuoteCmd(const std::string& file, const std::string& out, const std::string& ak,
                   const ReadTarget& verifier);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_REPORTS_H_

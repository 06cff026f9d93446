// `dpuaudit refvals import-eventlog | import-report | withdraw` (issue 16
// §6): reference values proposed from a known-good machine instead of
// written by hand, staged as PENDING for an administrator to promote, and
// the withdrawal of a pending release imported by mistake.
//
// Guarantees:
//  - every proposal is one release in state "pending" sent through the
//    ordinary import (POST /v1/refvals, docs/refvals-schema.md), validated
//    locally first (verifier::ParseRefManifest) so a bad manifest is never
//    sent; --dry-run prints that manifest and sends nothing;
//  - import-eventlog: tpm-pcr:<n> sha256 values from replaying the TCG
//    event log (attest::ReplayEventLog), by default PCRs 0-9 that the log
//    extends (PCR 10 and up are runtime measurements), --pcr to choose; and
//    one tpm-app value per EV_EFI_BOOT_SERVICES_APPLICATION event;
//  - import-report: the report's signature is checked with --node-key
//    before anything in it is used (exit 1 when it does not verify); without
//    a key every output says, on stderr and in --json ("authenticated":
//    false), that the values come from an UNAUTHENTICATED file. Values:
//    the atf/uefi/bsp/os and nic-fw versions re-derived from the report's
//    evidence (as the verifier derives its FirmwareFacts), the primary boot
//    partition's images (bfb:<name>) and the measured OS artefacts
//    (os:<role>) by SHA-384, and, when the report carries a TPM event log,
//    its tpm-pcr / tpm-app values as import-eventlog proposes them.
// Does not: verify the event log against a quote (the administrator vouches
// for the machine it came from), nor promote anything.
#ifndef DPUAUDIT_APPS_CLI_REFVALS_IMPORT_H_
#define DPUAUDIT_APPS_CLI_REFVALS_IMPORT_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/cli/api_client.h"
#include "attest/eventlog.h"
#include "common/status.h"

namespace dpuaudit::apps {

struct ProposeOptions {
  std::string file;     // event log or report; "-" reads stdin
  std::string model = "BF3";
  std::string release;  // default: derived from the input (see --help)
  std::vector<std::string> psids;
  std::vector<uint32_t> pcrs;  // import-eventlog --pcr; empty: 0-9 the log extends
  std::string node_key;        // import-report --node-key PEM
  std::string by, reason;      // defaults: the login name; "proposed from <file>"
  bool dry_run = false;
  bool json = false;
};

// The values an event log proposes (tpm-pcr:<n>, tpm-app), as manifest
// value objects, in PCR then log order. FAILED_PRECONDITION when the log
// has no sha256 bank (tpm-pcr values are sha256) or extends none of the
// selected PCRs. `notes` gets what was left out and why.
StatusOr<nlohmann::json> EventLogValues(const attest::EventLog& log,
                                        const std::vector<uint32_t>& pcrs,
                                        std::vector<std::string>* notes);

int RefvalsImportEventlog(const ProposeOptions& o, const AdminTarget& t);
int RefvalsImportReport(const ProposeOptions& o, const AdminTarget& t);
// POST /v1/refvals/{release}/withdraw; exit 1 when the verifier refuses
// (the release is not pending), 2 for an unknown release or other errors.
// JSON: docs/schemas/refvals-withdraw.schema.json.
int RefvalsWithdraw(const std::string& release, const std::string& by, const std::string& reason,
                    bool json, const AdminTarget& t);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_REFVALS_IMPORT_H_

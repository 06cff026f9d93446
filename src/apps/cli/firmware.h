// The CLI's firmware commands: `dpuaudit bfb inspect` and
// `dpuaudit refvals ...` (reference values through the verifier's admin
// API). Each returns the process exit code: 0 success, 1 a finding the
// caller asked about (bfb inspect: a CRC mismatch), 2 an error (printed to
// stderr with its reason).
#ifndef DPUAUDIT_APPS_CLI_FIRMWARE_H_
#define DPUAUDIT_APPS_CLI_FIRMWARE_H_

#include <string>
#include <vector>

#include "apps/cli/api_client.h"
#include "report/claims.h"

namespace dpuaudit::apps {

// The firmware and boot_chain sections of a report as text: versions,
// running/staged NIC firmware, the primary partition's images with their
// SHA-384, OS boot artefacts. Claims that do not parse are shown as such.
std::string DescribeFirmware(const report::ReportClaims& claims);
// The same sections as JSON, each part with an explicit status:
// {"firmware": {"arm": {"status": "ok"|"unreadable"|"absent"|"malformed",
// …}, "nic": {…}, "mlnx_release"}, "boot_chain": {"status", "primary",
// "partitions": [{"path", "primary", "status", "images": […]}], "os":
// {"cmdline", "boot_current", "boot_entry", "artefacts"}}}
// (docs/schemas/report-firmware.schema.json, $defs). The content is the
// agent's, shown as reported: nothing here re-derives it.
nlohmann::json FirmwareSectionsJson(const report::ReportClaims& claims);

// Prints the image table (or --json the layout,
// docs/schemas/bfb-inspect.schema.json). `file` "-" reads stdin, streamed
// (at most bluefield::BfbLimits::max_total_bytes). Exit 1 if any image CRC
// does not match, 2 if the input is not a BFB.
int BfbInspect(const std::string& file, bool json);

struct ImportBfbOptions {
  std::string file;
  std::string release;  // default: the file name without .bfb
  std::string model;    // BF2 | BF3 | BlueField-2 | BlueField-3
  std::string state = "pending";
  std::vector<std::string> psids;
  std::vector<std::string> versions;  // "atf=...", "nic-fw=..."
  std::vector<std::string> upgrade_from;
  std::string by, reason;  // defaults: the login name; "import of <file>"
  std::string out;  // write the manifest here instead of posting it ("-": stdout)
  // Import a release although neither the BFB nor --version gives any
  // component version (refused otherwise, exit 2; a loud warning then).
  bool allow_digest_only = false;
  // The verifier's answer as JSON (docs/schemas/refvals-import.schema.json);
  // with `out`, the manifest written (refvals-manifest.schema.json).
  bool json = false;
};
// Versions: every --version, then for each other component what the BFB
// carries (bluefield/bfb_info.h: bfver strings, info image) for `model`.
// Exit 2 when there is no version at all, unless allow_digest_only.
int RefvalsImportBfb(const ImportBfbOptions& o, const AdminTarget& t);
// Posts a manifest file (docs/refvals-schema.md); `json`: the verifier's
// answer {"imported", "withdrawn"} (docs/schemas/refvals-import.schema.json).
int RefvalsImport(const std::string& file, bool json, const AdminTarget& t);
// `values`: also print every value of every release. `json`: the manifest
// (docs/schemas/refvals-manifest.schema.json).
int RefvalsList(const std::string& model, bool json, bool values, const AdminTarget& t);
// The manifest to `out` (or stdout when empty or "-"); `json` with a file:
// {"file", "releases": [labels]} (docs/schemas/refvals-export.schema.json).
int RefvalsExport(const std::string& model, const std::string& out, bool json,
                  const AdminTarget& t);
// action: promote | obsolete | revoke | reinstate. `json`: the verifier's
// answer {"changed", "withdrawn"} (docs/schemas/refvals-transition.schema.json).
int RefvalsTransition(const std::string& action, const std::string& release,
                      const std::string& by, const std::string& reason,
                      bool obsolete_previous, bool json, const AdminTarget& t);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_FIRMWARE_H_

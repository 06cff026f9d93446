// `dpuaudit bundle export|verify` and `dpuaudit policy test` (issue 16,
// docs/audit.md): audit bundles fetched through the reader API, verified
// and re-appraised offline (verifier/bundle.h), and a candidate policy
// tried against them before it is rolled out.
//
// Exit codes: export 0 written, 1 refused by the verifier (409/410), 2
// usage/runtime; verify 0 verified, 1 a verification failure (each item
// named), 2 unusable input; policy test 0 no decision would change, 1 some
// would (or a bundle does not verify), 2 unusable input.
#ifndef DPUAUDIT_APPS_CLI_BUNDLE_H_
#define DPUAUDIT_APPS_CLI_BUNDLE_H_

#include <string>
#include <vector>

#include "apps/cli/admit.h"
#include "apps/cli/api_client.h"

namespace dpuaudit::apps {

struct BundleExportFlags {
  std::string node;
  std::string since, until;  // Unix seconds or RFC 3339 UTC; "" = open
  std::string out;           // file, or - for stdout
  bool json = false;
};
int BundleExport(const BundleExportFlags& f, const ReadTarget& target);

struct BundleVerifyFlags {
  std::string file;   // - reads stdin
  std::string trust;  // JWKS, PEM or trust file; else the pinned keys
  bool json = false;
};
int BundleVerify(const BundleVerifyFlags& f, const PinnedKeySource& pins);

struct PolicyTestFlags {
  std::string candidate;            // policy file; - reads stdin
  std::vector<std::string> bundles;  // --bundle FILE (repeatable)
  std::string reports_dir;           // --reports DIR: every *.json bundle in it
  std::string trust;
  bool json = false;
  bool wide = false;
};
int PolicyTest(const PolicyTestFlags& f, const PinnedKeySource& pins);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_BUNDLE_H_

// Enrollment and identity commands (issue 12) shared by the two operator
// front ends: `dpuaudit tokens ...` / `dpuaudit nodes revoke` (through the
// verifier's admin API) and the local `dpuaudit-verifier tokens|nodes|
// approve|reject|revoke` commands (on the database). Each command returns
// the process exit code: 0 done, 1 refused (e.g. not found), 2 usage or
// runtime error, printed to stderr with its reason.
//
// Does not: print or log a token anywhere but the one place asked for
// (stdout, or --out written 0600); keep any state.
#ifndef DPUAUDIT_APPS_COMMON_CLI_ENROLLMENT_H_
#define DPUAUDIT_APPS_COMMON_CLI_ENROLLMENT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "apps/common/cli_firmware.h"
#include "common/status.h"

namespace dpuaudit::apps {

// "90" (seconds), "30s", "15m", "24h", "7d" -> seconds (> 0). `flag` names
// the option in the error.
StatusOr<int64_t> ParseDurationSeconds(const std::string& flag,
                                       const std::string& text);

// Prints an issued token ({"token", "token_id", "node_id", "serial",
// "expires_at"}): with `out` the token goes to that file (0600, created
// anew) and only its id to stdout; `json` prints the whole object.
int PrintIssuedToken(const nlohmann::json& issued, const std::string& out,
                     bool json);
// A token listing ({"tokens": [...]}) as a table or JSON.
int PrintTokenList(const nlohmann::json& list, bool json);
// A node's identity (NodeIdentityJson, optionally with "history").
std::string DescribeNodeIdentity(const nlohmann::json& node);

struct TokenIssueOptions {
  std::string node_id;
  std::string serial;
  std::string ttl = "24h";
  std::string by;  // default: the login name
  std::string out;
  bool json = false;
};
// `dpuaudit tokens issue|list|revoke` and `dpuaudit nodes revoke`.
int TokensIssue(const TokenIssueOptions& o, const AdminTarget& t);
int TokensList(bool json, const AdminTarget& t);
int TokensRevoke(const std::string& token_id, const std::string& by,
                 const AdminTarget& t);
int NodesRevoke(const std::string& node_id, const std::string& by,
                const std::string& reason, bool json, const AdminTarget& t);

// The login name, for a default --by ("" if unknown).
std::string LoginName();

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_COMMON_CLI_ENROLLMENT_H_

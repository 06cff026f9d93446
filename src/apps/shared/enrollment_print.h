// Output of the enrollment commands, shared by the two operator front ends:
// `dpuaudit tokens ...` / `dpuaudit nodes revoke` (through the verifier's
// admin API, apps/cli/enrollment.h) and the local `dpuaudit-verifier
// tokens|nodes|approve|reject|revoke` commands (on the database). Printing
// functions return the process exit code: 0 done, 2 error (printed to
// stderr with its reason).
//
// Does not: print or log a token anywhere but the one place asked for
// (stdout, or --out written 0600); talk to a verifier or a database.
#ifndef DPUAUDIT_APPS_SHARED_ENROLLMENT_PRINT_H_
#define DPUAUDIT_APPS_SHARED_ENROLLMENT_PRINT_H_

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

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

// The login name, for a default --by ("" if unknown).
std::string LoginName();

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_SHARED_ENROLLMENT_PRINT_H_

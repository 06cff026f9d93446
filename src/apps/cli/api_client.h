// One way for every `dpuaudit` command to call the verifier's API (admin
// or reader routes) and one mapping of its refusals to exit codes.
//
// Guarantees: CallVerifier sends the bearer token read from `token_file`
// (0600, see apps/shared/token_file.h) and returns the reply's JSON object
// for a 2xx answer, else the verifier's error as a Status
// (apps/shared/http_client.h: 404 NOT_FOUND, 401 UNAUTHENTICATED, 403
// PERMISSION_DENIED, 409 FAILED_PRECONDITION, 410 DEADLINE_EXCEEDED, 5xx
// UNAVAILABLE, other 4xx INVALID_ARGUMENT). ApiExitCode is the only place
// that turns those into exit codes: 1 when the verifier refused the thing
// named (409: wrong thumbprint, serial or state; 410: expired), 2 for
// everything else (usage, unknown node or token, authentication, transport,
// server trouble).
// Does not: retry; keep a connection between calls.
#ifndef DPUAUDIT_APPS_CLI_API_CLIENT_H_
#define DPUAUDIT_APPS_CLI_API_CLIENT_H_

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace dpuaudit::apps {

// Where a command reaches the verifier, from flags or DPUAUDIT_VERIFIER,
// DPUAUDIT_TOKEN_FILE and DPUAUDIT_CA.
struct AdminTarget {
  std::string verifier;    // base URL
  std::string token_file;  // admin or reader bearer token file
  std::string cacert;
  bool insecure_http = false;  // allow http:// to a non-loopback verifier
};
using ReadTarget = AdminTarget;

// `method` is "GET" (body ignored) or "POST" (body sent as JSON as given).
StatusOr<nlohmann::json> CallVerifier(const AdminTarget& target, std::string_view method,
                                      const std::string& path, const std::string& body = "");

// 1 for FAILED_PRECONDITION and DEADLINE_EXCEEDED, else 2 (see above;
// the rule is apps/shared/exit_code.h RefusalExitCode, shared by every binary).
// The reply body as received (a 2xx), at most `max_response_bytes`.
StatusOr<std::string> CallVerifierRaw(const AdminTarget& target, std::string_view method,
                                      const std::string& path, const std::string& body,
                                      size_t max_response_bytes);

int ApiExitCode(const Status& s);
// Prints "dpuaudit: <message>" to stderr; returns ApiExitCode(s).
int FailApi(const Status& s);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_CLI_API_CLIENT_H_

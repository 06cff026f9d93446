// The verifier's HTTP API: every route of `dpuaudit-verifier serve` on an
// HttpServer, each a thin adapter onto verifier::VerifierService (content
// type check, bearer token, Status -> HTTP mapping with http_errors.h).
//
// Guarantees: the request log line never carries headers or query strings
// (bearer tokens), and only the printable form of the path.
// Does not: decide anything itself; keep state.
#ifndef DPUAUDIT_APPS_VERIFIER_ROUTES_H_
#define DPUAUDIT_APPS_VERIFIER_ROUTES_H_

#include "apps/verifier/http_server.h"
#include "verifier/service.h"

namespace dpuaudit::apps {

void InstallRoutes(HttpServer& server, verifier::VerifierService& svc);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_ROUTES_H_

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
#include "verifier/metrics.h"
#include "verifier/service.h"

namespace dpuaudit::apps {

struct RouteOptions {
  // Recorded per request and served on GET /metrics; nullptr: no /metrics.
  verifier::Metrics* metrics = nullptr;
  // GET /metrics without a token (`serve --public-metrics`); otherwise the
  // reader (or admin) token, since the samples name enrolled nodes.
  bool public_metrics = false;
};

// Every route, the access logger (apps/verifier/observability.h) and a
// middleware that sets the request's verifier::RequestContext and emits an
// "auth_failure" audit event for each 401 of a route behind the admin or
// reader token.
void InstallRoutes(HttpServer& server, verifier::VerifierService& svc,
                   RouteOptions options = {});

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_ROUTES_H_

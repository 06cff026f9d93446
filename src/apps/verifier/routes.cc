#include "apps/verifier/routes.h"

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "apps/verifier/http_errors.h"
#include "apps/verifier/observability.h"
#include "apps/verifier/refvals_withdraw.h"
#include "common/clock.h"
#include "common/finding.h"
#include "report/ear.h"
#include "verifier/fleet.h"

namespace dpuaudit::apps {
namespace {

void Reply(ServerResponse& res, int status, const std::string& body) {
  res.status = status;
  res.body = body;
  res.content_type = "application/json";
}

void ReplyError(ServerResponse& res, const Status& s) {
  Reply(res, HttpStatusFor(s.code()), ErrorBody(s));
  if (s.code() == StatusCode::kRateLimited) {
    // "... retry in N s." -> Retry-After: N
    const std::string& m = s.message();
    auto at = m.rfind("retry in ");
    std::string secs = at == std::string::npos ? "60" : m.substr(at + 9, m.find(' ', at + 9) - at - 9);
    res.headers.emplace_back("Retry-After", secs);
  }
}

bool RequireJson(const ServerRequest& req, ServerResponse& res,
                 std::initializer_list<std::string_view> accepted) {
  std::string ct = req.Header("content-type");
  std::string base = ct.substr(0, ct.find(';'));
  while (!base.empty() && base.back() == ' ') base.pop_back();
  for (auto a : accepted) {
    if (base == a) return true;
  }
  std::string want;
  for (auto a : accepted) want += (want.empty() ? "" : " or ") + std::string(a);
  Reply(res, 415,
        ErrorBody("unsupported_media_type",
                  "Content-Type \"" + ct + "\" is not accepted; use " + want + "."));
  return false;
}

std::optional<std::string> BearerToken(const ServerRequest& req) {
  std::string auth = req.Header("authorization");
  const std::string prefix = "Bearer ";
  if (auth.rfind(prefix, 0) != 0) return std::nullopt;
  return auth.substr(prefix.size());
}

nlohmann::json AdmissionJson(const verifier::Admission& a) {
  nlohmann::json j = {{"node_id", a.node_id},
                      {"decision", a.decision},
                      {"expires_at", a.expires_at}};
  if (!a.status.empty()) j["status"] = a.status;
  if (!a.reason.empty()) j["reason"] = a.reason;
  if (!a.ear_jwt.empty()) j["ear"] = a.ear_jwt;
  if (a.result) {
    j["reasons"] = report::DecisionReasonsJson(a.result->dpuaudit.reasons);
  }
  return j;
}

// Routes whose 401 is a node's (or would-be node's) proof failing, not a
// reader's or admin's token: those are not "auth_failure" audit events (an
// enrollment with a wrong token is audited as a refused "enrollment").
bool IsNodeAuthenticatedRoute(const std::string& route) {
  return route == "/v1/nodes" || route == "/v1/challenges" || route == "/v1/reports" ||
         route == "/v1/nodes/{id}/tpm/activate" || route == "other";
}

// dpuaudit_reports_refused_total's reason: a fixed set (README.md
// "Metrics"), never the message itself.
std::string RefusalReason(const Status& s) {
  switch (s.code()) {
    case StatusCode::kResourceExhausted: return "too_large";
    case StatusCode::kNotFound: return "unknown_node";
    case StatusCode::kUnauthenticated: return "bad_signature";
    case StatusCode::kPermissionDenied: return "not_permitted";
    case StatusCode::kRateLimited: return "rate_limited";
    case StatusCode::kDeadlineExceeded: return "nonce_expired";
    case StatusCode::kFailedPrecondition:
      if (s.message().rfind("evidence_unknown:", 0) == 0) return "evidence_unknown";
      return s.message().find("nonce") != std::string::npos ? "nonce_used" : "not_approved";
    case StatusCode::kInvalidArgument:
      return s.message().find("nonce") != std::string::npos ? "nonce_invalid" : "malformed";
    default: return "internal";
  }
}

// Where a report's outcome is recorded: appraisals, findings and the
// node's last admit, or the refusal class.
void RecordReport(verifier::Metrics* m, const StatusOr<verifier::AppraisalOutcome>& o) {
  if (m == nullptr) return;
  if (!o.ok()) {
    const std::string reason = RefusalReason(o.status());
    m->reports_refused.Inc({reason});
    if (reason == "nonce_expired") m->nonces_expired.Inc({"refused"});
    return;
  }
  const auto& r = o->result.dpuaudit;
  const bool admit = r.decision == report::Decision::kAdmit;
  m->appraisals.Inc({admit ? "admit" : "deny"});
  for (const auto& reason : r.reasons) {
    m->findings.Inc({reason.rule_id, std::string(VerdictName(reason.verdict))});
  }
  if (admit) m->node_last_admit.Set({r.node_id}, static_cast<double>(o->result.iat));
}

}  // namespace

void InstallRoutes(HttpServer& server, verifier::VerifierService& svc, RouteOptions options) {
  verifier::Metrics* metrics = options.metrics;
  server.SetLogger(MakeAccessLogger(metrics));
  server.SetMiddleware([&svc](const ServerRequest& req, ServerResponse& res,
                              const HttpHandler& next) {
    verifier::ScopedRequestContext ctx(
        verifier::RequestContext{ClientAddress(req.remote), req.route, req.request_id});
    next(req, res);
    if (res.status == 401 && !IsNodeAuthenticatedRoute(req.route)) {
      svc.Audit(verifier::MakeAuditEvent("auth_failure", "anonymous", "", std::string(req.Header("authorization").empty()
                                           ? "no bearer token"
                                           : "wrong bearer token") +
                           " on " + req.method + " " + req.route, "refused"));
    }
  });
  if (metrics != nullptr) {
    server.Route("GET", "/metrics",
                 [&svc, metrics, open = options.public_metrics](const ServerRequest& req,
                                                                ServerResponse& res) {
                   if (!open) {
                     Status s = svc.CheckReaderToken(BearerToken(req));
                     if (!s.ok()) return ReplyError(res, s);
                   }
                   res.status = 200;
                   res.content_type = "text/plain; version=0.0.4; charset=utf-8";
                   res.body = metrics->Render();
                 });
  }

  server.Route("GET", "/healthz", [](const ServerRequest&, ServerResponse& res) {
    Reply(res, 200, R"({"status":"ok"})");
  });
  server.Route("GET", "/readyz", [&svc](const ServerRequest&, ServerResponse& res) {
    auto r = svc.Ready();
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  server.Route("GET", "/.well-known/jwks.json",
             [&svc](const ServerRequest&, ServerResponse& res) {
               Reply(res, 200, JsonBody(svc.Jwks()));
             });
  server.Route("POST", "/v1/nodes", [&svc](const ServerRequest& req, ServerResponse& res) {
    if (!RequireJson(req, res, {"application/json"})) return;
    auto r = svc.Enroll(req.body, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    res.node_id = r->node.node_id;
    nlohmann::json j = {{"node_id", r->node.node_id},
                        {"state", verifier::NodeStateName(r->node.state)},
                        {"key_thumbprint", r->node.key_thumbprint}};
    if (!r->tpm_state.empty()) j["tpm_state"] = r->tpm_state;
    if (r->tpm_challenge) {
      j["tpm_challenge"] = {{"credential_blob_b64", r->tpm_challenge->credential_blob_b64},
                            {"encrypted_secret_b64", r->tpm_challenge->encrypted_secret_b64},
                            {"ak_name", r->tpm_challenge->ak_name_hex},
                            {"expires_at", r->tpm_challenge->expires_at}};
    }
    Reply(res, r->created ? 201 : 200, JsonBody(j));
  });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/tpm/activate)",
               "/v1/nodes/{id}/tpm/activate",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto b = svc.ActivateTpm(req.matches.at(1), req.body);
                if (!b.ok()) return ReplyError(res, b.status());
                nlohmann::json j = {{"node_id", b->node_id},
                                    {"tpm_state", verifier::TpmBindingStateName(b->state)},
                                    {"ak_name", b->ak_name_hex}};
                Reply(res, 200, JsonBody(j));
              });
  server.Route("POST", "/v1/challenges",
              [&svc, metrics](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto c = svc.IssueChallenge(req.body, ClientAddress(req.remote));
                if (!c.ok()) return ReplyError(res, c.status());
                if (metrics != nullptr) metrics->nonces_issued.Inc({});
                // The proof verified: the node id is an enrolled node's.
                nlohmann::json body = nlohmann::json::parse(req.body, nullptr, false);
                if (body.is_object() && body.contains("node_id") && body["node_id"].is_string()) {
                  res.node_id = body["node_id"].get<std::string>();
                }
                nlohmann::json j = {{"nonce", c->nonce},
                                    {"expires_at", c->expires_at},
                                    {"pcr_selection", c->pcr_selection}};
                Reply(res, 201, JsonBody(j));
              });
  server.Route("POST", "/v1/reports", [&svc, metrics](const ServerRequest& req,
                                                      ServerResponse& res) {
    if (!RequireJson(req, res, {"application/jose", "application/jose+json"})) return;
    std::vector<std::string> unknown;
    auto o = svc.SubmitReport(req.body, &unknown);
    RecordReport(metrics, o);
    if (!o.ok() && !unknown.empty()) {
      // docs/architecture.md#report-format: the resend protocol.
      nlohmann::json j = {{"error",
                           {{"code", "evidence_unknown"},
                            {"message", o.status().message()},
                            {"missing", unknown}}}};
      return Reply(res, 409, JsonBody(j));
    }
    if (!o.ok()) return ReplyError(res, o.status());
    res.node_id = o->result.dpuaudit.node_id;
    res.decision = std::string(report::DecisionName(o->result.dpuaudit.decision));
    nlohmann::json j = {{"node_id", o->result.dpuaudit.node_id},
                        {"decision", report::DecisionName(o->result.dpuaudit.decision)},
                        {"expires_at", o->result.exp},
                        {"ear", o->ear_jwt},
                        {"reasons", report::DecisionReasonsJson(o->result.dpuaudit.reasons)}};
    Reply(res, 200, JsonBody(j));
  });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128}))",
               "/v1/nodes/{id}",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto v = svc.NodeView(req.matches.at(1), BearerToken(req));
               if (!v.ok()) return ReplyError(res, v.status());
               Reply(res, 200, JsonBody(*v));
             });
  server.Route("GET", "/v1/refvals", [&svc](const ServerRequest& req, ServerResponse& res) {
    std::string model = req.Query("model").value_or("");
    auto r = svc.ListRefvals(model, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  server.Route("POST", "/v1/refvals", [&svc](const ServerRequest& req, ServerResponse& res) {
    if (!RequireJson(req, res, {"application/json"})) return;
    auto r = svc.ImportRefvals(req.body, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 201, JsonBody(*r));
  });
  // Issue 16 §6: before the generic transition route, which would take
  // "withdraw" as an action (the first route matching a path wins).
  server.Route("POST", R"(/v1/refvals/([A-Za-z0-9._+:~-]{1,128})/withdraw)",
               "/v1/refvals/{release}/withdraw",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = WithdrawRelease(svc, req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/refvals/([A-Za-z0-9._+:~-]{1,128})/([a-z]{1,16}))",
               "/v1/refvals/{release}/{action}",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.TransitionRefval(req.matches.at(1), req.matches.at(2), req.body,
                                              BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, JsonBody(*r));
              });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/bmc)",
               "/v1/nodes/{id}/bmc",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 auto v = svc.BmcStatus(req.matches.at(1), BearerToken(req));
                 if (!v.ok()) return ReplyError(res, v.status());
                 Reply(res, 200, JsonBody(*v));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/bmc/rebind)",
               "/v1/nodes/{id}/bmc/rebind",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.RebindBmc(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/spdm/([a-z]{1,8})/approve)",
               "/v1/nodes/{id}/spdm/{target}/approve",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.ApproveSpdmBaseline(req.matches.at(1), req.matches.at(2), req.body,
                                                  BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  // Issue 15 (keys): a node's own re-key, signed by its current key.
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/rekey)",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/jose"})) return;
                auto r = svc.Rekey(req.matches.at(1), req.body, ClientAddress(req.remote));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, JsonBody(*r));
              });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/revoke)",
               "/v1/nodes/{id}/revoke",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.RevokeNode(req.matches.at(1), req.body, BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, r->dump());
              });
  // Issue 15 §5: the operator interface (verifier/node_admin.cc).
  server.Route("GET", "/v1/nodes", [&svc](const ServerRequest& req, ServerResponse& res) {
    auto r = svc.ListNodesPage(req.Query("limit"), req.Query("after"), BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  // Issue 16 §7: the fleet drift report (verifier/fleet.h), reader token
  // as GET /v1/nodes. One build at a time; derived facts cached by report.
  struct FleetState {
    std::mutex mu;
    verifier::FleetFactsCache cache;
  };
  auto fleet = std::make_shared<FleetState>();
  server.Route("GET", "/v1/fleet", [&svc, fleet](const ServerRequest& req, ServerResponse& res) {
    if (Status s = svc.CheckReaderToken(BearerToken(req)); !s.ok()) return ReplyError(res, s);
    auto w = verifier::ParseFleetWindow(req.Query("bucket"), req.Query("window"));
    if (!w.ok()) return ReplyError(res, w.status());
    std::lock_guard<std::mutex> lock(fleet->mu);
    auto r = verifier::CollectFleetReport(svc.store(), *w, SystemClock::Get().NowUnixSeconds(),
                                          svc.options().max_report_bytes, &fleet->cache);
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/approve)",
               "/v1/nodes/{id}/approve", [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.ApproveNode(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/reject)",
               "/v1/nodes/{id}/reject", [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.RejectNodeByAdmin(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", "/v1/enrollment-tokens",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.IssueEnrollmentToken(req.body, BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 201, r->dump());
              });
  server.Route("GET", "/v1/enrollment-tokens",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto r = svc.ListEnrollmentTokens(BearerToken(req));
               if (!r.ok()) return ReplyError(res, r.status());
               Reply(res, 200, r->dump());
             });
  auto revoke_token = [&svc](const ServerRequest& req, ServerResponse& res) {
    // DELETE may come without a body: the admin API is then "by".
    std::string body = req.body.empty() ? R"({"by":"admin API"})" : req.body;
    auto r = svc.RevokeEnrollmentToken(req.matches.at(1), body, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, r->dump());
  };
  server.Route("POST", R"(/v1/enrollment-tokens/([0-9a-f]{16})/revoke)",
               "/v1/enrollment-tokens/{token_id}/revoke", revoke_token);
  server.Route("DELETE", R"(/v1/enrollment-tokens/([0-9a-f]{16}))",
               "/v1/enrollment-tokens/{token_id}", revoke_token);
  // Issue 15: node status, decision events, webhooks (docs/events.md).
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/acknowledge)",
               "/v1/nodes/{id}/acknowledge",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.AcknowledgeNode(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("GET", "/v1/events", "/v1/events", [&svc](const ServerRequest& req, ServerResponse& res) {
    int64_t after = 0, limit = 100;
    for (auto [name, out] : {std::pair<const char*, int64_t*>{"after", &after},
                             std::pair<const char*, int64_t*>{"limit", &limit}}) {
      if (auto v = req.Query(name)) {
        if (v->empty() || v->size() > 18 ||
            v->find_first_not_of("0123456789") != std::string::npos) {
          return ReplyError(res, InvalidArgumentError(std::string(name) +
                                                      " must be a non-negative integer."));
        }
        *out = std::stoll(*v);
      }
    }
    auto r = svc.ListEvents(req.Query("node").value_or(""), after, limit, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  // Issue 16: an audit bundle of one node (docs/audit.md#bundles).
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/bundle)",
               "/v1/nodes/{id}/bundle",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 int64_t since = 0, until = std::numeric_limits<int64_t>::max();
                 for (auto [name, out] : {std::pair<const char*, int64_t*>{"since", &since},
                                          std::pair<const char*, int64_t*>{"until", &until}}) {
                   if (auto v = req.Query(name)) {
                     if (v->empty() || v->size() > 18 ||
                         v->find_first_not_of("0123456789") != std::string::npos) {
                       return ReplyError(res, InvalidArgumentError(
                                                  std::string(name) +
                                                  " must be a non-negative integer (Unix "
                                                  "seconds)."));
                     }
                     *out = std::stoll(*v);
                   }
                 }
                 auto b = svc.ExportBundle(BearerToken(req), req.matches.at(1), since, until);
                 if (!b.ok()) return ReplyError(res, b.status());
                 res.node_id = req.matches.at(1);
                 Reply(res, 200, *b);
               });
  server.Route("GET", "/v1/webhooks", "/v1/webhooks", [&svc](const ServerRequest& req, ServerResponse& res) {
    auto r = svc.WebhookStatus(BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, JsonBody(*r));
  });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/admission)",
               "/v1/nodes/{id}/admission",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto a = svc.GetAdmission(req.matches.at(1), BearerToken(req));
               if (!a.ok()) return ReplyError(res, a.status());
               res.node_id = a->node_id;
               res.decision = a->decision;
               Reply(res, 200, JsonBody(AdmissionJson(*a)));
             });
}


}  // namespace dpuaudit::apps

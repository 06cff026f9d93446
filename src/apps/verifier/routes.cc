#include "apps/verifier/routes.h"

#include <spdlog/spdlog.h>

#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "apps/verifier/http_errors.h"
#include "report/ear.h"

namespace dpuaudit::apps {
namespace {

std::string ClientAddress(const std::string& remote) {
  auto colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

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
  if (!a.reason.empty()) j["reason"] = a.reason;
  if (!a.ear_jwt.empty()) j["ear"] = a.ear_jwt;
  if (a.result) {
    j["reasons"] = report::DecisionReasonsJson(a.result->dpuaudit.reasons);
  }
  return j;
}

}  // namespace

void InstallRoutes(HttpServer& server, verifier::VerifierService& svc) {
  server.SetLogger([](const ServerRequest& req, const ServerResponse& res) {
    // Never headers or query strings (bearer tokens); the path is raw and
    // attacker-chosen, so only its printable form.
    std::string path;
    for (char c : req.path.substr(0, 160)) {
      path += (c >= 0x20 && c < 0x7f) ? c : '?';
    }
    spdlog::info("{} {} {} -> {} ({} bytes in)", req.remote, req.method, path, res.status,
                 req.body.size());
  });

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
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto c = svc.IssueChallenge(req.body, ClientAddress(req.remote));
                if (!c.ok()) return ReplyError(res, c.status());
                nlohmann::json j = {{"nonce", c->nonce},
                                    {"expires_at", c->expires_at},
                                    {"pcr_selection", c->pcr_selection}};
                Reply(res, 201, JsonBody(j));
              });
  server.Route("POST", "/v1/reports", [&svc](const ServerRequest& req, ServerResponse& res) {
    if (!RequireJson(req, res, {"application/jose", "application/jose+json"})) return;
    auto o = svc.SubmitReport(req.body);
    if (!o.ok()) return ReplyError(res, o.status());
    nlohmann::json j = {{"node_id", o->result.dpuaudit.node_id},
                        {"decision", report::DecisionName(o->result.dpuaudit.decision)},
                        {"expires_at", o->result.exp},
                        {"ear", o->ear_jwt},
                        {"reasons", report::DecisionReasonsJson(o->result.dpuaudit.reasons)}};
    Reply(res, 200, JsonBody(j));
  });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128}))",
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
  server.Route("POST", R"(/v1/refvals/([A-Za-z0-9._+:~-]{1,128})/([a-z]{1,16}))",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.TransitionRefval(req.matches.at(1), req.matches.at(2), req.body,
                                              BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, JsonBody(*r));
              });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/bmc)",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 auto v = svc.BmcStatus(req.matches.at(1), BearerToken(req));
                 if (!v.ok()) return ReplyError(res, v.status());
                 Reply(res, 200, JsonBody(*v));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/bmc/rebind)",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.RebindBmc(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/spdm/([a-z]{1,8})/approve)",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.ApproveSpdmBaseline(req.matches.at(1), req.matches.at(2), req.body,
                                                  BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/revoke)",
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
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/approve)",
               [&svc](const ServerRequest& req, ServerResponse& res) {
                 if (!RequireJson(req, res, {"application/json"})) return;
                 auto r = svc.ApproveNode(req.matches.at(1), req.body, BearerToken(req));
                 if (!r.ok()) return ReplyError(res, r.status());
                 Reply(res, 200, JsonBody(*r));
               });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/reject)",
               [&svc](const ServerRequest& req, ServerResponse& res) {
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
  server.Route("POST", R"(/v1/enrollment-tokens/([0-9a-f]{16})/revoke)", revoke_token);
  server.Route("DELETE", R"(/v1/enrollment-tokens/([0-9a-f]{16}))", revoke_token);
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/admission)",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto a = svc.GetAdmission(req.matches.at(1), BearerToken(req));
               if (!a.ok()) return ReplyError(res, a.status());
               Reply(res, 200, JsonBody(AdmissionJson(*a)));
             });
}


}  // namespace dpuaudit::apps

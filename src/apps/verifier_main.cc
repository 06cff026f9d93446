// dpuaudit-verifier: the attestation verifier's HTTP(S) server and its
// operator commands. Thin: routing, limits and Status→HTTP mapping only;
// everything else is verifier::VerifierService.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/common/cli_enrollment.h"
#include "apps/common/http_errors.h"
#include "apps/common/http_client.h"
#include "apps/common/http_server.h"
#include "apps/common/token_file.h"
#include "apps/common/version.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "report/ear.h"
#include "report/jws.h"
#include "verifier/service.h"
#include "verifier/store/sqlite_store.h"

namespace dpuaudit::apps {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:8080";
  std::string db;
  std::string policy;
  std::string key;
  std::string bootstrap_token_file;
  std::string admin_token_file;
  std::string reader_token_file;
  bool public_admission = false;
  bool insecure_http = false;
  std::string verifier_id = "dpuaudit-verifier";
  std::string tls_cert, tls_key;
  std::string ready_file;
  std::string ek_ca_dir;
  int64_t nonce_ttl = 60;
  HttpLimits http;
  uint32_t challenges_per_minute = 60;
  uint32_t reports_per_minute = 60;
  std::string pending_ttl = "24h";
  int64_t max_pending = 10000;
  uint32_t refused_challenges_per_client = 600;
  int64_t max_outstanding_nonces = 16;
  int64_t report_quota_mib = 64;
  int64_t retain_reports = 100;
  int64_t retain_days = 90;
  int64_t maintenance_interval = 60;
  uint32_t unauthenticated_cpu_ms = 200;
  uint32_t unauthenticated_concurrency = 1;
};

// The client address of "ip:port" / "[v6]:port", without the port.
std::string ClientAddress(const std::string& remote) {
  auto colon = remote.rfind(':');
  return colon == std::string::npos ? remote : remote.substr(0, colon);
}

verifier::RetentionPolicy Retention(int64_t reports, int64_t days) {
  return verifier::RetentionPolicy{reports, days * 86400};
}

// One maintenance pass: expired nonces, then retention. Logged, never fatal.
void Maintain(verifier::Store& store, const verifier::RetentionPolicy& retention) {
  int64_t now = SystemClock::Get().NowUnixSeconds();
  auto nonces = store.PurgeExpiredNonces(now);
  if (!nonces.ok()) {
    spdlog::warn("maintenance: purging nonces: {}", nonces.status().ToString());
  }
  auto pruned = store.PruneReports(retention, now);
  if (!pruned.ok()) {
    spdlog::warn("maintenance: pruning reports: {}", pruned.status().ToString());
  }
  if ((nonces.ok() && *nonces > 0) ||
      (pruned.ok() && (pruned->results_deleted > 0 || pruned->bodies_dropped > 0 ||
                       pruned->refused_deleted > 0))) {
    spdlog::info("maintenance: purged {} expired nonces; deleted {} results, {} refused "
                 "reports; dropped {} report bodies",
                 nonces.ok() ? *nonces : 0, pruned.ok() ? pruned->results_deleted : 0,
                 pruned.ok() ? pruned->refused_deleted : 0,
                 pruned.ok() ? pruned->bodies_dropped : 0);
  }
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

nlohmann::json ReasonsJson(const std::vector<report::DecisionReason>& reasons) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : reasons) {
    a.push_back({{"rule_id", r.rule_id},
                 {"verdict", VerdictName(r.verdict)},
                 {"expected", r.expected},
                 {"observed", r.observed},
                 {"source", r.source},
                 {"reason", r.reason},
                 {"tier", report::ClaimTierName(r.tier)}});
  }
  return a;
}

nlohmann::json AdmissionJson(const verifier::Admission& a) {
  nlohmann::json j = {{"node_id", a.node_id},
                      {"decision", a.decision},
                      {"expires_at", a.expires_at}};
  if (!a.reason.empty()) j["reason"] = a.reason;
  if (!a.ear_jwt.empty()) j["ear"] = a.ear_jwt;
  if (a.result) {
    j["reasons"] = ReasonsJson(a.result->dpuaudit.reasons);
  }
  return j;
}

StatusOr<std::pair<std::string, uint16_t>> ParseListen(const std::string& s) {
  auto colon = s.rfind(':');
  if (colon == std::string::npos) {
    return InvalidArgumentError("--listen \"" + s + "\" must be HOST:PORT.");
  }
  std::string host = s.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  int port = 0;
  try {
    port = std::stoi(s.substr(colon + 1));
  } catch (...) {
    port = -1;
  }
  if (port < 0 || port > 65535) {
    return InvalidArgumentError("--listen \"" + s + "\": bad port.");
  }
  return std::make_pair(host, static_cast<uint16_t>(port));
}

StatusOr<std::unique_ptr<verifier::VerifierService>> BuildService(
    const ServeFlags& f) {
  DPA_ASSIGN_OR_RETURN(auto store, verifier::SqliteStore::Open(f.db));
  DPA_ASSIGN_OR_RETURN(auto policy,
                       verifier::LoadPolicyFile(f.policy, verifier::KnownRules()));
  bool created = false;
  DPA_ASSIGN_OR_RETURN(auto key, EcPrivateKey::LoadOrCreateFile(f.key, &created));
  if (created) spdlog::info("created verifier signing key at {}", f.key);
  verifier::ServiceOptions options;
  options.verifier_build = "dpuaudit-verifier " + std::string(Version());
  options.max_report_bytes = f.http.max_body_bytes;
  options.challenges_per_minute = f.challenges_per_minute;
  options.reports_per_minute = f.reports_per_minute;
  options.refused_challenges_per_client_minute = f.refused_challenges_per_client;
  options.max_outstanding_nonces = f.max_outstanding_nonces;
  options.report_quota_bytes = f.report_quota_mib << 20;
  options.unauthenticated_cpu_ms_per_second = f.unauthenticated_cpu_ms;
  options.unauthenticated_max_concurrent = f.unauthenticated_concurrency;
  options.nonce_ttl_seconds = f.nonce_ttl;
  options.ek_ca_dir = f.ek_ca_dir;
  DPA_ASSIGN_OR_RETURN(options.pending_ttl_seconds,
                       ParseDurationSeconds("--pending-ttl", f.pending_ttl));
  options.max_pending_nodes = f.max_pending;
  if (!f.bootstrap_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(options.bootstrap_token,
                         ReadTokenFile(f.bootstrap_token_file, "bootstrap"));
    spdlog::warn("shared fleet enrollment token enabled: any holder can enroll any unused "
                 "id (prefer per-node tokens: dpuaudit tokens issue NODE)");
  }
  if (!f.admin_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(options.admin_token, ReadTokenFile(f.admin_token_file, "admin"));
    if (options.admin_token == options.bootstrap_token) {
      return InvalidArgumentError("the admin token must differ from the bootstrap token.");
    }
  }
  if (!f.reader_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(options.reader_token,
                         ReadTokenFile(f.reader_token_file, "reader"));
  }
  options.public_admission = f.public_admission;
  options.verifier_id = f.verifier_id;
  return verifier::VerifierService::New(std::move(store), std::move(policy),
                                        std::move(key), SystemClock::Get(),
                                        options);
}

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
                        {"reasons", ReasonsJson(o->result.dpuaudit.reasons)}};
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
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/revoke)",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.RevokeNode(req.matches.at(1), req.body, BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, r->dump());
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

int Serve(const ServeFlags& flags) {
  auto listen = ParseListen(flags.listen);
  if (!listen.ok()) {
    spdlog::error("{}", listen.status().message());
    return 2;
  }
  bool tls = !flags.tls_cert.empty() || !flags.tls_key.empty();
  if (!tls && !IsLoopbackHost(listen->first)) {
    if (!flags.insecure_http) {
      spdlog::error(
          "refusing to listen on {} without TLS: bearer tokens and decisions would cross "
          "the network in clear; give --tls-cert/--tls-key, listen on a loopback address, "
          "or pass --insecure-http to accept the risk",
          flags.listen);
      return 2;
    }
  }
  auto svc = BuildService(flags);
  if (!svc.ok()) {
    spdlog::error("cannot start: {}", svc.status().ToString());
    return 2;
  }
  std::string cert_pem, key_pem;
  if (tls) {
    if (flags.tls_cert.empty() || flags.tls_key.empty()) {
      spdlog::error("--tls-cert and --tls-key must be given together");
      return 2;
    }
    auto cert = ReadFileLimited(flags.tls_cert, 1 << 20);
    auto key = ReadFileLimited(flags.tls_key, 1 << 20);
    if (!cert.ok() || !key.ok()) {
      spdlog::error("cannot read TLS certificate {} / key {}", flags.tls_cert, flags.tls_key);
      return 2;
    }
    cert_pem = ToString(*cert);
    key_pem = ToString(*key);
  }
  HttpServer server(flags.http, [](const std::string& code, const std::string& message) {
    return ErrorBody(code, message);
  });
  InstallRoutes(server, **svc);
  // SIGINT/SIGTERM are taken by sigwait below; blocked before the server's
  // threads start so that they inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  auto port = server.Start(listen->first, listen->second, cert_pem, key_pem);
  if (!port.ok()) {
    spdlog::error("cannot listen on {}: {}", flags.listen, port.status().message());
    return 2;
  }
  std::string url = std::string(tls ? "https" : "http") + "://" +
                    (listen->first.find(':') != std::string::npos
                         ? "[" + listen->first + "]"
                         : listen->first) +
                    ":" + std::to_string(*port);
  const HttpLimits& l = flags.http;
  spdlog::info("dpuaudit-verifier {} listening on {} (policy {} sha256:{}, key {})",
               Version(), url, (*svc)->policy().name(),
               (*svc)->policy().sha256().substr(0, 16), (*svc)->signing_kid());
  spdlog::info("limits: body {} B, headers {} B, idle timeout {} s, connections {} "
               "({} per IP), {} threads, per node {} challenges/min {} reports/min, "
               "unauthenticated checks {} ms CPU/s ({} at a time)",
               l.max_body_bytes, l.max_header_bytes, l.request_timeout_seconds,
               l.max_connections, l.max_connections_per_ip, l.threads,
               flags.challenges_per_minute, flags.reports_per_minute,
               flags.unauthenticated_cpu_ms, flags.unauthenticated_concurrency);
  spdlog::info("verifier id \"{}\"; node state reads need the {} token{}", flags.verifier_id,
               flags.reader_token_file.empty() ? "admin" : "reader or admin",
               flags.public_admission ? "; admission decisions are PUBLIC (--public-admission)"
                                      : "");
  if (flags.public_admission) {
    spdlog::warn("--public-admission: GET /v1/nodes/{{id}}/admission answers anyone "
                 "without a token");
  }
  if (!tls && !IsLoopbackHost(listen->first)) {
    spdlog::warn("INSECURE: --insecure-http: serving plain HTTP on non-loopback {}; bearer "
                 "tokens (bootstrap, admin, reader) and decisions cross the network in "
                 "clear and can be read or changed by anyone on the path",
                 url);
  }
  const verifier::RetentionPolicy retention =
      Retention(flags.retain_reports, flags.retain_days);
  Maintain((*svc)->store(), retention);
  if (!flags.ready_file.empty()) {
    Status s = WriteFileAtomic(flags.ready_file, AsBytes(url + "\n"), 0644);
    if (!s.ok()) {
      spdlog::error("{}", s.ToString());
      return 2;
    }
  }
  if (flags.max_pending > 0) {
    spdlog::info("pending enrollments: expire after {}, at most {}", flags.pending_ttl,
                 flags.max_pending);
  }
  spdlog::info("maintenance every {} s: expired nonces and pending enrollments purged; "
               "retention keeps the latest {} report bodies per node, {} days (0 = no "
               "limit), report quota {} MiB per node",
               flags.maintenance_interval, flags.retain_reports, flags.retain_days,
               flags.report_quota_mib);
  // Maintenance on its own thread, so the API never waits for it; it
  // shares the service's store (the store serialises writes). The first
  // pass ran before the server was ready. Expired pending enrollments are
  // also purged lazily, per id, by Store::EnrollNode.
  auto purge_pending = [&svc] {
    auto n = (*svc)->PurgeExpiredPending();
    if (!n.ok()) {
      spdlog::warn("purging expired pending enrollments: {}", n.status().ToString());
    } else if (*n > 0) {
      spdlog::info("purged {} expired pending enrollment(s)", *n);
    }
  };
  purge_pending();
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;
  std::thread maintenance([&] {
    std::unique_lock<std::mutex> lock(stop_mu);
    while (!stop_cv.wait_for(lock, std::chrono::seconds(flags.maintenance_interval),
                             [&] { return stopping; })) {
      lock.unlock();
      Maintain((*svc)->store(), retention);
      purge_pending();
      lock.lock();
    }
  });
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  {
    std::lock_guard<std::mutex> lock(stop_mu);
    stopping = true;
  }
  stop_cv.notify_all();
  maintenance.join();
  server.Stop();
  spdlog::info("stopped");
  return 0;
}

// --- Local operator commands on the database (issue 12) ---------------------

struct LocalFlags {
  std::string db, node, thumbprint, serial, by, reason, out;
  std::string pending_ttl = "24h";
  std::string ttl = "24h";
  bool json = false;
};

int LocalFail(const Status& s) {
  std::cerr << "dpuaudit-verifier: " << s.message() << "\n";
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kPermissionDenied:
      return 1;
    default:
      return 2;
  }
}

StatusOr<std::unique_ptr<verifier::SqliteStore>> OpenDb(const LocalFlags& f) {
  return verifier::SqliteStore::Open(f.db);
}

std::string ByOrLogin(const std::string& by) {
  if (!by.empty()) return by;
  std::string login = LoginName();
  return login.empty() ? "operator" : login;
}

int64_t Now() { return SystemClock::Get().NowUnixSeconds(); }

nlohmann::json LocalNodeJson(verifier::Store& store, const verifier::NodeRecord& n,
                             int64_t pending_ttl) {
  nlohmann::json j = verifier::NodeIdentityJson(n);
  if (n.state == verifier::NodeState::kPending && pending_ttl > 0) {
    j["pending_expires_at"] = n.enrolled_at + pending_ttl;
    j["pending_expired"] = n.enrolled_at + pending_ttl <= Now();
  }
  auto history = store.NodeHistory(n.node_id);
  if (history.ok()) {
    nlohmann::json h = nlohmann::json::array();
    for (const auto& e : *history) {
      h.push_back({{"at", e.at}, {"event", e.event}, {"by", e.actor}, {"detail", e.detail}});
    }
    j["history"] = std::move(h);
  }
  return j;
}

int LocalApprove(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  if (f.thumbprint.empty()) {
    // Show what would be approved; approving needs the operator to name it.
    auto n = (*store)->GetNode(f.node);
    if (!n.ok()) return LocalFail(n.status());
    std::cerr << DescribeNodeIdentity(LocalNodeJson(**store, *n, *ttl))
              << "dpuaudit-verifier: approving pins a key: compare the thumbprint above with the "
                 "one the device printed at enrollment, then run\n  dpuaudit-verifier approve "
              << f.node << " --thumbprint " << n->key_thumbprint << " --db " << f.db << "\n";
    return 2;
  }
  verifier::ApprovalRequest req;
  req.key_thumbprint = f.thumbprint;
  req.serial = f.serial;
  req.by = ByOrLogin(f.by);
  req.reason = f.reason;
  req.now = Now();
  req.pending_ttl_seconds = *ttl;
  auto n = (*store)->ApproveEnrollment(f.node, req);
  if (!n.ok()) return LocalFail(n.status());
  std::cout << "approved " << f.node << " (key " << n->key_thumbprint
            << (n->device_serial.empty() ? std::string(", no device serial pinned")
                                         : ", device serial " + n->device_serial)
            << ")\n";
  return 0;
}

int LocalReject(const LocalFlags& f) {
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  Status s = (*store)->RejectNode(f.node, ByOrLogin(f.by), f.reason, Now());
  if (!s.ok()) return LocalFail(s);
  std::cout << "rejected " << f.node << ": the pending enrollment is removed and the id is free\n";
  return 0;
}

int LocalRevoke(const LocalFlags& f) {
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto n = (*store)->RevokeNodeFor(f.node, f.by, f.reason, Now());
  if (!n.ok()) return LocalFail(n.status());
  std::cout << "revoked " << f.node << "; its admission is deny from now on\n"
            << DescribeNodeIdentity(LocalNodeJson(**store, *n, 0));
  return 0;
}

int LocalNodeShow(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto n = (*store)->GetNode(f.node);
  if (!n.ok()) return LocalFail(n.status());
  nlohmann::json j = LocalNodeJson(**store, *n, *ttl);
  if (f.json) {
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << DescribeNodeIdentity(j);
  }
  return 0;
}

int LocalNodeList(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--pending-ttl", f.pending_ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto list = (*store)->ListNodes();
  if (!list.ok()) return LocalFail(list.status());
  if (f.json) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& n : *list) {
      nlohmann::json j = verifier::NodeIdentityJson(n);
      if (n.state == verifier::NodeState::kPending && *ttl > 0) {
        j["pending_expires_at"] = n.enrolled_at + *ttl;
      }
      a.push_back(std::move(j));
    }
    std::cout << nlohmann::json{{"nodes", a}}.dump(2) << "\n";
    return 0;
  }
  std::printf("%-32s %-9s %-43s %-16s %s\n", "NODE", "STATE", "KEY THUMBPRINT", "SERIAL",
              "CLAIMED SERIAL");
  for (const auto& n : *list) {
    std::string state(verifier::NodeStateName(n.state));
    if (n.state == verifier::NodeState::kPending && *ttl > 0 && n.enrolled_at + *ttl <= Now()) {
      state += "(expired)";
    }
    std::printf("%-32s %-9s %-43s %-16s %s\n", n.node_id.c_str(), state.c_str(),
                n.key_thumbprint.c_str(), n.device_serial.empty() ? "-" : n.device_serial.c_str(),
                n.claimed_serial.empty() ? "-" : n.claimed_serial.c_str());
  }
  return 0;
}

int LocalTokenIssue(const LocalFlags& f) {
  auto ttl = ParseDurationSeconds("--ttl", f.ttl);
  if (!ttl.ok()) return LocalFail(ttl.status());
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto issued =
      verifier::IssueEnrollmentToken(**store, f.node, f.serial, *ttl, ByOrLogin(f.by), Now());
  if (!issued.ok()) return LocalFail(issued.status());
  nlohmann::json j = verifier::EnrollmentTokenJson(issued->record, Now());
  j["token"] = issued->token;
  return PrintIssuedToken(j, f.out, f.json);
}

int LocalTokenList(const LocalFlags& f) {
  auto store = OpenDb(f);
  if (!store.ok()) return LocalFail(store.status());
  auto tokens = (*store)->ListEnrollmentTokens();
  if (!tokens.ok()) return LocalFail(tokens.status());
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : *tokens) a.push_back(verifier::EnrollmentTokenJson(t, Now()));
  return PrintTokenList(nlohmann::json{{"tokens", a}}, f.json);
}

}  // namespace
}  // namespace dpuaudit::apps

int main(int argc, char** argv) {
  using namespace dpuaudit;
  using namespace dpuaudit::apps;
  auto logger = spdlog::stderr_color_mt("verifier");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  CLI::App app{"dpuaudit-verifier: appraises BlueField attestation reports"};
  app.set_version_flag("--version", std::string(Version()));
  app.require_subcommand(1);

  ServeFlags flags;
  auto* serve = app.add_subcommand("serve", "Run the verifier HTTP(S) API");
  serve->add_option("--listen", flags.listen, "HOST:PORT (port 0 = any free port)")
      ->capture_default_str();
  serve->add_option("--db", flags.db, "SQLite database file")->required();
  serve->add_option("--policy", flags.policy, "Policy JSON file")->required();
  serve->add_option("--key", flags.key,
                    "Verifier signing key (PKCS#8 PEM, created 0600 if missing)")
      ->required();
  serve->add_option("--bootstrap-token-file", flags.bootstrap_token_file,
                    "Opt-in: a SHARED fleet enrollment token; any holder can enroll (approved) "
                    "any unused node id. Prefer per-node tokens (tokens issue)");
  serve->add_option("--admin-token-file", flags.admin_token_file,
                    "File holding the admin API token (reference values); "
                    "without it the admin API is disabled");
  serve->add_option("--reader-token-file", flags.reader_token_file,
                    "File holding the reader token for GET /v1/nodes/{id} and "
                    "/v1/nodes/{id}/admission (the admin token works too)");
  serve->add_flag("--public-admission", flags.public_admission,
                  "Answer GET /v1/nodes/{id}/admission without a token (explicit opt-in)");
  serve->add_flag("--insecure-http", flags.insecure_http,
                  "Allow plain HTTP on a non-loopback address (tokens in clear)");
  serve->add_option("--verifier-id", flags.verifier_id,
                    "This verifier's id, carried in every EAR (ear.verifier-id instance)")
      ->capture_default_str();
  serve->add_option("--ek-ca-dir", flags.ek_ca_dir,
                    "Folder of trusted TPM manufacturer CA certificates (PEM/DER) "
                    "for EK certificates");
  serve->add_option("--tls-cert", flags.tls_cert, "TLS certificate (PEM)");
  serve->add_option("--tls-key", flags.tls_key, "TLS private key (PEM)");
  serve->add_option("--nonce-ttl", flags.nonce_ttl, "Nonce lifetime, seconds")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  serve->add_option("--max-body", flags.http.max_body_bytes,
                    "Largest accepted request body, bytes (413 beyond)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 30));
  serve->add_option("--max-header-bytes", flags.http.max_header_bytes,
                    "Largest request line + headers, bytes (431 beyond)")
      ->capture_default_str()->check(CLI::Range(size_t{1024}, size_t{1} << 20));
  serve->add_option("--request-timeout", flags.http.request_timeout_seconds,
                    "Close a connection idle for this many seconds")
      ->capture_default_str()->check(CLI::Range(1, 3600));
  serve->add_option("--max-connections", flags.http.max_connections,
                    "Concurrent connections in all (more are closed at once)")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  serve->add_option("--max-connections-per-ip", flags.http.max_connections_per_ip,
                    "Concurrent connections from one client address")
      ->capture_default_str()->check(CLI::Range(1, 100000));
  serve->add_option("--threads", flags.http.threads, "Server threads (each an epoll loop)")
      ->capture_default_str()->check(CLI::Range(1, 256));
  serve->add_option("--challenges-per-minute", flags.challenges_per_minute,
                    "Challenges per node per minute (burst the same; 0 = no limit; 429 beyond)")
      ->capture_default_str();
  serve->add_option("--reports-per-minute", flags.reports_per_minute,
                    "Signed reports per node per minute (0 = no limit; 429 beyond)")
      ->capture_default_str();
  serve->add_option("--refused-challenges-per-client", flags.refused_challenges_per_client,
                    "Refused challenge requests (no or bad node proof) per client address "
                    "per minute (0 = no limit; 429 beyond)")
      ->capture_default_str();
  serve->add_option("--max-outstanding-nonces", flags.max_outstanding_nonces,
                    "Unspent nonces kept per node; the oldest are dropped (0 = no cap)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{100000}));
  serve->add_option("--report-quota-mib", flags.report_quota_mib,
                    "Report storage per node, MiB (0 = no quota); the node's oldest "
                    "records make room for its new reports")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 20));
  serve->add_option("--retain-reports", flags.retain_reports,
                    "Keep the latest N accepted report bodies and results per node, and N "
                    "refused-report records (0 = no count limit)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  serve->add_option("--retain-days", flags.retain_days,
                    "Keep report bodies, results and refused records this many days "
                    "(0 = no age limit); decision changes and the latest result are "
                    "always kept")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{36500}));
  serve->add_option("--maintenance-interval", flags.maintenance_interval,
                    "Seconds between purges of expired nonces and retention passes")
      ->capture_default_str()->check(CLI::Range(int64_t{1}, int64_t{86400}));
  serve->add_option("--unauthenticated-cpu-ms", flags.unauthenticated_cpu_ms,
                    "CPU milliseconds per second, in all, for the expensive checks of "
                    "enrollments without a token (RSA key tests; 0 = no limit; 429 beyond)")
      ->capture_default_str()->check(CLI::Range(0u, 100000u));
  serve->add_option("--unauthenticated-concurrency", flags.unauthenticated_concurrency,
                    "How many such checks may run at once (429 beyond)")
      ->capture_default_str()->check(CLI::Range(1u, 256u));
  serve->add_option("--ready-file", flags.ready_file,
                    "Write the listening URL to this file once bound");
  serve->add_option("--pending-ttl", flags.pending_ttl,
                    "An unapproved enrollment expires after this (e.g. 30m, 24h): it can "
                    "no longer be approved and its id is free again")
      ->capture_default_str();
  serve->add_option("--max-pending", flags.max_pending,
                    "Most pending enrollments at once (0 = no cap; 503 beyond)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{10000000}));

  LocalFlags local;
  auto* approve = app.add_subcommand(
      "approve", "Approve a pending enrollment: only the key (and serial) you name");
  approve->add_option("NODE", local.node, "Node id")->required();
  approve->add_option("--thumbprint", local.thumbprint,
                      "Key thumbprint you expect (from the device: dpuaudit-agent enroll "
                      "prints it); without it, show what would be approved and exit 2");
  approve->add_option("--serial", local.serial, "Device serial to pin (must match a claimed one)");
  approve->add_option("--by", local.by, "Who approves (default: your login name)");
  approve->add_option("--reason", local.reason, "Why");
  approve->add_option("--pending-ttl", local.pending_ttl,
                      "As serve --pending-ttl: an older pending enrollment has expired")
      ->capture_default_str();
  approve->add_option("--db", local.db, "SQLite database file")->required();

  auto* reject = app.add_subcommand(
      "reject", "Remove a pending enrollment (e.g. a squatter) and its TPM binding");
  reject->add_option("NODE", local.node, "Node id")->required();
  reject->add_option("--by", local.by, "Who rejects (default: your login name)");
  reject->add_option("--reason", local.reason, "Why");
  reject->add_option("--db", local.db, "SQLite database file")->required();

  auto* revoke = app.add_subcommand(
      "revoke", "Revoke or decommission a node: its admission becomes deny at once");
  revoke->add_option("NODE", local.node, "Node id")->required();
  revoke->add_option("--by", local.by, "Who revokes")->required();
  revoke->add_option("--reason", local.reason, "Why")->required();
  revoke->add_option("--db", local.db, "SQLite database file")->required();

  auto* nodes = app.add_subcommand("nodes", "Enrolled nodes: list (default) or show NODE");
  nodes->add_option("--db", local.db, "SQLite database file")->required();
  nodes->add_flag("--json", local.json, "JSON output");
  nodes->add_option("--pending-ttl", local.pending_ttl, "As serve --pending-ttl")
      ->capture_default_str();
  auto* nodes_list = nodes->add_subcommand("list", "One line per node");
  nodes_list->fallthrough();
  auto* nodes_show = nodes->add_subcommand("show", "A node's identity and history");
  nodes_show->add_option("NODE", local.node, "Node id")->required();
  nodes_show->fallthrough();

  auto* tokens = app.add_subcommand("tokens", "Per-node enrollment tokens on this database");
  tokens->require_subcommand(1);
  tokens->add_option("--db", local.db, "SQLite database file")->required();
  tokens->add_flag("--json", local.json, "JSON output");
  auto* tokens_issue = tokens->add_subcommand(
      "issue", "Issue a single-use enrollment token bound to a node id (and serial)");
  tokens_issue->add_option("NODE", local.node, "Node id the token enrolls")->required();
  tokens_issue->add_option("--serial", local.serial, "Only a device stating this serial");
  tokens_issue->add_option("--ttl", local.ttl, "Validity, e.g. 30m, 24h, 7d (at most 30d)")
      ->capture_default_str();
  tokens_issue->add_option("--by", local.by, "Who issues it (default: your login name)");
  tokens_issue->add_option("--out", local.out, "Write the token to this new file (0600)");
  tokens_issue->fallthrough();
  auto* tokens_list = tokens->add_subcommand("list", "Tokens (without secrets), newest first");
  tokens_list->fallthrough();

  std::string jwks_key;
  auto* jwks = app.add_subcommand(
      "jwks", "Print the JWKS of a signing key, to pin it on relying parties "
              "(`dpuaudit trust add --jwks`)");
  jwks->add_option("--key", jwks_key, "Verifier signing key (PKCS#8 PEM, 0600)")->required();

  std::string prune_db;
  int64_t prune_reports = 100, prune_days = 90;
  bool prune_json = false;
  auto* prune = app.add_subcommand(
      "prune", "Purge expired nonces and apply report retention once (as serve does)");
  prune->add_option("--db", prune_db, "SQLite database file")->required();
  prune->add_option("--retain-reports", prune_reports,
                    "Keep the latest N report bodies/results per node (0 = no limit)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  prune->add_option("--retain-days", prune_days, "Keep this many days (0 = no limit)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{36500}));
  prune->add_flag("--json", prune_json, "Print the counts as JSON");

  std::string reset_db, reset_node, reset_reason;
  bool reset_force = false, reset_json = false;
  auto* tpm_cmd = app.add_subcommand("tpm", "TPM bindings of nodes");
  tpm_cmd->require_subcommand(1);
  auto* reset = tpm_cmd->add_subcommand(
      "reset",
      "Delete a node's TPM binding so that its TPM enrolls again: a pending one "
      "(never activated, e.g. one an outsider made), or an active one with --force");
  reset->add_option("NODE", reset_node, "Node id")->required();
  reset->add_option("--db", reset_db, "SQLite database file")->required();
  reset->add_flag("--force", reset_force,
                  "Also delete an ACTIVE binding (the node's reports are then denied at "
                  "tpm.ak_bound until it enrolls its TPM again); needs --reason");
  reset->add_option("--reason", reset_reason, "Why (printed with the result)");
  reset->add_flag("--json", reset_json, "Print the result as JSON");

  CLI11_PARSE(app, argc, argv);
  if (jwks->parsed()) {
    auto key = EcPrivateKey::LoadFile(jwks_key);
    if (!key.ok()) {
      std::cerr << "dpuaudit-verifier: " << key.status().message() << "\n";
      return 2;
    }
    const EcPublicKey& pub = key->public_key();
    std::cout << report::Jwks({{pub.Thumbprint(), pub}}).dump(2) << "\n";
    return 0;
  }

  if (prune->parsed()) {
    auto store = verifier::SqliteStore::Open(prune_db);
    if (!store.ok()) {
      std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
      return 2;
    }
    int64_t now = SystemClock::Get().NowUnixSeconds();
    auto nonces = (*store)->PurgeExpiredNonces(now);
    if (!nonces.ok()) {
      std::cerr << "dpuaudit-verifier: " << nonces.status().message() << "\n";
      return 2;
    }
    auto counts = (*store)->PruneReports(Retention(prune_reports, prune_days), now);
    if (!counts.ok()) {
      std::cerr << "dpuaudit-verifier: " << counts.status().message() << "\n";
      return 2;
    }
    nlohmann::json j = {{"nonces_deleted", *nonces},
                        {"results_deleted", counts->results_deleted},
                        {"refused_deleted", counts->refused_deleted},
                        {"bodies_dropped", counts->bodies_dropped}};
    if (prune_json) {
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "purged " << *nonces << " expired nonces; deleted "
                << counts->results_deleted << " results and " << counts->refused_deleted
                << " refused reports; dropped " << counts->bodies_dropped
                << " report bodies\n";
    }
    return 0;
  }

  if (reset->parsed()) {
    if (reset_force && reset_reason.empty()) {
      std::cerr << "dpuaudit-verifier: tpm reset --force needs --reason.\n";
      return 2;
    }
    auto store = verifier::SqliteStore::Open(reset_db);
    if (!store.ok()) {
      std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
      return 2;
    }
    auto deleted = (*store)->DeleteTpmBinding(reset_node, reset_force);
    if (!deleted.ok()) {
      std::cerr << "dpuaudit-verifier: " << deleted.status().message() << "\n";
      return deleted.status().code() == StatusCode::kNotFound ? 1 : 2;
    }
    const std::string state(verifier::TpmBindingStateName(deleted->state));
    if (reset_json) {
      nlohmann::json j = {{"node_id", reset_node},
                          {"deleted_tpm_state", state},
                          {"ek_sha256", deleted->ek_sha256},
                          {"ak_name", deleted->ak_name_hex},
                          {"ek_cert_issuer", deleted->ek_cert_issuer},
                          {"reason", reset_reason}};
      std::cout << j.dump() << "\n";
    } else {
      std::cout << "deleted the " << state << " TPM binding of " << reset_node
                << " (EK sha256 " << deleted->ek_sha256 << ", AK " << deleted->ak_name_hex
                << ")" << (reset_reason.empty() ? "" : "; reason: " + reset_reason)
                << "\nthe node keeps its state, key and results; its next "
                   "`dpuaudit-agent enroll` binds its TPM again (for an approved node "
                   "that needs the bootstrap token)\n";
    }
    return 0;
  }

  if (serve->parsed()) return Serve(flags);
  if (approve->parsed()) return LocalApprove(local);
  if (reject->parsed()) return LocalReject(local);
  if (revoke->parsed()) return LocalRevoke(local);
  if (nodes_show->parsed()) return LocalNodeShow(local);
  if (nodes->parsed()) return LocalNodeList(local);
  if (tokens_issue->parsed()) return LocalTokenIssue(local);
  if (tokens_list->parsed()) return LocalTokenList(local);
  return 2;
}

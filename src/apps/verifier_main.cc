// dpuaudit-verifier: the attestation verifier's HTTP(S) server and its
// operator commands. Thin: routing, limits and Status→HTTP mapping only;
// everything else is verifier::VerifierService.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/common/http_errors.h"
#include "apps/common/http_server.h"
#include "apps/common/version.h"
#include "common/clock.h"
#include "common/crypto.h"
#include "common/files.h"
#include "report/ear.h"
#include "verifier/service.h"
#include "verifier/sqlite_store.h"

namespace dpuaudit::apps {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:8080";
  std::string db;
  std::string policy;
  std::string key;
  std::string bootstrap_token_file;
  std::string admin_token_file;
  std::string tls_cert, tls_key;
  std::string ready_file;
  std::string ek_ca_dir;
  int64_t nonce_ttl = 60;
  HttpLimits http;
  uint32_t challenges_per_minute = 60;
  uint32_t reports_per_minute = 60;
  uint32_t unauthenticated_cpu_ms = 200;
  uint32_t unauthenticated_concurrency = 1;
};

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

// A secret token from a file (trailing whitespace dropped), >= 16 chars.
StatusOr<std::string> ReadToken(const std::string& path, const std::string& what) {
  DPA_ASSIGN_OR_RETURN(Bytes token, ReadFileLimited(path, 4096));
  std::string t = ToString(token);
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) {
    t.pop_back();
  }
  if (t.size() < 16) {
    return InvalidArgumentError(what + " token in " + path +
                                " is shorter than 16 characters.");
  }
  return t;
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
  options.unauthenticated_cpu_ms_per_second = f.unauthenticated_cpu_ms;
  options.unauthenticated_max_concurrent = f.unauthenticated_concurrency;
  options.nonce_ttl_seconds = f.nonce_ttl;
  options.ek_ca_dir = f.ek_ca_dir;
  if (!f.bootstrap_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(options.bootstrap_token,
                         ReadToken(f.bootstrap_token_file, "bootstrap"));
  }
  if (!f.admin_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(options.admin_token, ReadToken(f.admin_token_file, "admin"));
    if (options.admin_token == options.bootstrap_token) {
      return InvalidArgumentError("the admin token must differ from the bootstrap token.");
    }
  }
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
               Reply(res, 200, svc.Jwks().dump());
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
    Reply(res, r->created ? 201 : 200, j.dump());
  });
  server.Route("POST", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/tpm/activate)",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto b = svc.ActivateTpm(req.matches.at(1), req.body);
                if (!b.ok()) return ReplyError(res, b.status());
                nlohmann::json j = {{"node_id", b->node_id},
                                    {"tpm_state", verifier::TpmBindingStateName(b->state)},
                                    {"ak_name", b->ak_name_hex}};
                Reply(res, 200, j.dump());
              });
  server.Route("POST", "/v1/challenges",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto c = svc.IssueChallenge(req.body);
                if (!c.ok()) return ReplyError(res, c.status());
                nlohmann::json j = {{"nonce", c->nonce},
                                    {"expires_at", c->expires_at},
                                    {"pcr_selection", c->pcr_selection}};
                Reply(res, 201, j.dump());
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
    Reply(res, 200, j.dump());
  });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128}))",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto v = svc.NodeView(req.matches.at(1));
               if (!v.ok()) return ReplyError(res, v.status());
               Reply(res, 200, v->dump());
             });
  server.Route("GET", "/v1/refvals", [&svc](const ServerRequest& req, ServerResponse& res) {
    std::string model = req.Query("model").value_or("");
    auto r = svc.ListRefvals(model, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 200, r->dump());
  });
  server.Route("POST", "/v1/refvals", [&svc](const ServerRequest& req, ServerResponse& res) {
    if (!RequireJson(req, res, {"application/json"})) return;
    auto r = svc.ImportRefvals(req.body, BearerToken(req));
    if (!r.ok()) return ReplyError(res, r.status());
    Reply(res, 201, r->dump());
  });
  server.Route("POST", R"(/v1/refvals/([A-Za-z0-9._+:~-]{1,128})/([a-z]{1,16}))",
              [&svc](const ServerRequest& req, ServerResponse& res) {
                if (!RequireJson(req, res, {"application/json"})) return;
                auto r = svc.TransitionRefval(req.matches.at(1), req.matches.at(2), req.body,
                                              BearerToken(req));
                if (!r.ok()) return ReplyError(res, r.status());
                Reply(res, 200, r->dump());
              });
  server.Route("GET", R"(/v1/nodes/([A-Za-z0-9._-]{1,128})/admission)",
             [&svc](const ServerRequest& req, ServerResponse& res) {
               auto a = svc.GetAdmission(req.matches.at(1));
               if (!a.ok()) return ReplyError(res, a.status());
               Reply(res, 200, AdmissionJson(*a).dump());
             });
}

int Serve(const ServeFlags& flags) {
  auto listen = ParseListen(flags.listen);
  if (!listen.ok()) {
    spdlog::error("{}", listen.status().message());
    return 2;
  }
  auto svc = BuildService(flags);
  if (!svc.ok()) {
    spdlog::error("cannot start: {}", svc.status().ToString());
    return 2;
  }
  bool tls = !flags.tls_cert.empty() || !flags.tls_key.empty();
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
  if (!flags.ready_file.empty()) {
    Status s = WriteFileAtomic(flags.ready_file, AsBytes(url + "\n"), 0644);
    if (!s.ok()) {
      spdlog::error("{}", s.ToString());
      return 2;
    }
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  server.Stop();
  spdlog::info("stopped");
  return 0;
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
                    "File holding the enrollment bootstrap token");
  serve->add_option("--admin-token-file", flags.admin_token_file,
                    "File holding the admin API token (reference values); "
                    "without it the admin API is disabled");
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
  serve->add_option("--unauthenticated-cpu-ms", flags.unauthenticated_cpu_ms,
                    "CPU milliseconds per second, in all, for the expensive checks of "
                    "enrollments without a token (RSA key tests; 0 = no limit; 429 beyond)")
      ->capture_default_str()->check(CLI::Range(0u, 100000u));
  serve->add_option("--unauthenticated-concurrency", flags.unauthenticated_concurrency,
                    "How many such checks may run at once (429 beyond)")
      ->capture_default_str()->check(CLI::Range(1u, 256u));
  serve->add_option("--ready-file", flags.ready_file,
                    "Write the listening URL to this file once bound");

  std::string approve_db, approve_node;
  auto* approve = app.add_subcommand("approve", "Approve a pending node enrollment");
  approve->add_option("NODE", approve_node, "Node id")->required();
  approve->add_option("--db", approve_db, "SQLite database file")->required();

  std::string nodes_db;
  auto* nodes = app.add_subcommand("nodes", "List enrolled nodes");
  nodes->add_option("--db", nodes_db, "SQLite database file")->required();

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
  if (approve->parsed()) {
    auto store = verifier::SqliteStore::Open(approve_db);
    if (!store.ok()) {
      std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
      return 2;
    }
    Status s = (*store)->ApproveNode(approve_node, SystemClock::Get().NowUnixSeconds()).status();
    if (!s.ok()) {
      std::cerr << "dpuaudit-verifier: " << s.message() << "\n";
      return s.code() == StatusCode::kNotFound ? 1 : 2;
    }
    std::cout << "approved " << approve_node << "\n";
    return 0;
  }
  if (nodes->parsed()) {
    auto store = verifier::SqliteStore::Open(nodes_db);
    if (!store.ok()) {
      std::cerr << "dpuaudit-verifier: " << store.status().message() << "\n";
      return 2;
    }
    auto list = (*store)->ListNodes();
    if (!list.ok()) {
      std::cerr << "dpuaudit-verifier: " << list.status().message() << "\n";
      return 2;
    }
    std::printf("%-32s %-9s %s\n", "NODE", "STATE", "KEY THUMBPRINT");
    for (const auto& n : *list) {
      std::printf("%-32s %-9s %s\n", n.node_id.c_str(),
                  std::string(verifier::NodeStateName(n.state)).c_str(),
                  n.key_thumbprint.c_str());
    }
    return 0;
  }
  return 2;
}

#include "apps/verifier/serve.h"

#include <signal.h>

#include <map>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "apps/shared/enrollment_print.h"
#include "apps/shared/loopback.h"
#include "apps/shared/token_file.h"
#include "apps/shared/version.h"
#include "apps/verifier/http_errors.h"
#include "apps/verifier/lifecycle.h"
#include "apps/verifier/observability.h"
#include "apps/verifier/routes.h"
#include "common/clock.h"
#include "verifier/webhooks.h"
#include "common/crypto.h"
#include "common/files.h"
#include "verifier/service.h"
#include "verifier/store/pg.h"
#include "verifier/store/pg_store.h"
#include "verifier/store/sql_store.h"

namespace dpuaudit::apps {
namespace {

// One maintenance pass: expired nonces, then retention. Logged, never fatal.
void Maintain(verifier::Store& store, const verifier::RetentionPolicy& retention,
              verifier::Metrics& metrics) {
  int64_t now = SystemClock::Get().NowUnixSeconds();
  auto nonces = store.PurgeExpiredNonces(now);
  if (!nonces.ok()) {
    spdlog::warn("maintenance: purging nonces: {}", nonces.status().ToString());
  } else {
    metrics.nonces_expired.Inc({"purged"}, static_cast<double>(*nonces));
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
  verifier::PgOptions pg_options;
  pg_options.pool_size = f.db_pool;
  DPA_ASSIGN_OR_RETURN(auto store, verifier::OpenStore(f.db, pg_options));
  if (store->dialect() == verifier::sql::Dialect::kPostgres) {
    spdlog::info("store: PostgreSQL {} (pool of {} connections)",
                 verifier::pg::RedactConnInfo(f.db), f.db_pool);
  } else {
    spdlog::info("store: SQLite {}", f.db);
  }
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
  if (f.stale_after == "0") {
    options.stale_after_seconds = 0;
  } else {
    DPA_ASSIGN_OR_RETURN(options.stale_after_seconds,
                         ParseDurationSeconds("--stale-after", f.stale_after));
  }
  if (!f.webhooks.empty()) {
    DPA_ASSIGN_OR_RETURN(options.webhooks, verifier::LoadWebhookConfigFile(f.webhooks));
  }
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

// dpuaudit_node_last_admit_timestamp_seconds from the store: each node
// whose latest result is an admit (one query per node, once at start-up).
void SeedLastAdmit(verifier::Store& store, verifier::Metrics& metrics) {
  auto nodes = store.ListNodes();
  if (!nodes.ok()) {
    spdlog::warn("metrics: listing nodes: {}", nodes.status().ToString());
    return;
  }
  for (const auto& n : *nodes) {
    auto r = store.LatestResult(n.node_id);
    if (r.ok() && r->decision == verifier::kDecisionAdmit) {
      metrics.node_last_admit.Set({n.node_id}, static_cast<double>(r->created_at));
    }
  }
}

}  // namespace

verifier::RetentionPolicy Retention(int64_t reports, int64_t days) {
  return verifier::RetentionPolicy{reports, days * 86400};
}

int Serve(const ServeFlags& flags) {
  auto log_format = ParseLogFormat(flags.log_format);
  if (!log_format.ok()) {
    spdlog::error("{}", log_format.status().message());
    return 2;
  }
  ConfigureLogFormat(*log_format);
  auto listen = ParseListen(flags.listen);
  if (!listen.ok()) {
    spdlog::error("{}", listen.status().message());
    return 2;
  }
  auto shutdown_timeout = ParseDurationSeconds("--shutdown-timeout", flags.shutdown_timeout);
  if (shutdown_timeout.ok() && *shutdown_timeout > 3600) {
    shutdown_timeout = InvalidArgumentError("--shutdown-timeout " + flags.shutdown_timeout +
                                            " is over 1h.");
  }
  if (!shutdown_timeout.ok()) {
    spdlog::error("{}", shutdown_timeout.status().message());
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
  std::unique_ptr<verifier::BmcMonitor> bmc;
  if (!flags.bmc_config.empty()) {
    auto config = verifier::LoadBmcConfigFile(flags.bmc_config);
    if (!config.ok()) {
      spdlog::error("cannot start: {}", config.status().ToString());
      return 2;
    }
    const size_t nodes = config->nodes.size();
    const size_t anchors = config->trust_anchor_files.size();
    const int64_t interval = config->interval_seconds;
    auto monitor = verifier::BmcMonitor::New(*std::move(config), (*svc)->store(), SystemClock::Get());
    if (!monitor.ok()) {
      spdlog::error("cannot start: {}", monitor.status().ToString());
      return 2;
    }
    bmc = *std::move(monitor);
    (*svc)->SetBmcMonitor(bmc.get());
    spdlog::info("BMC path: {} node(s), {} DICE trust anchor file(s), pulled every {} s",
                 nodes, anchors, interval);
  }
  // Node status (issue 15): rows for nodes changed while we were down or
  // by the local operator commands, written before serving.
  // A store that cannot be written now (a full disk) does not stop the
  // start: admission reads the node records and results themselves, and
  // the sweeper retries this every 30 s.
  if (auto n = (*svc)->ReconcileStatuses(/*emit_events=*/true); !n.ok()) {
    spdlog::warn("node status not reconciled yet: {}", n.status().ToString());
  }
  std::unique_ptr<verifier::WebhookDispatcher> webhooks;
  if (!(*svc)->options().webhooks.endpoints.empty()) {
    webhooks = std::make_unique<verifier::WebhookDispatcher>(
        (*svc)->store(), SystemClock::Get(), (*svc)->options().webhooks);
    verifier::WebhookDispatcher* d = webhooks.get();
    (*svc)->SetEventListener([d] { d->Notify(); });
    spdlog::info("webhooks: {} endpoint(s); undelivered events resume from the outbox",
                 (*svc)->options().webhooks.endpoints.size());
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
  std::unique_ptr<verifier::AuditSink> audit;
  if (!flags.audit_log.empty()) {
    auto file = verifier::FileAuditSink::Open(flags.audit_log);
    if (!file.ok()) {
      spdlog::error("cannot start: {}", file.status().ToString());
      return 2;
    }
    audit = *std::move(file);
  } else {
    audit = std::make_unique<LogAuditSink>();
  }
  (*svc)->SetAuditSink(audit.get());
  // A key first used at this start that follows another is a rotation
  // (issue 15): an audit event.
  if (auto keys = (*svc)->store().ListSigningKeys();
      keys.ok() && keys->size() > 1 && (*keys)[0].kid == (*svc)->signing_kid() &&
      (*keys)[0].first_used_at >= SystemClock::Get().NowUnixSeconds() - 60) {
    (*svc)->Audit(verifier::MakeAuditEvent(
        "key_rotation", "start-up", "",
        "signing with key " + (*svc)->signing_kid() + " (first used at " +
            std::to_string((*keys)[0].first_used_at) + "); previous key " + (*keys)[1].kid +
            " stays published until " + std::to_string((*keys)[1].published_until()),
        "ok"));
  }
  (*svc)->Audit(verifier::MakeAuditEvent(
      "policy_loaded", "start-up", "",
      "policy " + (*svc)->policy().name() + " sha256:" + (*svc)->policy().sha256(), "ok"));
  verifier::Metrics metrics;
  SeedLastAdmit((*svc)->store(), metrics);
  // Issue 15: nodes by status and the webhook outbox, read at scrape time
  // (O(nodes + endpoints); /metrics is behind the reader token by default).
  metrics.AddCollector([&svc](verifier::MetricsWriter& w) {
    verifier::Store& store = (*svc)->store();
    std::map<std::string, double> by_status;
    for (std::string_view st : verifier::kNodeStatuses) by_status[std::string(st)] = 0;
    by_status["pending"] = 0;
    if (auto nodes = store.ListNodes(); nodes.ok()) {
      for (const auto& n : *nodes) {
        if (n.state == verifier::NodeState::kPending) by_status["pending"] += 1;
      }
    }
    if (auto statuses = store.ListNodeStatuses(); statuses.ok()) {
      for (const auto& st : *statuses) by_status[st.status] += 1;
    }
    w.Family("dpuaudit_nodes", "Nodes by status (docs/events.md#states)", "gauge");
    for (const auto& [status, n] : by_status) w.Sample("dpuaudit_nodes", {"status"}, {status}, n);
    auto stats = store.OutboxStats();
    if (!stats.ok()) return;
    const int64_t now = SystemClock::Get().NowUnixSeconds();
    w.Family("dpuaudit_webhook_outbox_backlog", "Undelivered webhook deliveries per endpoint",
             "gauge");
    for (const auto& e : *stats) {
      w.Sample("dpuaudit_webhook_outbox_backlog", {"endpoint"}, {e.endpoint},
               static_cast<double>(e.pending));
    }
    w.Family("dpuaudit_webhook_outbox_failing",
             "Undelivered webhook deliveries with at least one failed attempt", "gauge");
    for (const auto& e : *stats) {
      w.Sample("dpuaudit_webhook_outbox_failing", {"endpoint"}, {e.endpoint},
               static_cast<double>(e.failing));
    }
    w.Family("dpuaudit_webhook_outbox_oldest_age_seconds",
             "Age of the oldest undelivered webhook delivery per endpoint (0: none)", "gauge");
    for (const auto& e : *stats) {
      w.Sample("dpuaudit_webhook_outbox_oldest_age_seconds", {"endpoint"}, {e.endpoint},
               e.oldest_pending_at ? static_cast<double>(now - *e.oldest_pending_at) : 0.0);
    }
  });
  // Issue 17: group commit (verifier/store/group_commit.h), so an operator
  // sees how many attestations share one durable transaction.
  metrics.AddCollector([&svc](verifier::MetricsWriter& w) {
    auto* sql_store = dynamic_cast<verifier::SqlStore*>(&(*svc)->store());
    if (sql_store == nullptr) return;
    verifier::sql::GroupCommitter::Stats st = sql_store->GroupCommitStats();
    w.Family("dpuaudit_store_group_commit_batches_total",
             "Write transactions of the group-committed store writes", "counter");
    w.Sample("dpuaudit_store_group_commit_batches_total", {}, {},
             static_cast<double>(st.batches));
    w.Family("dpuaudit_store_group_commit_writes_total",
             "Store writes group-committed (writes / batches: writes per transaction)",
             "counter");
    w.Sample("dpuaudit_store_group_commit_writes_total", {}, {}, static_cast<double>(st.ops));
    w.Family("dpuaudit_store_group_commit_wait_seconds_total",
             "Time writes queued for a batch to take them", "counter");
    w.Sample("dpuaudit_store_group_commit_wait_seconds_total", {}, {},
             static_cast<double>(st.wait_us_total) / 1e6);
    w.Family("dpuaudit_store_group_commit_wait_seconds_max",
             "Longest a write queued for a batch since start", "gauge");
    w.Sample("dpuaudit_store_group_commit_wait_seconds_max", {}, {},
             static_cast<double>(st.wait_us_max) / 1e6);
  });
  HttpServer server(flags.http, [](const std::string& code, const std::string& message) {
    return ErrorBody(code, message);
  });
  InstallRoutes(server, **svc, RouteOptions{&metrics, flags.public_metrics});
  // Issue 17: connections and TLS resumption, so an operator sees whether
  // agents keep their connection and resume their sessions.
  metrics.AddCollector([&server](verifier::MetricsWriter& w) {
    const HttpConnectionStats st = server.ConnectionStats();
    w.Family("dpuaudit_http_connections_total", "HTTP(S) connections accepted and served",
             "counter");
    w.Sample("dpuaudit_http_connections_total", {}, {}, static_cast<double>(st.connections));
    w.Family("dpuaudit_tls_handshakes_total",
             "TLS handshakes followed by a request, full or resumed from a session ticket",
             "counter");
    w.Sample("dpuaudit_tls_handshakes_total", {"session"}, {"full"},
             static_cast<double>(st.tls_full_handshakes));
    w.Sample("dpuaudit_tls_handshakes_total", {"session"}, {"resumed"},
             static_cast<double>(st.tls_resumed_handshakes));
  });
  // SIGINT/SIGTERM (stop) and SIGHUP (reload) are taken by sigwait below;
  // blocked before the server's threads start so that they inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGHUP);
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
  if (tls) {
    if (l.tls_ticket_lifetime_seconds > 0) {
      spdlog::info("TLS session tickets on: lifetime {} s, ticket key in memory only "
                   "(new at each start; a ticket resumes only at this process)",
                   l.tls_ticket_lifetime_seconds);
    } else {
      spdlog::info("TLS session tickets off (--tls-ticket-lifetime 0): every handshake is full");
    }
  }
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
  Maintain((*svc)->store(), retention, metrics);
  spdlog::info("audit events to {}; GET /metrics {}",
               flags.audit_log.empty() ? "the main log" : flags.audit_log,
               flags.public_metrics ? "is PUBLIC (--public-metrics)"
                                    : "needs the reader or admin token");
  if (bmc) {
    // The first pull of every enrolled node runs before the ready file is
    // written, so its first report is judged with its BMC's evidence; at
    // most kStartupPullBudget in all (hung BMCs must not keep the verifier
    // from serving): the monitor's thread pulls the rest at once.
    constexpr auto kStartupPullBudget = std::chrono::seconds(30);
    const auto started = std::chrono::steady_clock::now();
    verifier::VerifierService* service = svc->get();
    for (const auto& id : bmc->NodeIds()) {
      if (std::chrono::steady_clock::now() - started > kStartupPullBudget) {
        spdlog::warn("BMC pulls at start took over {} s; the rest run in the background",
                     kStartupPullBudget.count());
        break;
      }
      auto v = bmc->PullNow(id);
      if (!v.ok() && v.status().code() != StatusCode::kNotFound) {
        spdlog::warn("BMC pull of node {}: {}", id, v.status().message());
      }
    }
    bmc->Start([service](const std::string& node) { service->OnBmcPull(node); });
  }
  if (!flags.ready_file.empty()) {
    Status s = WriteFileAtomic(flags.ready_file, AsBytes(url + "\n"), 0644);
    if (!s.ok()) {
      spdlog::error("{}", s.ToString());
      // The monitor's thread calls into the service, its audit sink and the
      // webhook dispatcher: stop it before they go out of scope.
      bmc.reset();
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
      Maintain((*svc)->store(), retention, metrics);
      purge_pending();
      lock.lock();
    }
  });
  if (webhooks) webhooks->Start();
  // Stale nodes every second; node records changed by the local operator
  // commands every kReconcileSeconds.
  constexpr int kReconcileSeconds = 30;
  std::thread status_sweeper([&] {
    std::unique_lock<std::mutex> lock(stop_mu);
    int ticks = 0;
    while (!stop_cv.wait_for(lock, std::chrono::seconds(1), [&] { return stopping; })) {
      lock.unlock();
      if (auto n = (*svc)->SweepStale(); !n.ok()) {
        spdlog::warn("stale sweep: {}", n.status().ToString());
      }
      if (++ticks % kReconcileSeconds == 0) {
        if (auto n = (*svc)->ReconcileStatuses(true); !n.ok()) {
          spdlog::warn("node status reconcile: {}", n.status().ToString());
        }
      }
      // Issue 16: a signed checkpoint of the audit log when it grew.
      if (flags.checkpoint_interval > 0 && ticks % flags.checkpoint_interval == 0) {
        if (auto cp = (*svc)->Checkpoint(); !cp.ok()) {
          spdlog::warn("audit log checkpoint: {}", cp.status().ToString());
        }
      }
      lock.lock();
    }
  });
  // Shutdown hooks run in this order once the server has drained (issue 15:
  // register more here, e.g. flushing an outbox, before the threads stop).
  ShutdownHooks hooks;
  hooks.Add("maintenance thread", [&] {
    {
      std::lock_guard<std::mutex> lock(stop_mu);
      stopping = true;
    }
    stop_cv.notify_all();
    maintenance.join();
    status_sweeper.join();
    // The log's final head, signed (issue 16).
    if (auto cp = (*svc)->Checkpoint(); !cp.ok()) {
      spdlog::warn("audit log checkpoint at shutdown: {}", cp.status().ToString());
    }
  });
  if (webhooks) {
    // Deliver what is due before exiting; the rest stays in the outbox.
    hooks.Add("webhook outbox", [&webhooks] {
      int64_t left = webhooks->FlushAndStop(std::chrono::seconds(5));
      spdlog::info("webhooks: {} deliveries left in the outbox", left);
    });
  }
  if (bmc) hooks.Add("BMC monitor", [&bmc] { bmc.reset(); });
  if (Status s = SdNotify("READY=1"); !s.ok()) spdlog::warn("{}", s.message());
  int sig = 0;
  for (;;) {
    sigwait(&stop_signals, &sig);
    if (sig != SIGHUP) break;
    // SIGHUP: reload (lifecycle.h ReloadFiles); all files or none.
    (void)SdNotify("RELOADING=1");
    spdlog::info("SIGHUP: reloading policy, token files and TLS certificate");
    if (Status s = ReloadFiles(flags, **svc, server); !s.ok()) {
      spdlog::error("reload refused, nothing changed: {}", s.ToString());
      (*svc)->Audit(verifier::MakeAuditEvent("reload", "SIGHUP", "",
                                             "refused, nothing changed: " + s.message(),
                                             "refused"));
    } else {
      (*svc)->Audit(verifier::MakeAuditEvent(
          "reload", "SIGHUP", "",
          "policy " + (*svc)->policy().name() + " sha256:" + (*svc)->policy().sha256() +
              ", token files and TLS certificate re-read",
          "ok"));
    }
    (void)SdNotify("READY=1");
  }
  spdlog::info("signal {}: stopping (draining requests in flight, at most {} s)", sig,
               *shutdown_timeout);
  (void)SdNotify("STOPPING=1");
  server.Quiesce();
  const size_t left = server.Drain(std::chrono::seconds(*shutdown_timeout));
  if (left > 0) {
    spdlog::warn("shutdown deadline of {} s passed with {} request(s) in flight; closing "
                 "them",
                 *shutdown_timeout, left);
  }
  server.Stop();
  hooks.RunAll();
  spdlog::info("stopped");
  return 0;
}

}  // namespace dpuaudit::apps

// `dpuaudit-verifier serve`: builds the VerifierService from its flags
// (SQLite or PostgreSQL store, policy, signing key, tokens, limits), listens (TLS, or
// plain HTTP only on loopback unless --insecure-http), runs maintenance on
// its own thread and stops on SIGINT/SIGTERM.
#ifndef DPUAUDIT_APPS_VERIFIER_SERVE_H_
#define DPUAUDIT_APPS_VERIFIER_SERVE_H_

#include <cstdint>
#include <string>

#include "apps/verifier/http_server.h"
#include "verifier/store/store.h"

namespace dpuaudit::apps {

struct ServeFlags {
  std::string listen = "127.0.0.1:8080";
  // Seconds between signed audit-log checkpoints (0 = only on bundle export
  // and at shutdown); issue 16.
  int checkpoint_interval = 60;
  std::string bmc_config;  // --bmc-config (verifier/bmc_monitor.h)
  std::string db;   // SQLite path or PostgreSQL connection string (OpenStore)
  int db_pool = 4;  // --db-pool: PostgreSQL connections (PgOptions::pool_size)
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
  // Issue 15: node status and webhooks (docs/events.md, docs/webhooks.md).
  std::string stale_after = "5m";  // --stale-after ("0" = never stale)
  std::string webhooks;            // --webhooks FILE (dpuaudit-webhooks/1)
  // Graceful stop (issue 15): how long SIGTERM waits for requests in flight.
  std::string shutdown_timeout = "10s";
  // Observability (issue 15 §3): --log-format, --audit-log,
  // --public-metrics (apps/verifier/observability.h, verifier/metrics.h,
  // verifier/audit_events.h).
  std::string log_format = "text";
  std::string audit_log;
  bool public_metrics = false;
};


// The retention of `--retain-reports N --retain-days D`.
verifier::RetentionPolicy Retention(int64_t reports, int64_t days);

// Runs until SIGINT/SIGTERM; the exit code (0, or 2 when it cannot start).
// On SIGINT/SIGTERM: stops accepting at once, waits up to --shutdown-timeout
// for requests in flight, runs the shutdown hooks (maintenance thread, BMC
// monitor), exits 0. SIGHUP reloads files (lifecycle.h ReloadFiles). With
// $NOTIFY_SOCKET: READY=1 once serving (after the BMC pulls at start),
// RELOADING=1 / READY=1 around a reload, STOPPING=1 on stop.
int Serve(const ServeFlags& flags);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_VERIFIER_SERVE_H_

// dpuaudit-verifier: the attestation verifier's HTTP(S) server and its
// operator commands. Thin: flags only; serving is apps/verifier/serve.h
// (routes.h maps HTTP onto verifier::VerifierService), the local commands
// operator_commands.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "apps/shared/cli_exit.h"
#include "apps/shared/version.h"
#include "apps/verifier/operator_commands.h"
#include "apps/verifier/serve.h"
#include "apps/verifier/serve_config.h"

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
  // The last value of an option wins, so a flag given after the settings of
  // --config (serve_config.h puts them first) overrides the file.
  serve->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  std::string config_file;
  serve->add_option("--config", config_file,
                    "TOML file of serve flags, one key per long flag without its dashes "
                    "(docs/verifier-config.md); flags given override it, an unknown key "
                    "exits 2");
  serve->add_option("--listen", flags.listen, "HOST:PORT (port 0 = any free port)")
      ->capture_default_str();
  serve->add_option("--db", flags.db,
                    "Store: a SQLite database file, or a PostgreSQL connection string "
                    "(postgresql://USER@HOST/DB?sslmode=verify-full; the password from "
                    "PGPASSFILE or ~/.pgpass, never printed) shared by any number of "
                    "replicas")
      ->required();
  serve->add_option("--db-pool", flags.db_pool,
                    "PostgreSQL: connections this replica keeps open, at most (a request "
                    "that finds all busy for 5 s is 503); ignored for SQLite")
      ->capture_default_str()->check(CLI::Range(1, 256))->envname("DPUAUDIT_DB_POOL");
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
  serve->add_option("--bmc-config", flags.bmc_config,
                    "Per-node BMC configuration (docs/bmc-config-schema.md): the verifier "
                    "pulls each node's BMC over Redfish and SPDM on its own schedule");
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
  serve->add_option("--tls-ticket-lifetime", flags.http.tls_ticket_lifetime_seconds,
                    "How long a TLS session ticket resumes a session, seconds (0 = no "
                    "tickets; the ticket key lives in memory only, new at each start)")
      ->capture_default_str()->check(CLI::Range(0u, kMaxTlsTicketLifetimeSeconds));
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
  serve->add_option("--checkpoint-interval", flags.checkpoint_interval,
                    "Seconds between signed audit-log checkpoints when the log grew "
                    "(0 = only on bundle export and at shutdown; docs/audit.md)")
      ->capture_default_str()->check(CLI::Range(0, 86400));
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
  serve->add_option("--shutdown-timeout", flags.shutdown_timeout,
                    "On SIGTERM/SIGINT: stop accepting at once, then wait this long for "
                    "requests in flight (e.g. 10s, 1m) before closing them")
      ->capture_default_str();
  serve->add_option("--log-format", flags.log_format,
                    "Log lines on stderr: text (default) or json (one object per line)")
      ->check(CLI::IsMember({"text", "json"}));
  serve->add_option("--audit-log", flags.audit_log,
                    "Append audit events (JSON lines) to this file, created 0600 "
                    "(default: into the main log)");
  serve->add_flag("--public-metrics", flags.public_metrics,
                  "GET /metrics without a token (it names enrolled nodes; default: the "
                  "reader or admin token)");
  serve->add_option("--ready-file", flags.ready_file,
                    "Write the listening URL to this file once bound");
  serve->add_option("--pending-ttl", flags.pending_ttl,
                    "An unapproved enrollment expires after this (e.g. 30m, 24h): it can "
                    "no longer be approved and its id is free again")
      ->capture_default_str();
  serve->add_option("--stale-after", flags.stale_after,
                    "A node with no appraisal for this long is stale and denied, with a "
                    "node.stale event (e.g. 90s, 5m; 0 = never); judged from stored times, "
                    "so a restart does not revive it")
      ->capture_default_str();
  serve->add_option("--webhooks", flags.webhooks,
                    "Deliver decision events to the endpoints in this file "
                    "(dpuaudit-webhooks/1, docs/webhooks.md), HMAC-SHA256-signed, at least "
                    "once, through the store's outbox");
  serve->add_option("--max-pending", flags.max_pending,
                    "Most pending enrollments at once (0 = no cap; 503 beyond)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{10000000}));

  // The operator commands' --db: the database serve uses (never created).
  const std::string kDbHelp =
      "The store serve --db uses: a SQLite database file or a PostgreSQL connection "
      "string (postgresql://...); never created, and its schema never changed";
  LocalFlags local;
  // The state-changing local commands append an audit event
  // (docs/audit-events-schema.md). Each binds its own variable: CLI11 may
  // fill an option from the environment in a subcommand that did not run,
  // which must not overwrite the flag of the one that did.
  std::map<CLI::App*, std::string> audit_logs;
  auto add_audit_log = [&audit_logs](CLI::App* c) {
    c->add_option("--audit-log", audit_logs[c],
                  "Append this action's audit event (JSON line, source \"local\") to this "
                  "file, created 0600: the one `serve --audit-log` writes (default: stderr)")
        ->envname("DPUAUDIT_AUDIT_LOG");
  };
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
  approve->add_option("--db", local.db, kDbHelp)->required();
  approve->add_flag("--json", local.json, "JSON output (docs/schemas/approve.schema.json)");
  add_audit_log(approve);

  auto* reject = app.add_subcommand(
      "reject", "Remove a pending enrollment (e.g. a squatter) and its TPM binding");
  reject->add_option("NODE", local.node, "Node id")->required();
  reject->add_option("--by", local.by, "Who rejects (default: your login name)");
  reject->add_option("--reason", local.reason, "Why");
  reject->add_option("--db", local.db, kDbHelp)->required();
  reject->add_flag("--json", local.json, "JSON output (docs/schemas/reject.schema.json)");
  add_audit_log(reject);

  auto* revoke = app.add_subcommand(
      "revoke", "Revoke or decommission a node: its admission becomes deny at once");
  revoke->add_option("NODE", local.node, "Node id")->required();
  revoke->add_option("--by", local.by, "Who revokes")->required();
  revoke->add_option("--reason", local.reason, "Why")->required();
  revoke->add_option("--db", local.db, kDbHelp)->required();
  revoke->add_flag("--json", local.json, "JSON output (docs/schemas/node-revoke.schema.json)");
  add_audit_log(revoke);

  auto* nodes = app.add_subcommand("nodes", "Enrolled nodes: list (default) or show NODE");
  nodes->add_option("--db", local.db, kDbHelp)->required();
  nodes->add_flag("--json", local.json,
                  "JSON output (docs/schemas/nodes-list.schema.json, node-show.schema.json)");
  nodes->add_option("--pending-ttl", local.pending_ttl, "As serve --pending-ttl")
      ->capture_default_str();
  auto* nodes_list = nodes->add_subcommand("list", "One line per node");
  nodes_list->fallthrough();
  auto* nodes_show = nodes->add_subcommand("show", "A node's identity and history");
  nodes_show->add_option("NODE", local.node, "Node id")->required();
  nodes_show->fallthrough();

  auto* tokens = app.add_subcommand("tokens", "Per-node enrollment tokens on this database");
  tokens->require_subcommand(1);
  tokens->add_option("--db", local.db, kDbHelp)->required();
  tokens->add_flag("--json", local.json,
                   "JSON output (docs/schemas/tokens-issue.schema.json, "
                   "tokens-list.schema.json)");
  auto* tokens_issue = tokens->add_subcommand(
      "issue", "Issue a single-use enrollment token bound to a node id (and serial)");
  tokens_issue->add_option("NODE", local.node, "Node id the token enrolls")->required();
  tokens_issue->add_option("--serial", local.serial, "Only a device stating this serial");
  tokens_issue->add_option("--ttl", local.ttl, "Validity, e.g. 30m, 24h, 7d (at most 30d)")
      ->capture_default_str();
  tokens_issue->add_option("--by", local.by, "Who issues it (default: your login name)");
  tokens_issue->add_option("--out", local.out, "Write the token to this new file (0600)");
  add_audit_log(tokens_issue);
  tokens_issue->fallthrough();
  auto* tokens_list = tokens->add_subcommand("list", "Tokens (without secrets), newest first");
  tokens_list->fallthrough();

  std::string jwks_key;
  auto* jwks = app.add_subcommand(
      "jwks", "Print the JWKS of a signing key, to pin it on relying parties "
              "(`dpuaudit trust add --jwks`; docs/schemas/jwks.schema.json)");
  jwks->add_option("--key", jwks_key, "Verifier signing key (PKCS#8 PEM, 0600)")->required();

  // Issue 15 (keys): the signing keys recorded in the store.
  std::string keys_db;
  bool keys_json = false;
  auto* keys_cmd = app.add_subcommand("keys", "EAR signing keys the verifier has used");
  keys_cmd->require_subcommand(1);
  auto* keys_list = keys_cmd->add_subcommand(
      "list", "Every signing key: current, published until T, or retired");
  keys_list->add_option("--db", keys_db, kDbHelp)->required();
  keys_list->add_flag("--json", keys_json, "JSON output (docs/schemas/keys-list.schema.json)");

  PruneFlags prune_flags;
  auto* prune = app.add_subcommand(
      "prune", "Purge expired nonces and apply report retention once (as serve does)");
  prune->add_option("--db", prune_flags.db, kDbHelp)->required();
  prune->add_option("--retain-reports", prune_flags.retain_reports,
                    "Keep the latest N report bodies/results per node (0 = no limit)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  prune->add_option("--retain-days", prune_flags.retain_days, "Keep this many days (0 = no limit)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{36500}));
  prune->add_flag("--json", prune_flags.json,
                  "Print the counts as JSON (docs/schemas/prune.schema.json)");
  prune->add_option("--by", prune_flags.by, "Who prunes (default: your login name)");
  add_audit_log(prune);

  TpmResetFlags reset_flags;
  auto* tpm_cmd = app.add_subcommand("tpm", "TPM bindings of nodes");
  tpm_cmd->require_subcommand(1);
  auto* reset = tpm_cmd->add_subcommand(
      "reset",
      "Delete a node's TPM binding so that its TPM enrolls again: a pending one "
      "(never activated, e.g. one an outsider made), or an active one with --force");
  reset->add_option("NODE", reset_flags.node, "Node id")->required();
  reset->add_option("--db", reset_flags.db, kDbHelp)->required();
  reset->add_flag("--force", reset_flags.force,
                  "Also delete an ACTIVE binding (the node's reports are then denied at "
                  "tpm.ak_bound until it enrolls its TPM again); needs --reason");
  reset->add_option("--reason", reset_flags.reason, "Why (printed with the result)");
  reset->add_flag("--json", reset_flags.json,
                  "Print the result as JSON (docs/schemas/tpm-reset.schema.json)");
  reset->add_option("--by", reset_flags.by, "Who resets it (default: your login name)");
  add_audit_log(reset);

  // Issue 16: the hash-chained audit log in the store (docs/audit.md).
  AuditFlags audit_flags;
  auto* audit_cmd = app.add_subcommand("audit", "The hash-chained audit log in the store");
  audit_cmd->require_subcommand(1);
  auto* audit_verify = audit_cmd->add_subcommand(
      "verify", "Walk the whole chain and check every signed checkpoint; names the first "
                "broken link (exit 1)");
  audit_verify->add_option("--db", audit_flags.db, kDbHelp)->required();
  audit_verify->add_option("--trust", audit_flags.trust,
                           "Pinned verifier keys for the checkpoints (JWKS, PEM or trust "
                           "file); default: the keys recorded in the store");
  audit_verify->add_flag("--json", audit_flags.json,
                         "JSON output (docs/schemas/audit-verify.schema.json)");
  auto* audit_checkpoint = audit_cmd->add_subcommand(
      "checkpoint", "Sign the log's current head with the verifier key and store it");
  audit_checkpoint->add_option("--db", audit_flags.db, kDbHelp)->required();
  audit_checkpoint->add_option("--key", audit_flags.key,
                               "Verifier signing key (PKCS#8 PEM, 0600)")->required();
  audit_checkpoint->add_option("--verifier-id", audit_flags.verifier_id,
                               "Verifier instance id recorded in the checkpoint");
  audit_checkpoint->add_flag("--json", audit_flags.json,
                             "JSON output (docs/schemas/audit-checkpoint.schema.json)");

  auto expanded = ExpandServeConfig(*serve, argc, argv);
  if (!expanded.ok()) {
    std::cerr << "dpuaudit-verifier: " << expanded.status().message() << "\n";
    return kUsageExit;
  }
  std::vector<char*> args;
  for (std::string& a : *expanded) args.push_back(a.data());
  if (std::optional<int> rc =
          ParseCommandLine(app, static_cast<int>(args.size()), args.data())) {
    return *rc;
  }
  for (auto& [c, path] : audit_logs) {
    if (c->parsed()) local.audit_log = prune_flags.audit_log = reset_flags.audit_log = path;
  }
  if (jwks->parsed()) return PrintJwks(jwks_key);
  if (keys_list->parsed()) return SigningKeysList(keys_db, keys_json);
  if (prune->parsed()) return Prune(prune_flags);
  if (audit_verify->parsed()) return AuditVerify(audit_flags);
  if (audit_checkpoint->parsed()) return AuditCheckpoint(audit_flags);
  if (reset->parsed()) return TpmReset(reset_flags);
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

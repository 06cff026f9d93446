// dpuaudit: the command line for people — inspect reports and results,
// gate a provisioning step on a node's admission.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "apps/shared/cli_exit.h"
#include "apps/cli/admit.h"
#include "apps/cli/bmc.h"
#include "apps/cli/bundle.h"
#include "apps/cli/cli_util.h"
#include "apps/cli/enrollment.h"
#include "apps/cli/eventlog.h"
#include "apps/cli/firmware.h"
#include "apps/cli/fleet.h"
#include "apps/cli/nodes.h"
#include "apps/cli/policy.h"
#include "apps/cli/refvals_import.h"
#include "apps/shared/enrollment_print.h"
#include "apps/cli/reports.h"
#include "apps/shared/version.h"

static int Main(int argc, char** argv) {
  using namespace dpuaudit::apps;
  CLI::App app{"dpuaudit: inspect BlueField attestation reports and results, gate admission"};
  app.set_version_flag("--version", std::string(Version()));
  app.require_subcommand(1);
  // Issue 15 §5: the client settings every command talking to a verifier
  // shares may come from the environment; a flag given overrides it.
  // $DPUAUDIT_CONFIG is the default file (then it must exist); CLI11 reads
  // the config file before the environment, so it cannot be an envname.
  const char* env_config = std::getenv("DPUAUDIT_CONFIG");
  app.set_config("--config", env_config != nullptr ? env_config : "",
                 "Read flags from this TOML file ([subcommand] sections, one key per long "
                 "flag; default $DPUAUDIT_CONFIG); flags given override it, it overrides "
                 "the environment",
                 env_config != nullptr);
  app.allow_config_extras(false);  // an unknown key is a usage error (exit 2)
  // A file argument: an existing file, or "-" for stdin.
  const CLI::Validator file_or_stdin(
      [](std::string& s) { return s == "-" ? std::string() : CLI::ExistingFile(s); },
      "FILE|-");

  std::string file, pubkey;
  std::vector<std::string> files;
  // Each subcommand binds its own copy of the shared settings: CLI11 fills
  // an option from the environment in every subcommand, parsed or not, so
  // one variable shared by several would take the environment's value over
  // a flag given to the one that ran. The parsed one's copy is picked below.
  std::map<CLI::App*, ReadTarget> rts;
  auto add_read_target = [&rts](CLI::App* c, const std::string& what) {
    ReadTarget& rt = rts[c];
    c->add_option("--verifier", rt.verifier, what)->envname("DPUAUDIT_VERIFIER");
    c->add_option("--token-file", rt.token_file,
                  "Reader (or admin) token file for the verifier (0600)")
        ->envname("DPUAUDIT_TOKEN_FILE");
    c->add_option("--cacert", rt.cacert, "CA bundle for https")->envname("DPUAUDIT_CA");
    c->add_flag("--insecure-http", rt.insecure_http,
                "Allow plain http:// to a non-loopback verifier");
  };

  auto* report_cmd = app.add_subcommand("report", "Signed attestation reports");
  report_cmd->require_subcommand(1);
  auto* rshow = report_cmd->add_subcommand("show", "Show a report: signature, claims, evidence, findings");
  rshow->add_option("FILE", file, "Report (JWS); - reads stdin")->required()->check(file_or_stdin);
  rshow->add_option("--pubkey", pubkey, "Agent public key (PEM) to check the signature");
  add_read_target(rshow, "Fetch the node's enrolled key from this verifier");
  bool report_json = false;
  rshow->add_flag("--json", report_json, "JSON output (docs/schemas/report-show.schema.json)");
  std::string rshow_ear;
  rshow->add_option("--ear", rshow_ear,
                    "The EAR of this report (matched by its sha256): show the reference-value "
                    "releases it matched next to the firmware table")
      ->check(file_or_stdin);

  auto* rfw = report_cmd->add_subcommand(
      "firmware", "Firmware versions, boot-stream and OS boot digests of a report");
  rfw->add_option("FILE", file, "Report (JWS); - reads stdin")->required()->check(file_or_stdin);
  rfw->add_option("--pubkey", pubkey, "Agent public key (PEM) to check the signature");
  add_read_target(rfw, "Fetch the node's enrolled key from this verifier");
  rfw->add_flag("--json", report_json, "JSON output (docs/schemas/report-firmware.schema.json)");

  std::string quote_out, quote_ak;
  auto* rquote = report_cmd->add_subcommand(
      "export-quote",
      "Write a report's TPM quote as tpm2_checkquote reads it (quote.msg, quote.sig, "
      "quote.pcrs, ak.pub.pem, qualifying.hex)");
  rquote->add_option("FILE", file, "Report (JWS); - reads stdin")->required()->check(file_or_stdin);
  rquote->add_option("--out", quote_out, "Output folder")->required();
  rquote->add_option("--ak", quote_ak, "AK public key: TPM2B_PUBLIC file or PEM");
  add_read_target(rquote, "Fetch the node's bound AK from this verifier");
  rquote->add_flag("--json", report_json,
                   "JSON output (docs/schemas/report-export-quote.schema.json)");

  bool eventlog_json = false;
  auto* eventlog_cmd = app.add_subcommand(
      "eventlog", "Parse a TCG boot event log: events and replayed PCRs per bank");
  eventlog_cmd->add_option("FILE", file, "Event log (binary_bios_measurements); - reads stdin")
      ->required()->check(file_or_stdin);
  eventlog_cmd->add_flag("--json", eventlog_json,
                         "JSON output (docs/schemas/eventlog.schema.json)");

  // Pinned verifier keys: the only keys an EAR is checked against.
  std::map<CLI::App*, PinnedKeySource> pinss;
  auto add_pins = [&pinss](CLI::App* c) {
    PinnedKeySource& pins = pinss[c];
    auto* j = c->add_option("--jwks", pins.jwks_file, "Pinned verifier JWKS file");
    auto* k = c->add_option("--verifier-key", pins.verifier_key_file,
                            "Pinned verifier public key (PEM)");
    c->add_option("--trust-file", pins.trust_file,
                  "Trust file (default: $DPUAUDIT_TRUST_FILE, "
                  "$XDG_CONFIG_HOME/dpuaudit/trust.json, ~/.config/dpuaudit/trust.json); "
                  "--jwks or --verifier-key given win over it")
        ->envname("DPUAUDIT_TRUST");
    j->excludes(k);
  };

  auto* result_cmd = app.add_subcommand("result", "Attestation results (EAR JWTs)");
  result_cmd->require_subcommand(1);
  auto* eshow = result_cmd->add_subcommand(
      "show", "Show an EAR: signature (against pinned keys), submods, rules");
  eshow->add_option("FILE", file, "EAR (JWT); - reads stdin")->required()->check(file_or_stdin);
  add_pins(eshow);
  bool result_json = false;
  eshow->add_flag("--json", result_json,
                  "The signature check and the signed claims (docs/schemas/result-show.schema.json)");
  auto* esum = result_cmd->add_subcommand("summary", "One line per EAR: node, decision, failing rules");
  esum->add_option("FILES", files, "EARs (JWT)")->required()->check(CLI::ExistingFile);
  add_pins(esum);
  esum->add_flag("--json", result_json, "JSON output (docs/schemas/result-summary.schema.json)");

  AdmitOptions ao;
  std::string admit_verifier_id;
  auto* admit = app.add_subcommand(
      "admit", "Gate on a node's admission: exit 0 admit, 1 deny, 2 error");
  admit->add_option("--verifier", ao.verifier, "Verifier base URL (fetch the EAR)")
      ->envname("DPUAUDIT_VERIFIER");
  admit->add_option("--ear", ao.ear_file,
                    "Check this EAR file (- reads stdin) instead of fetching one")
      ->check(file_or_stdin);
  admit->add_option("--node", ao.node, "Node id")->required();
  admit->add_option("--verifier-id", admit_verifier_id,
                    "Require this verifier id (ear.verifier-id instance) in the EAR");
  admit->add_option("--token-file", ao.token_file, "Reader (or admin) token file (0600)")
      ->envname("DPUAUDIT_TOKEN_FILE");
  admit->add_option("--cacert", ao.cacert, "CA bundle for https")->envname("DPUAUDIT_CA");
  admit->add_flag("--insecure-http", ao.insecure_http,
                  "Allow plain http:// to a non-loopback verifier");
  admit->add_option("--max-skew", ao.max_skew_seconds,
                    "Seconds an EAR's iat may lie in the future")
      ->capture_default_str()->check(CLI::Range(0, 3600));
  admit->add_flag("--json", ao.json, "Print the outcome as JSON");
  admit->add_flag("-q,--quiet", ao.quiet, "Print nothing; the exit code tells");
  add_pins(admit);

  auto* trust = app.add_subcommand("trust", "Pinned verifier keys (trust file, docs/trust-file.md)");
  trust->require_subcommand(1);
  TrustAddOptions ta;
  auto* trust_add = trust->add_subcommand(
      "add", "Pin a verifier key: --jwks FILE | --verifier-key PEM | --verifier URL --fingerprint KID");
  trust_add->add_option("--jwks", ta.jwks_file, "JWKS file (dpuaudit-verifier jwks --key …)");
  trust_add->add_option("--verifier-key", ta.verifier_key_file, "Verifier public key (PEM)");
  trust_add->add_option("--verifier", ta.verifier,
                        "Fetch the JWKS from this verifier (needs --fingerprint)");
  trust_add->add_option("--fingerprint", ta.fingerprint,
                        "Thumbprint (kid) you confirmed out of band; only that key is pinned");
  trust_add->add_option("--trust-file", ta.trust_file, "Trust file to write");
  trust_add->add_option("--cacert", ta.cacert, "CA bundle for https");
  trust_add->add_flag("--insecure-http", ta.insecure_http,
                      "Allow plain http:// to a non-loopback verifier");
  trust_add->add_flag("--json", ta.json, "JSON output (docs/schemas/trust-change.schema.json)");
  std::string trust_file, trust_kid;
  bool trust_json = false;
  auto* trust_list = trust->add_subcommand("list", "List pinned keys");
  trust_list->add_option("--trust-file", trust_file, "Trust file");
  trust_list->add_flag("--json", trust_json, "JSON output (docs/schemas/trust-list.schema.json)");
  auto* trust_remove = trust->add_subcommand("remove", "Unpin a key");
  trust_remove->add_option("KID", trust_kid,
                          "Key id (one that starts with '-' goes after --: remove -- -eoX0...)")
      ->required();
  trust_remove->add_option("--trust-file", trust_file, "Trust file");
  trust_remove->add_flag("--json", trust_json,
                         "JSON output (docs/schemas/trust-change.schema.json)");

  auto* policy_cmd = app.add_subcommand("policy", "Verifier policies (docs/policy-schema.md)");
  policy_cmd->require_subcommand(1);
  bool policy_json = false, policy_wide = false;
  auto* policy_check = policy_cmd->add_subcommand(
      "check", "Validate a policy as the verifier loads it and print what it requires "
               "(exit 0 valid, 1 invalid, 2 unreadable)");
  policy_check->add_option("FILE", file, "Policy file; - reads stdin")
      ->required()
      ->check(file_or_stdin);
  policy_check->add_flag("--json", policy_json,
                         "JSON output (docs/schemas/policy-check.schema.json)");
  policy_check->add_flag("--wide", policy_wide, "Whole cells and each rule's remediation");

  auto* bfb_cmd = app.add_subcommand("bfb", "BlueField boot streams (BFB files)");
  bfb_cmd->require_subcommand(1);
  bool bfb_json = false;
  auto* bfb_inspect = bfb_cmd->add_subcommand(
      "inspect", "Image table: id, name, version, length, CRC, SHA-384 (exit 1 on a bad CRC)");
  bfb_inspect->add_option("FILE", file, "BFB file or boot partition image; - reads stdin")
      ->required()
      ->check(file_or_stdin);
  bfb_inspect->add_flag("--json", bfb_json,
                        "Print the layout as JSON (docs/schemas/bfb-inspect.schema.json)");

  std::map<CLI::App*, AdminTarget> admins;
  auto add_admin = [&admins](CLI::App* c) {
    AdminTarget& admin = admins[c];
    c->add_option("--verifier", admin.verifier, "Verifier base URL")
        ->envname("DPUAUDIT_VERIFIER")
        ->required();
    c->add_option("--admin-token-file", admin.token_file, "Admin API token file")
        ->envname("DPUAUDIT_TOKEN_FILE")
        ->required();
    c->add_option("--cacert", admin.cacert, "CA bundle for https")->envname("DPUAUDIT_CA");
    c->add_flag("--insecure-http", admin.insecure_http,
                "Allow plain http:// to a non-loopback verifier");
  };
  auto* refvals = app.add_subcommand("refvals", "Reference values (verifier admin API)");
  refvals->require_subcommand(1);
  ImportBfbOptions ib;
  auto* rv_import_bfb = refvals->add_subcommand(
      "import-bfb", "Create a release from every image of a BFB release file");
  rv_import_bfb->add_option("FILE", ib.file, "BFB file")->required()->check(CLI::ExistingFile);
  rv_import_bfb->add_option("--model", ib.model, "BF2 | BF3")->required();
  rv_import_bfb->add_option("--state", ib.state, "pending (default) | active")
      ->check(CLI::IsMember({"pending", "active"}));
  rv_import_bfb->add_option("--release", ib.release, "Release label (default: file name)");
  rv_import_bfb->add_option("--psid", ib.psids, "Restrict to these PSIDs (repeatable)");
  rv_import_bfb->add_option("--version", ib.versions,
                            "COMPONENT=VERSION to add, e.g. atf=v2.2(release):4.9.1-21-g... "
                            "or nic-fw=32.43.1008 (repeatable)");
  rv_import_bfb->add_option("--upgrade-from", ib.upgrade_from,
                            "Release a node may upgrade from (repeatable)");
  rv_import_bfb->add_option("--by", ib.by, "Who approves the import (default: your login name)");
  rv_import_bfb->add_option("--reason", ib.reason, "Why (default: \"import of <file name>\")");
  rv_import_bfb->add_option("--out", ib.out,
                            "Write the manifest here instead of importing (- prints it)");
  rv_import_bfb->add_flag("--allow-digest-only", ib.allow_digest_only,
                          "Import although the BFB and --version give no component version "
                          "(refused otherwise, exit 2)");
  rv_import_bfb->add_flag("--json", ib.json,
                          "JSON output: the verifier's answer (docs/schemas/refvals-import"
                          ".schema.json); with --out, the manifest written");
  AdminTarget& bfb_admin = admins[rv_import_bfb];
  rv_import_bfb->add_option("--verifier", bfb_admin.verifier, "Verifier base URL")
      ->envname("DPUAUDIT_VERIFIER");
  rv_import_bfb->add_option("--admin-token-file", bfb_admin.token_file, "Admin API token file")
      ->envname("DPUAUDIT_TOKEN_FILE");
  rv_import_bfb->add_option("--cacert", bfb_admin.cacert, "CA bundle for https")
      ->envname("DPUAUDIT_CA");
  // Issue 16 §6: reference values proposed from a known-good machine, staged
  // pending; and the withdrawal of a pending release imported by mistake.
  ProposeOptions po;
  std::map<CLI::App*, int> propose_kind;  // 1 eventlog, 2 report
  for (int kind : {1, 2}) {
    auto* c = refvals->add_subcommand(
        kind == 1 ? "import-eventlog" : "import-report",
        kind == 1 ? "Stage tpm-pcr/tpm-app values replayed from a known-good TCG event log "
                    "(pending; exit 0 staged, 2 error)"
                  : "Stage the firmware, boot-chain and TPM values of a known-good machine's "
                    "report (pending; exit 0 staged, 1 signature does not verify, 2 error)");
    c->add_option(kind == 1 ? "LOG" : "REPORT", po.file,
                  kind == 1 ? "Event log (binary_bios_measurements); - reads stdin"
                            : "Signed report (JWS); - reads stdin")
        ->required()
        ->check(file_or_stdin);
    c->add_option("--model", po.model, "BF2 | BF3 (default BF3)");
    c->add_option("--release", po.release,
                  kind == 1 ? "Release label (default eventlog-<sha256 prefix of the log>)"
                            : "Release label (default: the report's OS release)");
    c->add_option("--psid", po.psids, "Restrict to these PSIDs (repeatable)");
    c->add_option("--pcr", po.pcrs,
                  "Propose these sha256 PCRs (repeatable; default 0-9 the log extends)")
        ->check(CLI::Range(0, 23));
    if (kind == 2) {
      c->add_option("--node-key", po.node_key,
                    "The node's public key (PEM): check the report's signature first (without "
                    "it the values come from an unauthenticated file)");
    }
    c->add_option("--by", po.by, "Who proposes (default: your login name)");
    c->add_option("--reason", po.reason, "Why (default: \"proposed from <file>\")");
    c->add_flag("--dry-run", po.dry_run,
                "Print the manifest it would send (docs/schemas/refvals-manifest.schema.json)");
    c->add_flag("--json", po.json, "JSON output (docs/schemas/refvals-propose.schema.json)");
    AdminTarget& a = admins[c];
    c->add_option("--verifier", a.verifier, "Verifier base URL")->envname("DPUAUDIT_VERIFIER");
    c->add_option("--admin-token-file", a.token_file, "Admin API token file")
        ->envname("DPUAUDIT_TOKEN_FILE");
    c->add_option("--cacert", a.cacert, "CA bundle for https")->envname("DPUAUDIT_CA");
    c->add_flag("--insecure-http", a.insecure_http,
                "Allow plain http:// to a non-loopback verifier");
    propose_kind[c] = kind;
  }
  std::string wd_release, wd_reason;
  bool wd_json = false;
  auto* rv_withdraw = refvals->add_subcommand(
      "withdraw",
      "Withdraw a PENDING release imported by mistake (exit 0 withdrawn, 1 refused: not "
      "pending, 2 error or unknown release)");
  rv_withdraw->add_option("RELEASE", wd_release, "Release label")->required();
  rv_withdraw->add_option("--reason", wd_reason, "Why")->required();
  rv_withdraw->add_option("--by", po.by, "Who withdraws (default: your login name)");
  rv_withdraw->add_flag("--json", wd_json,
                        "JSON output (docs/schemas/refvals-withdraw.schema.json)");
  add_admin(rv_withdraw);
  auto* rv_import = refvals->add_subcommand("import", "Import a JSON manifest (docs/refvals-schema.md)");
  rv_import->add_option("FILE", file, "Manifest; - reads stdin")->required()->check(file_or_stdin);
  add_admin(rv_import);
  std::string rv_model, rv_out;
  bool rv_json = false, rv_values = false;
  rv_import->add_flag("--json", rv_json,
                      "JSON output (docs/schemas/refvals-import.schema.json)");
  auto* rv_list = refvals->add_subcommand("list", "Releases, their state, history and values");
  rv_list->add_option("--model", rv_model, "Only this model (BF2 | BF3)");
  rv_list->add_flag("--json", rv_json,
                    "Print the manifest JSON (docs/schemas/refvals-manifest.schema.json)");
  rv_list->add_flag("--values", rv_values, "Also print every value (versions, digests)");
  add_admin(rv_list);
  auto* rv_export = refvals->add_subcommand("export", "Export every release as a manifest");
  rv_export->add_option("--model", rv_model, "Only this model (BF2 | BF3)");
  rv_export->add_option("--out", rv_out, "Output file (default: stdout)");
  rv_export->add_flag("--json", rv_json,
                      "With --out: what was written (docs/schemas/refvals-export.schema.json)");
  add_admin(rv_export);
  std::string rv_release, rv_by, rv_reason;
  bool rv_obsolete_previous = false;
  std::map<std::string, CLI::App*> rv_transitions;
  for (const char* action : {"promote", "obsolete", "revoke", "reinstate"}) {
    auto* c = refvals->add_subcommand(
        action, std::string(action) == "promote"     ? "pending -> active"
                : std::string(action) == "obsolete" ? "active -> obsolete (AR4SI warning)"
                : std::string(action) == "revoke"   ? "any -> revoked (contraindicated; final)"
                                                     : "obsolete -> active");
    c->add_option("RELEASE", rv_release, "Release label")->required();
    c->add_option("--by", rv_by, "Who approves")->required();
    c->add_option("--reason", rv_reason, "Why")->required();
    c->add_flag("--json", rv_json, "JSON output (docs/schemas/refvals-transition.schema.json)");
    if (std::string(action) == "promote") {
      c->add_flag("--obsolete-previous", rv_obsolete_previous,
                  "Also mark every other active release of the model obsolete");
    }
    add_admin(c);
    rv_transitions[action] = c;
  }

  // Enrollment tokens and node revocation (issue 12), admin API.
  auto* tokens = app.add_subcommand("tokens", "Per-node enrollment tokens (verifier admin API)");
  tokens->require_subcommand(1);
  TokenIssueOptions tio;
  auto* tok_issue = tokens->add_subcommand(
      "issue", "Issue a single-use enrollment token bound to a node id (and serial)");
  tok_issue->add_option("NODE", tio.node_id, "Node id the token enrolls")->required();
  tok_issue->add_option("--serial", tio.serial, "Only a device stating this serial");
  tok_issue->add_option("--ttl", tio.ttl, "Validity, e.g. 30m, 24h, 7d (at most 30d)")
      ->capture_default_str();
  tok_issue->add_option("--by", tio.by, "Who issues it (default: your login name)");
  tok_issue->add_option("--out", tio.out, "Write the token to this new file (0600)");
  tok_issue->add_flag("--json", tio.json, "JSON output (docs/schemas/tokens-issue.schema.json)");
  add_admin(tok_issue);
  bool tok_json = false;
  auto* tok_list = tokens->add_subcommand("list", "Tokens (without secrets) and their status");
  tok_list->add_flag("--json", tok_json, "JSON output (docs/schemas/tokens-list.schema.json)");
  add_admin(tok_list);
  std::string tok_id, tok_by;
  auto* tok_revoke = tokens->add_subcommand("revoke", "Make an unused token unusable");
  tok_revoke->add_option("TOKEN_ID", tok_id, "Token id (from tokens list)")->required();
  tok_revoke->add_option("--by", tok_by, "Who revokes it (default: your login name)");
  tok_revoke->add_flag("--json", tok_json, "JSON output (docs/schemas/token-revoke.schema.json)");
  add_admin(tok_revoke);
  auto* nodes_cmd = app.add_subcommand("nodes", "Enrolled nodes (verifier admin API)");
  nodes_cmd->require_subcommand(1);
  std::string nr_node, nr_by, nr_reason;
  bool nr_json = false;
  auto* nodes_revoke = nodes_cmd->add_subcommand(
      "revoke", "Revoke or decommission a node: its admission becomes deny at once");
  nodes_revoke->add_option("NODE", nr_node, "Node id")->required();
  nodes_revoke->add_option("--by", nr_by, "Who revokes it")->required();
  nodes_revoke->add_option("--reason", nr_reason, "Why (key leaked, sent for repair, ...)")
      ->required();
  nodes_revoke->add_flag("--json", nr_json, "JSON output (docs/schemas/node-revoke.schema.json)");
  add_admin(nodes_revoke);

  // Issue 15 §5: the operator interface, each one admin API call.
  NodeCommandOptions no;
  std::map<CLI::App*, AdminTarget> readers;
  auto add_reader = [&readers](CLI::App* c) {
    AdminTarget& reader_target = readers[c];
    c->add_option("--verifier", reader_target.verifier, "Verifier base URL")
        ->envname("DPUAUDIT_VERIFIER")
        ->required();
    c->add_option("--token-file,--admin-token-file", reader_target.token_file,
                  "Reader or admin token file (0600)")
        ->envname("DPUAUDIT_TOKEN_FILE")
        ->required();
    c->add_option("--cacert", reader_target.cacert, "CA bundle for https")
        ->envname("DPUAUDIT_CA");
    c->add_flag("--insecure-http", reader_target.insecure_http,
                "Allow plain http:// to a non-loopback verifier");
  };
  auto* nodes_list = nodes_cmd->add_subcommand(
      "list", "Every node: state, latest decision and its time (GET /v1/nodes, reader token)");
  nodes_list->add_option("--limit", no.limit, "Print one page of this many nodes (1-1000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}));
  nodes_list->add_flag("--json", no.json, "JSON output (docs/schemas/nodes-list.schema.json)");
  nodes_list->add_flag("--wide", no.wide, "Whole thumbprints");
  add_reader(nodes_list);
  auto* node_cmd = app.add_subcommand("node", "One enrolled node (verifier admin API)");
  node_cmd->require_subcommand(1);
  auto* node_show = node_cmd->add_subcommand(
      "show", "A node's identity, TPM, history and latest result (GET /v1/nodes/{id})");
  node_show->add_option("NODE", no.node_id, "Node id")->required();
  node_show->add_flag("--json", no.json, "JSON output (docs/schemas/node-show.schema.json)");
  add_reader(node_show);
  auto* approve_cmd = app.add_subcommand(
      "approve", "Approve a pending enrollment: only the key you name (admin API)");
  approve_cmd->add_option("NODE", no.node_id, "Node id")->required();
  approve_cmd->add_option("--thumbprint", no.thumbprint,
                          "Key thumbprint the device printed at enrollment")
      ->required();
  approve_cmd->add_option("--serial", no.serial, "Device serial to pin (must match a claimed one)");
  approve_cmd->add_option("--by", no.by, "Who approves")->required();
  approve_cmd->add_option("--reason", no.reason, "Why");
  approve_cmd->add_flag("--json", no.json, "JSON output (docs/schemas/approve.schema.json)");
  add_admin(approve_cmd);
  auto* reject_cmd = app.add_subcommand(
      "reject", "Remove a pending enrollment (e.g. a squatter) and its TPM binding (admin API)");
  reject_cmd->add_option("NODE", no.node_id, "Node id")->required();
  reject_cmd->add_option("--by", no.by, "Who rejects")->required();
  reject_cmd->add_option("--reason", no.reason, "Why")->required();
  reject_cmd->add_flag("--json", no.json, "JSON output (docs/schemas/reject.schema.json)");
  add_admin(reject_cmd);
  auto* revoke_cmd = app.add_subcommand("revoke", "Same as `nodes revoke` (admin API)");
  revoke_cmd->add_option("NODE", nr_node, "Node id")->required();
  revoke_cmd->add_option("--by", nr_by, "Who revokes it")->required();
  revoke_cmd->add_option("--reason", nr_reason, "Why (key leaked, sent for repair, ...)")
      ->required();
  revoke_cmd->add_flag("--json", nr_json, "JSON output (docs/schemas/node-revoke.schema.json)");
  add_admin(revoke_cmd);
  auto* explain_cmd = app.add_subcommand(
      "explain", "Why a node is (not) admitted: failing and unknown rules first "
                 "(exit 0 admitted, 1 not)");
  explain_cmd->add_option("NODE", no.node_id, "Node id")->required();
  explain_cmd->add_flag("--json", no.json, "JSON output (docs/schemas/explain.schema.json)");
  explain_cmd->add_flag("--wide", no.wide, "Whole lines, and the passing rules too");
  add_reader(explain_cmd);

  auto* bmc_cmd = app.add_subcommand("bmc", "The DPU's BMC over Redfish (docs/redfish.md)");
  std::string ba_node, ba_target = "irot", ba_by, ba_reason;
  bool ba_json = false;
  auto* bmc_rebind = bmc_cmd->add_subcommand(
      "rebind", "Bind a node to the IRoT its BMC shows now (after a repair; verifier admin API)");
  auto* bmc_approve = bmc_cmd->add_subcommand(
      "approve", "Approve a node's current SPDM measurements as its baseline (verifier admin API)");
  for (auto* c : {bmc_rebind, bmc_approve}) {
    c->add_option("--node", ba_node, "Node id")->required();
    c->add_option("--by", ba_by, "Who approves it")->required();
    c->add_option("--reason", ba_reason, "Why (RMA ticket, change id, ...)")->required();
    c->add_flag("--json", ba_json, "JSON output (docs/schemas/bmc-admin.schema.json)");
    add_admin(c);
  }
  AdminTarget reader;
  auto* bmc_status = bmc_cmd->add_subcommand(
      "status", "What the verifier made of a node's latest BMC pull, and what is bound");
  bmc_status->add_option("--node", ba_node, "Node id")->required();
  bmc_status->add_option("--verifier", reader.verifier, "Verifier base URL")
      ->envname("DPUAUDIT_VERIFIER")
      ->required();
  bmc_status->add_option("--token-file", reader.token_file, "Reader (or admin) token file")
      ->envname("DPUAUDIT_TOKEN_FILE")
      ->required();
  bmc_status->add_option("--cacert", reader.cacert, "CA bundle for https")
      ->envname("DPUAUDIT_CA");
  bmc_status->add_flag("--insecure-http", reader.insecure_http,
                       "Allow plain http:// to a non-loopback verifier");
  bmc_status->add_flag("--json", ba_json, "JSON output (docs/schemas/bmc-status.schema.json)");
  bmc_approve->add_option("--target", ba_target, "irot or erot")
      ->check(CLI::IsMember({"irot", "erot"}))
      ->capture_default_str();
  bmc_cmd->require_subcommand(1);
  BmcShowOptions bs;
  auto* bmc_show = bmc_cmd->add_subcommand(
      "show", "Posture, firmware inventory and SPDM targets as the BMC reports them");
  bmc_show->add_option("--url", bs.url, "BMC base URL, https://host[:port]")->required();
  bmc_show->add_option("--credentials", bs.credentials,
                       "JSON {\"username\", \"password\"} file, mode 0600")
      ->required();
  auto* pin_opt = bmc_show->add_option("--pin-key", bs.pin_key,
                                       "Pin the BMC's TLS key: its PEM certificate or public key");
  auto* pin_hex = bmc_show->add_option("--pin-sha256", bs.pin_sha256,
                                       "Pin the BMC's TLS key by its SPKI SHA-256 (hex)");
  auto* ca_opt = bmc_show->add_option("--ca", bs.ca, "CA bundle: verify the chain and name");
  pin_opt->excludes(ca_opt);
  pin_hex->excludes(ca_opt);
  pin_opt->excludes(pin_hex);
  bmc_show->add_flag("--basic-auth", bs.basic_auth, "HTTP basic instead of a Redfish session");
  bmc_show->add_option("--anchors", bs.anchors,
                       "DICE trust anchors (PEM); verifies each SPDM target");
  bool bmc_no_spdm = false;
  bmc_show->add_flag("--no-spdm", bmc_no_spdm, "Skip ComponentIntegrity / SPDM");
  bmc_show->add_option("--timeout-ms", bs.timeout_ms, "Per-request timeout");
  bmc_show->add_flag("--json", bs.json,
                     "JSON output (docs/schemas/bmc-show.schema.json, "
                     "docs/bmc-evidence-schema.md)");

  auto* spdm_cmd = app.add_subcommand("spdm", "SPDM evidence (docs/spdm.md)");
  spdm_cmd->require_subcommand(1);
  SpdmVerifyOptions sv;
  auto* spdm_verify = spdm_cmd->add_subcommand(
      "verify", "Verify saved SPDM signed measurements offline (exit 1 if they do not verify)");
  spdm_verify->add_option("--evidence", sv.evidence,
                          "Redfish evidence JSON or a base64 transcript ('-': stdin)")
      ->required();
  spdm_verify->add_option("--chain", sv.chain, "PEM certificate chain, or the leaf alone")
      ->required();
  spdm_verify->add_option("--nonce", sv.nonce, "The 32-byte nonce that was sent, hex")
      ->required();
  spdm_verify->add_option("--anchors", sv.anchors, "DICE trust anchors (PEM) to validate the chain");
  spdm_verify->add_option("--signing-algorithm", sv.signing,
                          "For a bare transcript (default TPM_ALG_ECDSA_ECC_NIST_P384)");
  spdm_verify->add_option("--hashing-algorithm", sv.hashing,
                          "For a bare transcript (default TPM_ALG_SHA_384)");
  spdm_verify->add_flag("--json", sv.json, "JSON output (docs/schemas/spdm-verify.schema.json)");

  // Issue 15: node status, decision events, webhooks (docs/events.md).
  std::string ack_node, ack_by, ack_reason;
  bool ev_json = false;
  auto* node_ack = node_cmd->add_subcommand(
      "ack", "Acknowledge a node's sticky failure (it is admitted again by its next passing "
             "report)");
  node_ack->add_option("NODE", ack_node, "Node id")->required();
  node_ack->add_option("--by", ack_by, "Who acknowledges it (default: your login name)");
  node_ack->add_option("--reason", ack_reason, "Why (ticket, what was repaired)")->required();
  node_ack->add_flag("--json", ev_json, "JSON output");
  add_admin(node_ack);
  std::string ev_node;
  int64_t ev_after = 0, ev_limit = 100;
  auto* events_cmd = app.add_subcommand(
      "events", "Decision events: admit, deny, stale, held, revoked, re-approved (oldest first)");
  events_cmd->add_option("--node", ev_node, "Only this node's events");
  events_cmd->add_option("--after", ev_after, "Only events after this seq")->capture_default_str();
  events_cmd->add_option("--limit", ev_limit, "At most this many (1-1000)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000}))->capture_default_str();
  add_reader(events_cmd);
  events_cmd->add_flag("--json", ev_json, "JSON output (docs/events.md)");
  auto* webhooks_cmd = app.add_subcommand("webhooks", "Webhook delivery (verifier admin API)");
  webhooks_cmd->require_subcommand(1);
  auto* wh_status = webhooks_cmd->add_subcommand(
      "status", "Outbox backlog and failing deliveries per endpoint (exit 1 while any fails)");
  wh_status->add_flag("--json", ev_json, "JSON output (docs/webhooks.md)");
  add_admin(wh_status);

  // Issue 16: audit bundles and policy what-if (docs/audit.md).
  auto* bundle_cmd = app.add_subcommand("bundle", "Audit bundles: export and verify offline");
  bundle_cmd->require_subcommand(1);
  BundleExportFlags bx;
  auto* bundle_export = bundle_cmd->add_subcommand(
      "export", "Write one node's reports, EARs, collateral and audit log entries up to a "
                "signed checkpoint (GET /v1/nodes/{id}/bundle, reader token)");
  bundle_export->add_option("--node", bx.node, "Node id")->required();
  bundle_export->add_option("--since", bx.since, "From (Unix seconds or RFC 3339 UTC)");
  bundle_export->add_option("--until", bx.until, "Until (Unix seconds or RFC 3339 UTC)");
  bundle_export->add_option("--out", bx.out, "Bundle file to write (0600); - for stdout")
      ->required();
  bundle_export->add_flag("--json", bx.json,
                          "Print what was written as JSON "
                          "(docs/schemas/bundle-export.schema.json)");
  add_reader(bundle_export);
  BundleVerifyFlags bv;
  auto* bundle_verify = bundle_cmd->add_subcommand(
      "verify", "Verify a bundle offline: checkpoint, log chain, every signature, and a "
                "re-appraisal of every report (exit 0 verified, 1 failure, 2 unusable)");
  bundle_verify->add_option("FILE", bv.file, "Bundle; - reads stdin")
      ->required()
      ->check(file_or_stdin);
  bundle_verify->add_option("--trust", bv.trust,
                            "Verifier keys to trust (JWKS, PEM or trust file); default: "
                            "the pinned keys below");
  add_pins(bundle_verify);
  bundle_verify->add_flag("--json", bv.json,
                          "JSON output (docs/schemas/bundle-verify.schema.json)");
  PolicyTestFlags pt;
  auto* policy_test = policy_cmd->add_subcommand(
      "test", "Re-appraise the evidence in verified bundles under a candidate policy and "
              "list the nodes whose decision would change (exit 0 none, 1 some, 2 error)");
  policy_test->add_option("CANDIDATE", pt.candidate, "Candidate policy; - reads stdin")
      ->required()
      ->check(file_or_stdin);
  policy_test->add_option("--bundle", pt.bundles, "A bundle (`dpuaudit bundle export`); "
                                                  "repeatable")
      ->check(CLI::ExistingFile);
  policy_test->add_option("--reports", pt.reports_dir,
                          "A directory of bundles (*.json), e.g. one per node")
      ->check(CLI::ExistingDirectory);
  policy_test->add_option("--trust", pt.trust,
                          "Verifier keys to trust (JWKS, PEM or trust file)");
  add_pins(policy_test);
  policy_test->add_flag("--json", pt.json, "JSON output (docs/schemas/policy-test.schema.json)");
  policy_test->add_flag("--wide", pt.wide, "Every result, not only each node's latest");
  // Issue 16 §7: the fleet drift report (GET /v1/fleet, reader token).
  FleetReportOptions fro;
  auto* fleet_cmd = app.add_subcommand("fleet", "The fleet as the verifier sees it (reader API)");
  fleet_cmd->require_subcommand(1);
  auto* fleet_report = fleet_cmd->add_subcommand(
      "report", "Drift report: nodes by model, their firmware, boot-stream and posture values, "
                "the nodes that diverge from their model's majority, decisions over time, "
                "off-release, stale, failed and held nodes (docs/fleet-report.md)");
  fleet_report->add_option("--format", fro.format,
                           "html (one self-contained file), json "
                           "(docs/schemas/fleet-report.schema.json) or md")
      ->check(CLI::IsMember({"html", "json", "md"}))
      ->capture_default_str();
  fleet_report->add_option("--out", fro.out, "Output file; - writes stdout")->required();
  fleet_report->add_option("--bucket", fro.bucket,
                           "Decisions-over-time bucket (e.g. 15m, 1h, 1d; at least 60 s)")
      ->capture_default_str();
  fleet_report->add_option("--window", fro.window,
                           "Decisions over this long before now (at most 2000 buckets)")
      ->capture_default_str();
  add_reader(fleet_report);

  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;
  ReadTarget rt;
  PinnedKeySource pins;
  AdminTarget admin, reader_target;
  for (auto& [c, t] : rts) if (c->parsed()) rt = t;
  for (auto& [c, t] : pinss) if (c->parsed()) pins = t;
  for (auto& [c, t] : admins) if (c->parsed()) admin = t;
  for (auto& [c, t] : readers) if (c->parsed()) reader_target = t;
  if (node_ack->parsed()) return NodeAcknowledge(ack_node, ack_by, ack_reason, ev_json, admin);
  if (events_cmd->parsed()) return EventsList(ev_node, ev_after, ev_limit, ev_json, reader_target);
  if (wh_status->parsed()) return WebhooksStatus(ev_json, admin);
  if (rshow->parsed()) return ReportShow(file, pubkey, rt, report_json, rshow_ear);
  if (rfw->parsed()) return ReportFirmware(file, pubkey, rt, report_json);
  if (rquote->parsed()) return ExportQuoteCmd(file, quote_out, quote_ak, rt, report_json);
  if (eventlog_cmd->parsed()) return EventlogCommand(file, eventlog_json);
  if (eshow->parsed()) return ResultShow(file, pins, result_json);
  if (esum->parsed()) return ResultSummary(files, pins, result_json);
  if (admit->parsed()) {
    if (!admit_verifier_id.empty()) ao.verifier_id = admit_verifier_id;
    // --ear wins over a verifier URL that came from the environment.
    const char* env_url = std::getenv("DPUAUDIT_VERIFIER");
    if (!ao.ear_file.empty() && env_url != nullptr && ao.verifier == env_url) ao.verifier.clear();
    ao.keys = pins;
    return Admit(ao);
  }
  if (policy_check->parsed()) return PolicyCheck(file, policy_json, policy_wide);
  if (policy_test->parsed()) return PolicyTest(pt, pins);
  if (bundle_export->parsed()) return BundleExport(bx, reader_target);
  if (bundle_verify->parsed()) return BundleVerify(bv, pins);
  if (trust_add->parsed()) return TrustAdd(ta);
  if (trust_list->parsed()) return TrustList(trust_file, trust_json);
  if (trust_remove->parsed()) return TrustRemove(trust_file, trust_kid, trust_json);
  if (bfb_inspect->parsed()) return BfbInspect(file, bfb_json);
  if (bmc_show->parsed()) {
    bs.spdm = !bmc_no_spdm;
    return BmcShow(bs);
  }
  if (spdm_verify->parsed()) return SpdmVerify(sv);
  if (rv_import_bfb->parsed()) {
    if (ib.out.empty() && (admin.verifier.empty() || admin.token_file.empty())) {
      std::cerr << "dpuaudit: import-bfb needs --verifier and --admin-token-file, or --out.\n";
      return kExitError;
    }
    return RefvalsImportBfb(ib, admin);
  }
  for (const auto& [c, kind] : propose_kind) {
    if (c->parsed()) {
      return kind == 1 ? RefvalsImportEventlog(po, admin) : RefvalsImportReport(po, admin);
    }
  }
  if (rv_withdraw->parsed()) {
    return RefvalsWithdraw(wd_release, po.by.empty() ? LoginName() : po.by, wd_reason, wd_json,
                           admin);
  }
  if (rv_import->parsed()) return RefvalsImport(file, rv_json, admin);
  if (rv_list->parsed()) return RefvalsList(rv_model, rv_json, rv_values, admin);
  if (rv_export->parsed()) return RefvalsExport(rv_model, rv_out, rv_json, admin);
  if (tok_issue->parsed()) return TokensIssue(tio, admin);
  if (tok_list->parsed()) return TokensList(tok_json, admin);
  if (tok_revoke->parsed()) return TokensRevoke(tok_id, tok_by, tok_json, admin);
  if (nodes_revoke->parsed() || revoke_cmd->parsed()) {
    return NodesRevoke(nr_node, nr_by, nr_reason, nr_json, admin);
  }
  if (nodes_list->parsed()) return NodesList(no, reader_target);
  if (node_show->parsed()) return NodeShow(no, reader_target);
  if (approve_cmd->parsed()) return NodeApprove(no, admin);
  if (reject_cmd->parsed()) return NodeReject(no, admin);
  if (explain_cmd->parsed()) return Explain(no, reader_target);
  if (fleet_report->parsed()) return FleetReport(fro, reader_target);
  if (bmc_status->parsed()) return BmcStatus(ba_node, ba_json, reader);
  if (bmc_rebind->parsed()) {
    return BmcAdminAction("rebind", ba_node, "", ba_by, ba_reason, ba_json, admin);
  }
  if (bmc_approve->parsed()) {
    return BmcAdminAction("approve", ba_node, ba_target, ba_by, ba_reason, ba_json, admin);
  }
  for (const auto& [action, c] : rv_transitions) {
    if (c->parsed()) {
      return RefvalsTransition(action, rv_release, rv_by, rv_reason, rv_obsolete_previous,
                               rv_json, admin);
    }
  }
  return kExitError;
}

// Last line of defence: an exception (e.g. from a JSON answer of an
// unexpected shape that a check above missed) is an error exit, not a crash.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpuaudit: internal error: %s\n", e.what());
    return 2;
  }
}

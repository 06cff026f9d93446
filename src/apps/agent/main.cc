// dpuaudit-agent: runs on the BlueField Arm cores. Measures the device
// (live, or a recorded folder with --device-root), signs a report bound to a
// verifier nonce and submits it. Never listens on a port. Thin: flags only;
// the commands are apps/agent/commands.h.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <string>

#include "apps/shared/cli_exit.h"
#include "apps/agent/commands.h"
#include "apps/shared/version.h"

static int Main(int argc, char** argv) {
  using namespace dpuaudit::apps;
  auto logger = spdlog::stderr_color_mt("agent");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");

  CLI::App app{"dpuaudit-agent: measures this BlueField and reports to a dpuaudit verifier"};
  app.set_version_flag("--version", std::string(Version()));
  app.require_subcommand(1);
  AgentFlags f;

  auto add_key = [&](CLI::App* c) {
    c->add_option("--key", f.key, "Agent signing key (PKCS#8 PEM, 0600)")->capture_default_str();
  };
  auto add_net = [&](CLI::App* c) {
    c->add_option("--verifier", f.verifier, "Verifier base URL, e.g. https://verifier:8443")
        ->required();
    c->add_option("--node-id", f.node_id, "This node's id")->required();
    c->add_option("--cacert", f.cacert, "CA bundle to verify the verifier's TLS certificate");
    c->add_flag("--insecure-http", f.insecure_http,
                "Allow plain http:// to a non-loopback verifier (tokens and reports in clear)");
    add_key(c);
  };
  auto add_device = [&](CLI::App* c) {
    c->add_option("--device-root", f.device_root,
                  "Read a recorded device folder instead of this machine")
        ->check(CLI::ExistingDirectory);
  };

  auto* enroll = app.add_subcommand("enroll", "Create the key (first time) and enroll it");
  add_net(enroll);
  enroll->add_option("--token-file,--bootstrap-token-file", f.bootstrap_token_file,
                     "Enrollment token: this node's single-use token (dpuaudit tokens issue), "
                     "or the shared fleet token where the verifier enables one; without it "
                     "the verifier waits for operator approval");
  add_device(enroll);
  enroll->add_flag("--json", f.json,
                   "Print the outcome as JSON (docs/schemas/agent-enroll.schema.json)");

  auto add_tpm = [&](CLI::App* c) {
    c->add_option("--tpm", f.tpm,
                  "TPM 2.0 TCTI (device:/dev/tpmrm0, swtpm:host=H,port=P): bind an AK at "
                  "enrollment and sign every report with a quote");
    c->add_option("--ek-type", f.ek_type, "EK to use: rsa | ecc")->capture_default_str();
    c->add_option("--eventlog", f.eventlog, "TCG boot event log (read via --device-root)")
        ->capture_default_str();
  };
  add_tpm(enroll);

  auto* attest = app.add_subcommand("attest", "Send one signed report and print the decision");
  add_net(attest);
  add_device(attest);
  add_tpm(attest);
  auto add_format = [&](CLI::App* c) {
    c->add_option("--report-format", f.report_format,
                  "2: carry evidence unchanged since the last accepted full report by digest; "
                  "1: every report dpuaudit-report/1, all evidence in full")
        ->check(CLI::IsMember({"1", "2"}))
        ->capture_default_str();
  };
  add_format(attest);
  attest->add_option("--report-out", f.report_out, "Also write the signed report (JWS) here");
  attest->add_option("--ear-out", f.ear_out, "Also write the verifier's EAR (JWT) here");
  attest->add_flag("--json", f.json,
                   "Print the decision as one JSON line (docs/schemas/agent-attest.schema.json)");

  auto* run = app.add_subcommand("run", "Attest periodically until stopped");
  add_net(run);
  add_device(run);
  add_tpm(run);
  add_format(run);
  run->add_option("--interval", f.interval, "Time between reports: 30s, 5m, 1h")
      ->capture_default_str();
  run->add_option("--count", f.count, "Stop after N reports (0 = run until SIGTERM)");
  run->add_option("--report-out", f.report_out, "Write the latest signed report here");
  run->add_option("--ear-out", f.ear_out, "Write the latest EAR here");
  run->add_flag("--json", f.json,
                "One JSON line per report on stdout (docs/schemas/agent-attest.schema.json)");

  auto* probe = app.add_subcommand("probe", "Show local findings (no network); exit 1 unless all pass");
  add_device(probe);
  probe->add_flag("--json", f.json, "JSON output (docs/schemas/agent-probe.schema.json)");
  probe->add_option("--policy", f.policy,
                    "Evaluate the findings against this policy file; exit 0 admit, 1 deny");

  auto* record = app.add_subcommand("record", "Record this device's tool outputs and files to a folder");
  add_device(record);
  record->add_option("--out", f.record_out, "Output folder (must not exist or be empty)")
      ->required();
  record->add_flag("--json", f.json,
                   "Print what was recorded as JSON (docs/schemas/agent-record.schema.json)");

  auto* simulate = app.add_subcommand(
      "simulate-boot", "Extend a boot event log into a software TPM (tests, demo)");
  simulate->add_option("--tpm", f.tpm, "swtpm TCTI")->required();
  simulate->add_option("--eventlog", f.eventlog, "TCG event log file")->required();
  simulate->add_flag("--json", f.json,
                     "Print what was extended (docs/schemas/agent-simulate-boot.schema.json)");

  auto* rekey = app.add_subcommand(
      "rekey", "Replace this node's key at the verifier (signed by --key, proving "
               "--new-key), then move --new-key over --key");
  add_net(rekey);
  rekey->add_option("--new-key", f.new_key,
                    "The new key (PKCS#8 PEM, 0600; created when absent)")->required();
  rekey->add_flag("--json", f.json,
                  "Print the outcome as JSON (docs/schemas/agent-rekey.schema.json)");

  auto* pubkey = app.add_subcommand("pubkey", "Print the agent's public key (PEM)");
  add_key(pubkey);
  pubkey->add_flag("--json", f.json,
                   "The key as PEM, JWK and thumbprint in JSON "
                   "(docs/schemas/agent-pubkey.schema.json)");

  if (std::optional<int> rc = ParseCommandLine(app, argc, argv)) return *rc;
  if (enroll->parsed()) return Enroll(f);
  if (attest->parsed()) return Attest(f);
  if (run->parsed()) return Run(f);
  if (probe->parsed()) return Probe(f);
  if (record->parsed()) return Record(f);
  if (pubkey->parsed()) return PubKey(f);
  if (rekey->parsed()) return Rekey(f);
  if (simulate->parsed()) return SimulateBoot(f);
  return 2;
}

// Last line of defence: an exception (e.g. from a JSON answer of an
// unexpected shape that a check above missed) is an error exit, not a crash.
int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpuaudit-agent: internal error: %s\n", e.what());
    return 2;
  }
}

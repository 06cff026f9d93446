// The agent's commands, one function each, called by the thin main with the
// parsed flags. Each returns the process exit code as documented in
// `dpuaudit-agent --help` and the README: 0 ok (probe: every finding passes,
// or the local policy decision is admit), 1 probe findings (or deny), 2 an
// error (printed to stderr with its reason). enroll, attest and run talk to
// the verifier (never listening on a port); probe, record, simulate-boot and
// pubkey stay local. enroll and rekey exit 1 when the verifier refuses with
// HTTP 409/410, 2 for any other refusal (apps/shared/exit_code.h). --json
// (enroll, attest, run, probe, record, rekey, pubkey): one JSON document
// on stdout instead of the lines, each with a schema in docs/schemas/
// (agent-*.schema.json).
#ifndef DPUAUDIT_APPS_AGENT_COMMANDS_H_
#define DPUAUDIT_APPS_AGENT_COMMANDS_H_

#include <cstdint>
#include <string>

#include "common/status.h"

namespace dpuaudit::apps {

struct AgentFlags {
  std::string verifier;
  std::string node_id;
  std::string key = "/var/lib/dpuaudit/agent.key";
  std::string cacert;
  std::string device_root;
  std::string bootstrap_token_file;
  bool insecure_http = false;
  std::string report_out, ear_out;
  std::string interval = "60s";
  int count = 0;
  bool json = false;
  std::string record_out;
  std::string policy;
  // TPM (issue 5): a TCTI string enables hardware-signed reports.
  std::string tpm;
  std::string ek_type = "rsa";
  std::string eventlog = "/sys/kernel/security/tpm0/binary_bios_measurements";
  std::string new_key;  // rekey (issue 15): created when absent
  // attest/run: "2" (default) carries unchanged evidence by digest against
  // the last accepted full report (apps/agent/evidence_base.h); "1" always
  // sends dpuaudit-report/1 with every item in full.
  std::string report_format = "2";
};


int Enroll(const AgentFlags& f);
// One signed report; prints the decision and the rules that did not pass.
int Attest(const AgentFlags& f);
// Attests every --interval until SIGINT/SIGTERM or --count reports; exit 0
// if the last attempt succeeded.
int Run(const AgentFlags& f);
int Probe(const AgentFlags& f);
int Record(const AgentFlags& f);
int SimulateBoot(const AgentFlags& f);
int PubKey(const AgentFlags& f);
// Re-key at the verifier (signed by --key, proving --new-key), then move
// --new-key over --key (rekey.cc).
int Rekey(const AgentFlags& f);

// "30s", "5m", "1h", "45" (seconds) -> seconds > 0.
StatusOr<int64_t> ParseInterval(const std::string& s);

}  // namespace dpuaudit::apps

#endif  // DPUAUDIT_APPS_AGENT_COMMANDS_H_

// dpuaudit-loadgen: N simulated agents against a real verifier, over its
// real HTTP API, at an open-loop rate (docs/architecture.md#performance).
//
// Each simulated node has its own P-256 key (OpenSSL) and enrolls through
// the verifier's enrollment flow: with the fleet bootstrap token (one
// POST /v1/nodes each) or, given the admin token, with a per-node token it
// issues first (POST /v1/enrollment-tokens, then POST /v1/nodes), as an
// operator would. The evidence of each recorded device (--device-root) is
// collected once, with the agent's own collection (apps/common/
// agent_collect.h); every attestation is then the agent's full flow: a
// challenge signed by the node key, a fresh nonce from the verifier, the
// claims built for this node, nonce and time and signed afresh
// (report::SignReport, `dpuaudit-report/1`), the result read back.
//
// Guarantees: every request is counted (a latency sample or an error by
// request and kind: "http 429", "curl 7", "answer"); attestation j is due at
// the schedule's time (pacing.h) whether or not earlier ones were answered,
// and one that could not start before the end of the run is counted as not
// started, never silently dropped; CPU figures are deltas over the timed
// phase only (setup has its own). A node enrolled by one run is not reused
// by another (the node ids carry a random run prefix unless --node-prefix
// is given).
// Does not: TPM quotes (the recorded devices' reports have none), or
// retry an attestation.
#ifndef DPUAUDIT_APPS_LOADGEN_LOADGEN_H_
#define DPUAUDIT_APPS_LOADGEN_LOADGEN_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "apps/loadgen/proc_cpu.h"
#include "apps/loadgen/stats.h"
#include "common/status.h"

namespace dpuaudit::apps::loadgen {

struct LoadgenOptions {
  std::string verifier;
  int64_t nodes = 0;
  double interval_seconds = 30;
  double duration_seconds = 30;
  int connections = 16;
  std::string ca_file;
  std::string bootstrap_token_file;  // one of these two
  std::string admin_token_file;
  std::vector<std::string> device_roots;  // node i reports device i mod size
  std::string node_prefix;                // empty: "lg-<8 hex>-"
  int64_t reconnect_every = 0;            // per connection, 0 = never
  // 2: like the agent (apps/agent/evidence_base.h), each node's first
  // accepted report in full, then every item by digest against it (and in
  // full again after a 409 evidence_unknown); 1: dpuaudit-report/1 always.
  int report_format = 2;
  pid_t verifier_pid = 0;                 // 0: found by the URL's port
  double max_error_percent = 1.0;
  // stderr progress: a rewritten line every second on a terminal, a plain
  // line every 5 s otherwise; off with quiet.
  bool progress_tty = false;
  bool quiet = false;
};

struct PhaseCpu {
  double generator_seconds = 0;
  bool verifier_known = false;
  double verifier_seconds = 0;
};

struct RunResult {
  LoadgenOptions options;
  std::string node_prefix;
  int usable_cpus = 1;
  pid_t verifier_pid = 0;  // 0: not known
  std::string verifier_pid_note;
  // The verifier's resident memory at the end of the run and its peak
  // (/proc/PID/status VmRSS, VmHWM); unset when the pid is not known.
  std::optional<ProcessMemory> verifier_memory;
  // setup
  double keys_seconds = 0, collect_seconds = 0, enroll_seconds = 0;
  int64_t enrolled = 0;
  PhaseCpu enroll_cpu;
  // timed phase
  double elapsed_seconds = 0;
  int64_t due = 0, started = 0, ok = 0, failed = 0;
  int64_t admit = 0, deny = 0;
  int64_t connects = 0;
  bool interrupted = false;
  double target_per_second = 0, achieved_per_second = 0;
  std::map<std::string, LatencySummary> latency;  // attestation, challenge, report, schedule_lag
  ErrorCounts errors;          // timed phase
  ErrorCounts enroll_errors;   // setup
  PhaseCpu run_cpu;

  bool target_reached() const;
  // What held the rate back: "none" (target reached), "generator_cpu" (the
  // generator used nearly all its CPUs), "host_cpu" (generator + verifier
  // did), "verifier_wait" (CPU to spare: every connection was waiting for
  // the verifier's answers, e.g. its store's serialised fsyncs; more
  // --connections may help).
  std::string bottleneck() const;
  bool machine_saturated() const;
  double error_percent() const;
  bool generator_bottleneck() const;
};

// The whole run: keys, evidence, enrollment, the timed phase. An error
// (exit 2) when setup fails: no device evidence, a token file unreadable,
// any node not enrolled, the verifier unreachable.
StatusOr<RunResult> Run(const LoadgenOptions& options);

// docs/schemas/loadgen.schema.json.
nlohmann::json ResultJson(const RunResult& r);
// The final table, at most 100 columns wide.
std::string ResultText(const RunResult& r);
// 0 ok; 1 errors above --max-error-percent or no attestation succeeded.
int ExitCode(const RunResult& r);

}  // namespace dpuaudit::apps::loadgen

#endif  // DPUAUDIT_APPS_LOADGEN_LOADGEN_H_

// dpuaudit-loadgen: simulated agents against a real verifier, at an open-loop
// rate, measuring throughput, latency, errors and CPU on both sides
// (apps/loadgen/loadgen.h).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "apps/loadgen/loadgen.h"
#include "apps/shared/cli_exit.h"
#include "apps/shared/version.h"

static int Main(int argc, char** argv) {
  using namespace dpuaudit::apps;
  loadgen::LoadgenOptions o;
  bool json = false;
  int64_t pid = 0;
  CLI::App app{
      "dpuaudit-loadgen: N simulated agents (own P-256 keys, real signed reports of recorded\n"
      "devices) attest a real verifier every --interval s over HTTPS keep-alive connections\n"
      "(open loop: N / interval per second); prints throughput, latency percentiles, errors\n"
      "and the CPU per attestation of the generator and of the verifier"};
  app.set_version_flag("--version", std::string(Version()));
  app.add_option("--verifier", o.verifier, "Verifier base URL (https://host:port)")->required();
  app.add_option("--nodes", o.nodes, "Simulated nodes")->required()->check(CLI::Range(
      int64_t{1}, int64_t{10000000}));
  app.add_option("--interval", o.interval_seconds, "Seconds between two attestations of a node")
      ->required()->check(CLI::Range(0.001, 86400.0));
  app.add_option("--duration", o.duration_seconds, "Seconds of the timed phase (after setup)")
      ->required()->check(CLI::Range(0.001, 86400.0));
  app.add_option("--connections", o.connections,
                 "Keep-alive connections, one worker thread each (also used to enroll)")
      ->capture_default_str()->check(CLI::Range(1, 4096));
  app.add_option("--ca", o.ca_file, "CA certificate (PEM) for the verifier's TLS certificate")
      ->check(CLI::ExistingFile);
  app.add_option("--device-root", o.device_roots,
                 "Recorded device folder (tests/fixtures/devices/...); repeatable: node i "
                 "reports device i mod count")
      ->required()->check(CLI::ExistingDirectory);
  auto* bootstrap = app.add_option("--bootstrap-token-file", o.bootstrap_token_file,
                                   "The verifier's fleet bootstrap token: one POST /v1/nodes "
                                   "per node (approved)");
  app.add_option("--admin-token-file", o.admin_token_file,
                 "The verifier's admin token: a per-node enrollment token is issued for each "
                 "node, then it enrolls with it (two requests per node)")
      ->excludes(bootstrap);
  app.add_option("--node-prefix", o.node_prefix,
                 "Node ids are PREFIX000000...; default lg-<random 8 hex>-, so runs never "
                 "collide");
  app.add_option("--reconnect-every", o.reconnect_every,
                 "Close each connection after every K attestations made on it (0 = never)")
      ->capture_default_str()->check(CLI::Range(int64_t{0}, int64_t{1} << 40));
  app.add_option("--report-format", o.report_format,
                 "2: each node's first report in full, then its evidence by digest, as the "
                 "agent does; 1: every report dpuaudit-report/1 with all evidence")
      ->capture_default_str()->check(CLI::IsMember({1, 2}));
  app.add_option("--verifier-pid", pid,
                 "The verifier's process id, for its CPU (default: the process listening on "
                 "the URL's port, when it is on this host)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  app.add_option("--max-error-percent", o.max_error_percent,
                 "Exit 1 when more than this share of the attestations failed")
      ->capture_default_str()->check(CLI::Range(0.0, 100.0));
  app.add_flag("--quiet", o.quiet, "No progress lines on stderr");
  app.add_flag("--json", json,
               "Print the result as one JSON document (docs/schemas/loadgen.schema.json)");
  app.footer(
      "Exit codes: 0 the run completed with errors at or below --max-error-percent; 1 more\n"
      "errors than that, or no attestation succeeded; 2 usage or runtime error (setup:\n"
      "device evidence, token file, enrollment, verifier unreachable).");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kUsageExit;
  }
  o.verifier_pid = static_cast<pid_t>(pid);
  o.progress_tty = isatty(STDERR_FILENO) == 1;
  auto r = loadgen::Run(o);
  if (!r.ok()) {
    std::cerr << "dpuaudit-loadgen: " << r.status().message() << "\n";
    return kUsageExit;
  }
  if (json) {
    std::cout << loadgen::ResultJson(*r).dump(2, ' ', false,
                                              nlohmann::json::error_handler_t::replace)
              << "\n";
  } else {
    std::cout << loadgen::ResultText(*r);
  }
  return loadgen::ExitCode(*r);
}

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dpuaudit-loadgen: internal error: %s\n", e.what());
    return 2;
  }
}

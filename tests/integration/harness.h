// Shared harness for the integration tests: run the real binaries and a
// real dpuaudit-verifier process on 127.0.0.1:<any free port>.
#ifndef DPUAUDIT_TESTS_INTEGRATION_HARNESS_H_
#define DPUAUDIT_TESTS_INTEGRATION_HARNESS_H_

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "apps/shared/http_client.h"
#include "common/files.h"
#include "device/device_source.h"
#include "testing/child_process.h"

// libfaketime cannot interpose an AddressSanitizer binary: ASan's own
// clock_gettime interceptor re-enters libfaketime's initialiser, which prints
// "Unexpected recursive calls to clock_gettime()" and then hangs. Tests that
// step a verifier's clock skip under ASan (saying so); the first stage of
// .ci/run runs them on the uninstrumented binaries.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DPUAUDIT_TEST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DPUAUDIT_TEST_UNDER_ASAN 1
#endif

namespace dpuaudit::itest {

inline const std::string kBin = DPUAUDIT_BIN_DIR;
inline const std::string kSrc = DPUAUDIT_SOURCE_DIR;

inline std::string Fixture(const std::string& name) {
  return kSrc + "/tests/fixtures/devices/" + name;
}

struct Proc {
  int exit_code = -1;
  std::string out, err;
};

// Runs argv (no shell) through the live DeviceSource, 120 s at most.
inline Proc Exec(const std::vector<std::string>& argv) {
  auto live = device::NewLiveDeviceSource();
  device::CommandOptions o;
  o.timeout = std::chrono::milliseconds(120000);
  auto r = live->Run(argv, o);
  if (!r.ok()) return Proc{-1, "", r.status().ToString()};
  return Proc{r->exit_code, ToString(r->stdout_bytes), ToString(r->stderr_bytes)};
}

// argv with its stdin read from `stdin_file` (no other shell work).
inline Proc ExecWithStdin(const std::vector<std::string>& argv, const std::string& stdin_file) {
  std::vector<std::string> sh = {"/bin/sh", "-c", "f=\"$1\"; shift; exec \"$@\" < \"$f\"", "sh",
                                 stdin_file};
  sh.insert(sh.end(), argv.begin(), argv.end());
  return Exec(sh);
}

// `text` as JSON, or a null json when it does not parse (the test's
// expectations then fail on the missing members).
inline nlohmann::json ParseJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// libfaketime (Debian package faketime, installed by scripts/deps.sh), or ""
// when it is not installed.
inline std::string FakeTimeLibrary() {
  for (const char* p : {"/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1",
                        "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                        "/usr/lib/faketime/libfaketimeMT.so.1"}) {
    if (std::filesystem::exists(p)) return p;
  }
  return "";
}

inline std::string ReadAll(const std::string& path) {
  auto b = ReadFileLimited(path, 16 << 20);
  return b.ok() ? ToString(*b) : "";
}

// A dpuaudit-verifier process; stopped (SIGTERM, then SIGKILL after a grace
// period) on destruction.
class VerifierProcess {
 public:
  // Returns false (with the reason and the log in `error`) if it exits or
  // does not bind within 30 s.
  bool Start(const std::string& dir, const std::vector<std::string>& extra,
             std::string* error, const std::string& listen = "127.0.0.1:0") {
    std::string ready = dir + "/verifier.url";
    std::filesystem::remove(ready);
    log_ = dir + "/verifier.log";
    std::vector<std::string> argv = {kBin + "/dpuaudit-verifier", "serve",
                                     "--listen", listen,
                                     "--ready-file", ready,
                                     "--db", dir + "/verifier.db",
                                     "--key", dir + "/verifier.key"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ::dpuaudit::testing::ChildProcessOptions options;
    options.output_file = log_;
    if (!child_.Start(argv, options, error)) return false;
    std::string url;
    if (!child_.WaitForReadyFile(ready, std::chrono::seconds(30),
                                 std::chrono::milliseconds(50), &url, error)) {
      return false;
    }
    url_ = url.substr(0, url.find('\n'));
    return true;
  }

  void Stop() { child_.Stop(); }
  // SIGKILL: no shutdown work at all (a crash).
  void Kill() { child_.Kill(); }

  bool Alive() const { return child_.Alive(); }
  const std::string& url() const { return url_; }
  const std::string& log() const { return log_; }
  // Its exit code once it has exited (Start() failed) or been stopped; -1
  // while running or if a signal ended it.
  int exit_code() const { return child_.exit_code(); }

 private:
  ::dpuaudit::testing::ChildProcess child_;
  std::string url_, log_;
};

// Reference values for the recorded devices (tests/fixtures/refvals/
// bf3-releases.json: bf-bundle-2.9.1-40 active, 2.9.0-90 obsolete, 2.7.0-33
// revoked), imported through `dpuaudit refvals import` and the verifier's
// admin API.
inline const std::string kFixtureRefvals = kSrc + "/tests/fixtures/refvals/bf3-releases.json";

// Writes an admin token file in `dir` and returns the verifier flags that
// enable the admin API with it.
inline std::vector<std::string> AdminFlags(const std::string& dir, std::string* token_file) {
  *token_file = dir + "/admin.token";
  (void)WriteFileAtomic(*token_file, AsBytes(std::string("integration-admin-token-0001\n")),
                        0600);
  return {"--admin-token-file", *token_file};
}

// Writes a reader token file (0600) in `dir` and returns the verifier flags
// that accept it for GET /v1/nodes/{id} and /admission.
inline const std::string kReaderToken = "integration-reader-token-0001";
inline std::vector<std::string> ReaderFlags(const std::string& dir, std::string* token_file) {
  *token_file = dir + "/reader.token";
  (void)WriteFileAtomic(*token_file, AsBytes(kReaderToken + "\n"), 0600);
  return {"--reader-token-file", *token_file};
}

// The verifier's JWKS, written offline from its key file
// (`dpuaudit-verifier jwks --key`), as an operator pins it; "" on failure.
inline std::string ExportJwks(const std::string& key_file, const std::string& out) {
  Proc p = Exec({kBin + "/dpuaudit-verifier", "jwks", "--key", key_file});
  if (p.exit_code != 0) return "";
  if (!WriteFileAtomic(out, AsBytes(p.out), 0644).ok()) return "";
  return out;
}

inline Proc ImportFixtureRefvals(const std::string& url, const std::string& token_file) {
  return Exec({kBin + "/dpuaudit", "refvals", "import", kFixtureRefvals, "--verifier", url,
               "--admin-token-file", token_file});
}

// The connection counters of a verifier's /metrics (issue 17), read with
// the admin token "integration-admin-token-0001" (AdminFlags). The scrape
// itself is one more connection with one full handshake, counted before
// the counters are rendered; Minus() takes it out.
struct ConnectionCounters {
  bool ok = false;
  std::string error;
  double connections = 0, full = 0, resumed = 0;
  // What happened between `before` and this scrape, not counting the
  // scrape's own connection and full handshake.
  ConnectionCounters Minus(const ConnectionCounters& before) const {
    ConnectionCounters d;
    d.ok = ok && before.ok;
    d.connections = connections - before.connections - 1;
    d.full = full - before.full - 1;
    d.resumed = resumed - before.resumed;
    return d;
  }
};

inline double MetricSample(const std::string& text, const std::string& series) {
  const std::string line_start = "\n" + series + " ";
  size_t at = ("\n" + text).find(line_start);
  if (at == std::string::npos) return -1;
  return std::strtod(text.c_str() + at + line_start.size() - 1, nullptr);
}

inline ConnectionCounters ScrapeConnectionCounters(const std::string& url, const std::string& ca) {
  ConnectionCounters c;
  apps::HttpClientOptions o;
  o.ca_file = ca;
  auto client = apps::HttpClient::New(url, o);
  if (!client.ok()) {
    c.error = client.status().ToString();
    return c;
  }
  auto r = (*client)->GetWithBearer("/metrics", "integration-admin-token-0001");
  if (!r.ok() || r->status != 200) {
    c.error = r.ok() ? "HTTP " + std::to_string(r->status) + " " + r->body : r.status().ToString();
    return c;
  }
  c.connections = MetricSample(r->body, "dpuaudit_http_connections_total");
  c.full = MetricSample(r->body, "dpuaudit_tls_handshakes_total{session=\"full\"}");
  c.resumed = MetricSample(r->body, "dpuaudit_tls_handshakes_total{session=\"resumed\"}");
  c.ok = c.connections >= 0 && c.full >= 0 && c.resumed >= 0;
  if (!c.ok) c.error = "connection counters missing from /metrics: " + r->body.substr(0, 2000);
  return c;
}

}  // namespace dpuaudit::itest

#endif  // DPUAUDIT_TESTS_INTEGRATION_HARNESS_H_

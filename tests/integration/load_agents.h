// Helpers for the crash-safety integration tests (crash_safety_test.cc):
//  - ControlledVerifier: the real `dpuaudit-verifier serve`, like
//    harness.h's VerifierProcess, but on a chosen listen address (so a
//    restart keeps the URL), with a fresh log file per start, an optional
//    RLIMIT_FSIZE (SIGXFSZ ignored, so write() fails with EFBIG instead of
//    killing the process) and Kill() = SIGKILL;
//  - SimAgent: a simulated agent held in-process (its own P-256 key),
//    enrolled with the bootstrap token, signing reports over recorded
//    device evidence collected once per fixture;
//  - StoreReader: the verifier's SQLite file opened read-only with the
//    sqlite3 C API, for the checks the tests make behind the HTTP API.
// Test-only. Nothing here retries or sleeps on its own except Start() and
// Stop() (which waits for the verifier to exit).
#ifndef DPUAUDIT_TESTS_INTEGRATION_LOAD_AGENTS_H_
#define DPUAUDIT_TESTS_INTEGRATION_LOAD_AGENTS_H_

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "apps/common/agent_collect.h"
#include "apps/shared/http_client.h"
#include "common/bytes.h"
#include "common/crypto.h"
#include "device/device_source.h"
#include "integration/harness.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"

namespace dpuaudit::itest {

// A TCP port on 127.0.0.1 that was free a moment ago (bound, then
// released; no SO_REUSEADDR, so a port in TIME_WAIT is not handed out),
// for a server that must come back on the same port after a crash. It is
// chosen below the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range): otherwise, while the server is
// down, a client's connect() could draw the same number as its local port
// and connect to itself (TCP simultaneous open), holding the port so the
// restart cannot bind. 0 if none was found.
inline int FreeLoopbackPort() {
  int ephemeral_low = 32768;
  {
    std::string range = ReadAll("/proc/sys/net/ipv4/ip_local_port_range");
    if (!range.empty()) ephemeral_low = std::atoi(range.c_str());
  }
  const int high = ephemeral_low - 1;
  const int low = std::max(1024, high - 12000);
  if (high <= low) return 0;
  std::random_device rd;
  std::uniform_int_distribution<int> pick(low, high);
  for (int attempt = 0; attempt < 200; ++attempt) {
    int port = pick(rd);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return 0;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    bool bound = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
    close(fd);
    if (bound) return port;
  }
  return 0;
}

struct VerifierOptions {
  std::string listen = "127.0.0.1:0";
  std::string db;          // default: <dir>/verifier.db
  std::string key;         // default: <dir>/verifier.key
  std::string ready_file;  // default: <dir>/verifier.url
  std::vector<std::string> extra;
  // RLIMIT_FSIZE of the verifier (bytes); unset = inherited.
  std::optional<uint64_t> file_size_limit;
};

// A dpuaudit-verifier process; SIGKILLed on destruction if still running.
class ControlledVerifier {
 public:
  ControlledVerifier() = default;
  ~ControlledVerifier() { Kill(); }
  ControlledVerifier(const ControlledVerifier&) = delete;
  ControlledVerifier& operator=(const ControlledVerifier&) = delete;

  // Starts the verifier with its log in <dir>/verifier-<n>.log (n counts
  // starts). Returns false, with the reason and the log in `error`, if it
  // exits or does not write its ready file within 30 s (then it is killed).
  bool Start(const std::string& dir, const VerifierOptions& o,
             std::string* error) {
    Kill();
    std::string ready =
        o.ready_file.empty() ? dir + "/verifier.url" : o.ready_file;
    std::filesystem::remove(ready);
    log_ = dir + "/verifier-" + std::to_string(++starts_) + ".log";
    std::vector<std::string> argv = {
        kBin + "/dpuaudit-verifier",
        "serve",
        "--listen",
        o.listen,
        "--ready-file",
        ready,
        "--db",
        o.db.empty() ? dir + "/verifier.db" : o.db,
        "--key",
        o.key.empty() ? dir + "/verifier.key" : o.key};
    argv.insert(argv.end(), o.extra.begin(), o.extra.end());
    ::dpuaudit::testing::ChildProcessOptions options;
    options.output_file = log_;
    if (o.file_size_limit.has_value()) {
      rlimit fsize{};
      fsize.rlim_cur = fsize.rlim_max =
          static_cast<rlim_t>(*o.file_size_limit);
      options.before_exec = [fsize] {
        // A write past the limit must fail with EFBIG, as on a full disk,
        // rather than kill the process.
        signal(SIGXFSZ, SIG_IGN);
        return setrlimit(RLIMIT_FSIZE, &fsize) == 0;
      };
    }
    if (!child_.Start(argv, options, error)) return false;
    std::string url;
    if (!child_.WaitForReadyFile(
            ready, std::chrono::seconds(30), std::chrono::milliseconds(20),
            &url, error,
            [](const std::string& t) { return !t.empty() && t.back() == '\n'; })) {
      Kill();
      return false;
    }
    url_ = url.substr(0, url.find('\n'));
    return true;
  }

  // SIGKILL, then reap. No-op when not running.
  void Kill() { child_.Kill(); }
  // SIGTERM (graceful: the server stops and the store is closed), then reap
  // (SIGKILL only if it has not exited after a long grace period).
  void Stop() { child_.Stop(); }

  // Running (reaps it, and forgets it, if it has exited).
  bool Alive() { return child_.Reap(); }
  const std::string& url() const { return url_; }
  const std::string& log() const { return log_; }

 private:
  ::dpuaudit::testing::ChildProcess child_;
  int starts_ = 0;
  std::string url_, log_;
};

// What one fixture device's agent would collect: gathered once and reused
// for every simulated agent on that device (collection is deterministic).
struct DeviceEvidence {
  std::string device;
  apps::Collection collection;
};

inline std::unique_ptr<DeviceEvidence> CollectDevice(
    const std::string& device) {
  auto source = device::NewRecordedDeviceSource(Fixture(device));
  if (!source.ok()) return nullptr;
  auto d = std::make_unique<DeviceEvidence>();
  d->device = device;
  d->collection = apps::CollectFromDevice(**source);
  return d;
}

// One simulated agent: a node id, its own P-256 key and the device it
// reports from.
class SimAgent {
 public:
  static StatusOr<std::unique_ptr<SimAgent>> New(std::string node_id,
                                                 const DeviceEvidence* device) {
    DPA_ASSIGN_OR_RETURN(EcPrivateKey key, EcPrivateKey::Generate());
    DPA_ASSIGN_OR_RETURN(auto signer, Es256Signer::New(key));
    return std::unique_ptr<SimAgent>(new SimAgent(
        std::move(node_id), std::move(key), std::move(signer), device));
  }

  const std::string& node_id() const { return node_id_; }
  const DeviceEvidence& device() const { return *device_; }

  // The POST /v1/nodes body.
  std::string EnrollBody() const {
    return nlohmann::json{
        {"node_id", node_id_},
        {"public_key", report::PublicJwk(key_.public_key(), "k")}}
        .dump();
  }
  // Signed with the node key (report/challenge_proof.h).
  // `iat` 0: now.
  std::string ChallengeBody(int64_t iat = 0) const {
    auto body = report::ChallengeRequestBody(
        node_id_, iat != 0 ? iat : static_cast<int64_t>(std::time(nullptr)), *signer_);
    return body.ok() ? *body : std::string();
  }
  // A report from another device's evidence, bound to `nonce`, signed now.
  StatusOr<std::string> SignedReportFrom(const DeviceEvidence& device,
                                         const std::string& nonce) const {
    auto claims = apps::BuildClaims(device.collection, node_id_, nonce,
                                    std::time(nullptr));
    return report::SignReport(claims, *signer_, node_id_);
  }
  // A report bound to `nonce`, signed now.
  StatusOr<std::string> SignedReport(const std::string& nonce) const {
    auto claims = apps::BuildClaims(device_->collection, node_id_, nonce,
                                    std::time(nullptr));
    return report::SignReport(claims, *signer_, node_id_);
  }

 private:
  SimAgent(std::string id, EcPrivateKey key,
           std::unique_ptr<Es256Signer> signer, const DeviceEvidence* device)
      : node_id_(std::move(id)),
        key_(std::move(key)),
        signer_(std::move(signer)),
        device_(device) {}
  std::string node_id_;
  EcPrivateKey key_;
  std::unique_ptr<Es256Signer> signer_;
  const DeviceEvidence* device_;
};

// The JSON payload of a compact JWS / JWT, without verifying it (the tests
// use it on bytes the verifier already accepted or signed).
inline nlohmann::json UnverifiedPayload(const std::string& compact) {
  size_t a = compact.find('.');
  size_t b = a == std::string::npos ? a : compact.find('.', a + 1);
  if (b == std::string::npos) return nlohmann::json();
  auto raw = Base64UrlDecode(compact.substr(a + 1, b - a - 1));
  if (!raw.ok()) return nlohmann::json();
  auto j = nlohmann::json::parse(ToString(*raw), nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

// The verifier's SQLite file, opened read-only (no checkpoint on close, so
// the WAL is left exactly as the verifier left it).
class StoreReader {
 public:
  explicit StoreReader(const std::string& path) {
    int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr);
    if (rc != SQLITE_OK) {
      error_ = "cannot open " + path + ": " +
               (db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc));
      return;
    }
    sqlite3_db_config(db_, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~StoreReader() { sqlite3_close_v2(db_); }
  StoreReader(const StoreReader&) = delete;
  StoreReader& operator=(const StoreReader&) = delete;

  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }

  // Every row of `sql` (bound to `params` as text), each column as text
  // ("" for NULL; NULL-ness is available through IS NULL in the SQL).
  // Sets error() and returns what it read so far on failure.
  std::vector<std::vector<std::string>> Rows(
      const std::string& sql, const std::vector<std::string>& params = {}) {
    std::vector<std::vector<std::string>> out;
    if (!error_.empty()) return out;
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) != SQLITE_OK) {
      error_ = sql + ": " + sqlite3_errmsg(db_);
      return out;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      sqlite3_bind_text(s, static_cast<int>(i + 1), params[i].data(),
                        static_cast<int>(params[i].size()), SQLITE_TRANSIENT);
    }
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
      std::vector<std::string> row;
      for (int c = 0; c < sqlite3_column_count(s); ++c) {
        const void* p = sqlite3_column_blob(s, c);
        int n = sqlite3_column_bytes(s, c);
        row.emplace_back(
            p ? std::string(static_cast<const char*>(p), static_cast<size_t>(n))
              : std::string());
      }
      out.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) error_ = sql + ": " + sqlite3_errmsg(db_);
    sqlite3_finalize(s);
    return out;
  }

  // "ok", or the integrity_check rows joined by newlines.
  std::string IntegrityCheck() {
    std::string out;
    for (auto& r : Rows("PRAGMA integrity_check"))
      out += (out.empty() ? "" : "\n") + r[0];
    return error_.empty() ? out : error_;
  }
  // "" when no foreign key is violated; otherwise one line per violation.
  std::string ForeignKeyCheck() {
    std::string out;
    for (auto& r : Rows("PRAGMA foreign_key_check")) {
      out += r[0] + " rowid " + r[1] + " -> " + r[2] + "\n";
    }
    return error_.empty() ? out : error_;
  }

 private:
  sqlite3* db_ = nullptr;
  std::string error_;
};

}  // namespace dpuaudit::itest

#endif  // DPUAUDIT_TESTS_INTEGRATION_LOAD_AGENTS_H_

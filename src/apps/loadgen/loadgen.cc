#include "apps/loadgen/loadgen.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <set>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdarg>
#include <cstdio>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "apps/common/agent_collect.h"
#include "apps/loadgen/connection.h"
#include "apps/loadgen/pacing.h"
#include "apps/loadgen/proc_cpu.h"
#include "apps/shared/http_client.h"
#include "apps/shared/loopback.h"
#include "apps/shared/stop_signals.h"
#include "apps/shared/token_file.h"
#include "common/crypto.h"
#include "device/device_source.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "report/node_id.h"

namespace dpuaudit::apps::loadgen {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool> g_stop{false};
void HandleSignal(int) { g_stop = true; }

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}
int64_t MicrosBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<std::chrono::microseconds>(b - a).count();
}

struct SimNode {
  std::string node_id;
  size_t device = 0;
  std::unique_ptr<EcPrivateKey> key;
  std::unique_ptr<Es256Signer> signer;
  // --report-format 2: the JWS digest of the node's last accepted full
  // report ("" before it has one); its evidence is the device's, whose item
  // digests are the Runner's per device.
  struct Base {
    std::mutex mu;
    std::string sha256;
  };
  std::shared_ptr<Base> base = std::make_shared<Base>();
};

// Runs fn(0..count-1) on `threads` threads, each index once.
template <typename Fn>
void ParallelFor(int64_t count, int threads, Fn fn) {
  std::atomic<int64_t> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (int64_t i = next++; i < count; i = next++) fn(i);
    });
  }
  for (auto& th : pool) th.join();
}

std::string RandomPrefix() {
  std::random_device rd;
  char buf[16];
  std::snprintf(buf, sizeof buf, "lg-%08x-", static_cast<unsigned>(rd()));
  return buf;
}

// The error kind and message of a request that did not answer 2xx.
void CountFailure(ErrorCounts& errors, const std::string& request, const HttpResult& r) {
  if (r.curl_code != 0) {
    errors.Add(request, "curl " + std::to_string(r.curl_code), r.curl_message);
    return;
  }
  HttpResponse resp{r.status, "", r.body};
  errors.Add(request, "http " + std::to_string(r.status), StatusFromHttpError(resp).message());
}

bool Is2xx(const HttpResult& r) { return r.curl_code == 0 && r.status >= 200 && r.status < 300; }

// The CPU of the verifier (when known) and of this process, now.
struct CpuMark {
  double self = 0;
  bool verifier_known = false;
  double verifier = 0;
};
CpuMark MarkCpu(pid_t verifier) {
  CpuMark m;
  m.self = SelfCpuSeconds();
  if (verifier > 0) {
    auto v = ProcessCpuSeconds(verifier);
    if (v.ok()) {
      m.verifier_known = true;
      m.verifier = *v;
    }
  }
  return m;
}
PhaseCpu Delta(const CpuMark& a, const CpuMark& b) {
  PhaseCpu p;
  p.generator_seconds = b.self - a.self;
  p.verifier_known = a.verifier_known && b.verifier_known;
  if (p.verifier_known) p.verifier_seconds = b.verifier - a.verifier;
  return p;
}

int UrlPort(const std::string& url) {
  // scheme://host[:port][/...]; IPv6 hosts in brackets.
  size_t start = url.find("://");
  if (start == std::string::npos) return 0;
  start += 3;
  size_t end = url.find('/', start);
  std::string authority = url.substr(start, end == std::string::npos ? end : end - start);
  size_t colon = authority.rfind(':');
  size_t bracket = authority.rfind(']');
  if (colon == std::string::npos || (bracket != std::string::npos && colon < bracket)) {
    return url.rfind("https://", 0) == 0 ? 443 : 80;
  }
  return std::atoi(authority.c_str() + colon + 1);
}

// Per worker thread: its samples and counts, merged at the end.
struct WorkerStats {
  std::vector<int64_t> attestation_us, challenge_us, report_us, lag_us;
  ErrorCounts errors;
  int64_t ok = 0, failed = 0, admit = 0, deny = 0, connects = 0;
};

class Runner {
 public:
  explicit Runner(const LoadgenOptions& o) : o_(o) {}
  StatusOr<RunResult> Go();

 private:
  void Progress(const char* fmt, ...) __attribute__((format(printf, 2, 3)));
  Status Collect();
  Status MakeKeys();
  Status Enroll();
  void Attest(Connection& conn, const SimNode& node, WorkerStats& ws,
              Clock::time_point due);
  Status TimedPhase();

  const LoadgenOptions& o_;
  RunResult r_;
  std::vector<Collection> devices_;
  std::vector<std::set<std::string>> device_digests_;  // item digests per device
  std::vector<nlohmann::json> device_json_;  // the enrollment's "device"
  std::vector<SimNode> nodes_;
  std::string bootstrap_, admin_;
  std::atomic<int64_t> started_{0}, ok_{0}, failed_{0};
};

void Runner::Progress(const char* fmt, ...) {
  if (o_.quiet) return;
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (o_.progress_tty) {
    std::fprintf(stderr, "\r\033[K%s", buf);
  } else {
    std::fprintf(stderr, "%s\n", buf);
  }
  std::fflush(stderr);
}

Status Runner::Collect() {
  const auto t = Clock::now();
  for (const std::string& root : o_.device_roots) {
    DPA_ASSIGN_OR_RETURN(auto source, device::NewRecordedDeviceSource(root));
    Collection c = CollectFromDevice(*source);
    if (c.evidence.empty()) {
      return InvalidArgumentError("--device-root " + root + ": no evidence collected.");
    }
    nlohmann::json device = nlohmann::json::object();
    if (!c.device.serial.empty()) device["serial"] = c.device.serial;
    if (!c.device.psid.empty()) device["psid"] = c.device.psid;
    if (!c.device.model.empty()) device["model"] = c.device.model;
    device_json_.push_back(std::move(device));
    std::set<std::string> digests;
    for (const auto& e : c.evidence) digests.insert(report::EvidenceItemDigest(e));
    device_digests_.push_back(std::move(digests));
    devices_.push_back(std::move(c));
  }
  r_.collect_seconds = SecondsSince(t);
  return OkStatus();
}

Status Runner::MakeKeys() {
  const auto t = Clock::now();
  nodes_.resize(static_cast<size_t>(o_.nodes));
  std::mutex mu;
  Status first;
  const int width = std::max<int>(6, static_cast<int>(std::to_string(o_.nodes - 1).size()));
  ParallelFor(o_.nodes, r_.usable_cpus, [&](int64_t i) {
    SimNode& n = nodes_[static_cast<size_t>(i)];
    char num[32];
    std::snprintf(num, sizeof num, "%0*lld", width, static_cast<long long>(i));
    n.node_id = r_.node_prefix + num;
    n.device = static_cast<size_t>(i) % devices_.size();
    auto key = EcPrivateKey::Generate();
    StatusOr<std::unique_ptr<Es256Signer>> signer =
        key.ok() ? Es256Signer::New(*key) : StatusOr<std::unique_ptr<Es256Signer>>(key.status());
    if (!signer.ok()) {
      std::lock_guard<std::mutex> l(mu);
      if (first.ok()) first = signer.status();
      return;
    }
    n.key = std::make_unique<EcPrivateKey>(std::move(key).value());
    n.signer = std::move(signer).value();
  });
  DPA_RETURN_IF_ERROR(first);
  DPA_RETURN_IF_ERROR(report::ValidateNodeId(nodes_.back().node_id, "--node-prefix"));
  r_.keys_seconds = SecondsSince(t);
  return OkStatus();
}

Status Runner::Enroll() {
  const auto t = Clock::now();
  const CpuMark before = MarkCpu(r_.verifier_pid);
  const int threads = static_cast<int>(std::min<int64_t>(o_.connections, o_.nodes));
  std::atomic<int64_t> next{0}, done{0};
  std::mutex mu;
  Status fatal;
  std::vector<ErrorCounts> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  std::atomic<bool> finished{false};
  for (int w = 0; w < threads; ++w) {
    pool.emplace_back([&, w] {
      Connection::Options co;
      co.ca_file = o_.ca_file;
      auto conn = Connection::New(o_.verifier, co);
      if (!conn.ok()) {
        std::lock_guard<std::mutex> l(mu);
        if (fatal.ok()) fatal = conn.status();
        return;
      }
      ErrorCounts& err = errors[static_cast<size_t>(w)];
      for (int64_t i = next++; i < o_.nodes && !g_stop; i = next++) {
        const SimNode& n = nodes_[static_cast<size_t>(i)];
        std::string token = bootstrap_;
        // A refusal for lack of capacity (429, 503) is retried with a
        // growing pause; anything else stops the setup.
        HttpResult res;
        for (int attempt = 0; attempt < 8; ++attempt) {
          if (token.empty() || !admin_.empty()) {
            nlohmann::json issue = {{"node_id", n.node_id},
                                    {"by", "dpuaudit-loadgen"},
                                    {"ttl_seconds", 3600}};
            res = (*conn)->Post("/v1/enrollment-tokens", "application/json", issue.dump(),
                                admin_);
            if (Is2xx(res)) {
              auto j = nlohmann::json::parse(res.body, nullptr, false);
              token = JsonStr(j, "token", "");
              if (token.empty()) {
                err.Add("token", "answer", "POST /v1/enrollment-tokens answered no token");
                break;
              }
            } else {
              CountFailure(err, "token", res);
              if (res.status == 429 || res.status == 503) {
                std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
                continue;
              }
              break;
            }
          }
          nlohmann::json body = {
              {"node_id", n.node_id},
              {"public_key", report::PublicJwk(n.key->public_key(),
                                               n.key->public_key().Thumbprint())}};
          if (!device_json_[n.device].empty()) body["device"] = device_json_[n.device];
          res = (*conn)->Post("/v1/nodes", "application/json", body.dump(), token);
          if (Is2xx(res)) break;
          CountFailure(err, "enroll", res);
          if (res.status != 429 && res.status != 503) break;
          if (!admin_.empty()) token.clear();  // a fresh token for the retry
          std::this_thread::sleep_for(std::chrono::milliseconds(50 << attempt));
        }
        if (!Is2xx(res)) {
          std::lock_guard<std::mutex> l(mu);
          if (fatal.ok()) {
            HttpResponse resp{res.status, "", res.body};
            fatal = res.curl_code != 0
                        ? UnavailableError("enrolling " + n.node_id + ": " + res.curl_message)
                        : StatusFromHttpError(resp).WithPrefix("enrolling " + n.node_id);
          }
          g_stop = true;
          return;
        }
        auto j = nlohmann::json::parse(res.body, nullptr, false);
        if (JsonStr(j, "state", "") != "approved") {
          std::lock_guard<std::mutex> l(mu);
          if (fatal.ok()) {
            fatal = FailedPreconditionError("enrolling " + n.node_id + ": the verifier left it " +
                                            JsonStr(j, "state", "?") +
                                            " (the token does not approve nodes).");
          }
          g_stop = true;
          return;
        }
        ++done;
      }
    });
  }
  std::thread progress([&] {
    const auto every = std::chrono::seconds(o_.progress_tty ? 1 : 5);
    auto tick = Clock::now() + every;
    while (!finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (Clock::now() < tick) continue;
      tick += every;
      const double s = SecondsSince(t);
      Progress("enrolling: %lld/%lld nodes in %.0f s (%.0f/s)",
               static_cast<long long>(done.load()), static_cast<long long>(o_.nodes), s,
               static_cast<double>(done.load()) / std::max(s, 1e-9));
    }
  });
  for (auto& th : pool) th.join();
  finished = true;
  progress.join();
  for (const ErrorCounts& e : errors) r_.enroll_errors.Merge(e);
  r_.enrolled = done;
  r_.enroll_seconds = SecondsSince(t);
  r_.enroll_cpu = Delta(before, MarkCpu(r_.verifier_pid));
  if (o_.progress_tty && !o_.quiet) std::fprintf(stderr, "\r\033[K");
  if (!fatal.ok()) return fatal;
  if (g_stop) return UnavailableError("interrupted (signal) while enrolling.");
  return OkStatus();
}

void Runner::Attest(Connection& conn, const SimNode& node, WorkerStats& ws,
                    Clock::time_point due) {
  const auto start = Clock::now();
  ws.lag_us.push_back(std::max<int64_t>(0, MicrosBetween(due, start)));
  auto fail = [&](const std::string& request, const std::string& kind, const std::string& msg) {
    ws.errors.Add(request, kind, msg);
    ++ws.failed;
    ++failed_;
  };
  auto body = report::ChallengeRequestBody(node.node_id, std::time(nullptr), *node.signer);
  if (!body.ok()) return fail("challenge", "local", body.status().message());
  const auto c0 = Clock::now();
  HttpResult ch = conn.Post("/v1/challenges", "application/json", *body);
  const auto c1 = Clock::now();
  if (!Is2xx(ch)) {
    CountFailure(ws.errors, "challenge", ch);
    ++ws.failed;
    ++failed_;
    return;
  }
  ws.challenge_us.push_back(MicrosBetween(c0, c1));
  auto cj = nlohmann::json::parse(ch.body, nullptr, false);
  const std::string nonce = JsonStr(cj, "nonce", "");
  if (nonce.empty()) return fail("challenge", "answer", "the challenge answer has no nonce");
  // The agent's own claims and signature (apps/common/agent_collect.h,
  // report::SignReport) for this node, this nonce, now.
  report::ReportClaims claims =
      BuildClaims(devices_[node.device], node.node_id, nonce, std::time(nullptr));
  std::string base;
  if (o_.report_format == 2) {
    std::lock_guard<std::mutex> lock(node.base->mu);
    base = node.base->sha256;
  }
  if (o_.report_format == 2) {
    report::CarryByDigest(claims, base,
                          base.empty() ? std::set<std::string>() : device_digests_[node.device]);
  }
  auto jws = report::SignReport(claims, *node.signer, node.node_id);
  if (!jws.ok()) return fail("report", "local", jws.status().message());
  const auto r0 = Clock::now();
  HttpResult rep = conn.Post("/v1/reports", "application/jose", *jws);
  if (rep.status == 409 && !claims.by_digest.empty() &&
      rep.body.find("evidence_unknown") != std::string::npos) {
    // As the agent: once more in full, same nonce.
    report::CarryByDigest(claims, "", {});
    jws = report::SignReport(claims, *node.signer, node.node_id);
    if (!jws.ok()) return fail("report", "local", jws.status().message());
    rep = conn.Post("/v1/reports", "application/jose", *jws);
  }
  const auto r1 = Clock::now();
  if (o_.report_format == 2 && claims.by_digest.empty() && Is2xx(rep)) {
    std::lock_guard<std::mutex> lock(node.base->mu);
    node.base->sha256 = Sha256Hex(AsBytes(*jws));
  }
  if (!Is2xx(rep)) {
    CountFailure(ws.errors, "report", rep);
    ++ws.failed;
    ++failed_;
    return;
  }
  ws.report_us.push_back(MicrosBetween(r0, r1));
  auto rj = nlohmann::json::parse(rep.body, nullptr, false);
  const std::string decision = JsonStr(rj, "decision", "");
  if (decision == "admit") {
    ++ws.admit;
  } else if (decision == "deny") {
    ++ws.deny;
  } else {
    return fail("report", "answer", "the result has no decision");
  }
  ws.attestation_us.push_back(MicrosBetween(start, r1));
  ++ws.ok;
  ++ok_;
}

Status Runner::TimedPhase() {
  const Schedule schedule(o_.nodes, static_cast<int64_t>(o_.interval_seconds * 1e9));
  const int64_t duration_ns = static_cast<int64_t>(o_.duration_seconds * 1e9);
  r_.target_per_second = schedule.TargetPerSecond();
  std::vector<WorkerStats> stats(static_cast<size_t>(o_.connections));
  std::vector<std::unique_ptr<Connection>> conns;
  for (int w = 0; w < o_.connections; ++w) {
    Connection::Options co;
    co.ca_file = o_.ca_file;
    DPA_ASSIGN_OR_RETURN(auto c, Connection::New(o_.verifier, co));
    conns.push_back(std::move(c));
  }
  std::atomic<int64_t> next{0};
  const CpuMark before = MarkCpu(r_.verifier_pid);
  const auto t0 = Clock::now();
  const auto end = t0 + std::chrono::nanoseconds(duration_ns);
  std::vector<std::thread> pool;
  for (int w = 0; w < o_.connections; ++w) {
    pool.emplace_back([&, w] {
      WorkerStats& ws = stats[static_cast<size_t>(w)];
      Connection& conn = *conns[static_cast<size_t>(w)];
      int64_t mine = 0;
      while (!g_stop) {
        const int64_t j = next++;
        const int64_t due_ns = schedule.DueNs(j);
        if (due_ns >= duration_ns) break;
        const auto due = t0 + std::chrono::nanoseconds(due_ns);
        // Sleep in short steps so an interrupt is seen.
        while (!g_stop && Clock::now() < due) {
          std::this_thread::sleep_until(
              std::min(due, Clock::now() + std::chrono::milliseconds(100)));
        }
        if (g_stop || Clock::now() >= end) break;  // late past the end: not started
        ++started_;
        if (o_.reconnect_every > 0 && ++mine % o_.reconnect_every == 0) conn.CloseAfterNext();
        Attest(conn, nodes_[static_cast<size_t>(schedule.Node(j))], ws, due);
      }
      ws.connects = conn.connects();
    });
  }
  std::atomic<bool> finished{false};
  std::thread progress([&] {
    const auto every = std::chrono::seconds(o_.progress_tty ? 1 : 5);
    auto tick = t0 + every;
    while (!finished) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (Clock::now() < tick) continue;
      tick += every;
      const double s = SecondsSince(t0);
      const int64_t due = schedule.DueCount(static_cast<int64_t>(s * 1e9));
      const int64_t started = started_.load();
      Progress("%5.0f/%.0f s  ok %lld  failed %lld  %.1f/s of %.1f/s target  behind %lld",
               s, o_.duration_seconds, static_cast<long long>(ok_.load()),
               static_cast<long long>(failed_.load()),
               static_cast<double>(ok_.load()) / std::max(s, 1e-9), r_.target_per_second,
               static_cast<long long>(std::max<int64_t>(0, due - started)));
    }
  });
  for (auto& th : pool) th.join();
  r_.elapsed_seconds = SecondsSince(t0);
  r_.run_cpu = Delta(before, MarkCpu(r_.verifier_pid));
  if (r_.verifier_pid > 0) {
    auto mem = ReadProcessMemory(r_.verifier_pid);
    if (mem.ok()) r_.verifier_memory = *mem;
  }
  finished = true;
  progress.join();
  if (o_.progress_tty && !o_.quiet) std::fprintf(stderr, "\r\033[K");
  r_.interrupted = g_stop;
  const double window = std::min(r_.elapsed_seconds, o_.duration_seconds);
  r_.due = r_.interrupted ? schedule.DueCount(static_cast<int64_t>(window * 1e9))
                          : schedule.DueCount(duration_ns - 1);
  r_.started = started_;
  WorkerStats all;
  for (WorkerStats& ws : stats) {
    all.ok += ws.ok;
    all.failed += ws.failed;
    all.admit += ws.admit;
    all.deny += ws.deny;
    all.connects += ws.connects;
    r_.errors.Merge(ws.errors);
    for (auto [from, to] : {std::pair{&ws.attestation_us, &all.attestation_us},
                            std::pair{&ws.challenge_us, &all.challenge_us},
                            std::pair{&ws.report_us, &all.report_us},
                            std::pair{&ws.lag_us, &all.lag_us}}) {
      to->insert(to->end(), from->begin(), from->end());
    }
  }
  r_.ok = all.ok;
  r_.failed = all.failed;
  r_.admit = all.admit;
  r_.deny = all.deny;
  r_.connects = all.connects;
  r_.achieved_per_second = static_cast<double>(r_.ok) / std::max(r_.elapsed_seconds, 1e-9);
  r_.latency["attestation"] = Summarize(all.attestation_us);
  r_.latency["challenge"] = Summarize(all.challenge_us);
  r_.latency["report"] = Summarize(all.report_us);
  r_.latency["schedule_lag"] = Summarize(all.lag_us);
  return OkStatus();
}

StatusOr<RunResult> Runner::Go() {
  r_.options = o_;
  r_.usable_cpus = UsableCpus();
  r_.node_prefix = o_.node_prefix.empty() ? RandomPrefix() : o_.node_prefix;
  if (o_.bootstrap_token_file.empty() == o_.admin_token_file.empty()) {
    return InvalidArgumentError(
        "give exactly one of --bootstrap-token-file (the fleet token: one request per node) "
        "and --admin-token-file (a per-node token issued first, as an operator would).");
  }
  if (!o_.bootstrap_token_file.empty()) {
    DPA_ASSIGN_OR_RETURN(bootstrap_, ReadTokenFile(o_.bootstrap_token_file, "bootstrap"));
  } else {
    DPA_ASSIGN_OR_RETURN(admin_, ReadTokenFile(o_.admin_token_file, "admin"));
  }
  // The verifier's process, for its CPU.
  if (o_.verifier_pid > 0) {
    r_.verifier_pid = o_.verifier_pid;
    auto v = ProcessCpuSeconds(o_.verifier_pid);
    if (!v.ok()) return v.status().WithPrefix("--verifier-pid");
  } else if (IsLoopbackHost(UrlHost(o_.verifier))) {
    auto pid = FindListeningPid(UrlPort(o_.verifier));
    if (pid.ok()) {
      r_.verifier_pid = *pid;
    } else {
      r_.verifier_pid_note = pid.status().message();
    }
  } else {
    r_.verifier_pid_note = "the verifier is not on this host (give --verifier-pid if it is)";
  }
  InstallStopSignals(HandleSignal);

  DPA_RETURN_IF_ERROR(Collect());
  if (!o_.quiet) {
    std::fprintf(stderr, "dpuaudit-loadgen: %zu device(s) collected in %.2f s; %lld keys...\n",
                 devices_.size(), r_.collect_seconds, static_cast<long long>(o_.nodes));
  }
  DPA_RETURN_IF_ERROR(MakeKeys());
  DPA_RETURN_IF_ERROR(Enroll());
  if (!o_.quiet) {
    std::fprintf(stderr,
                 "dpuaudit-loadgen: %lld nodes enrolled in %.1f s; attesting for %.0f s at "
                 "%.1f/s...\n",
                 static_cast<long long>(r_.enrolled), r_.enroll_seconds, o_.duration_seconds,
                 static_cast<double>(o_.nodes) / o_.interval_seconds);
  }
  DPA_RETURN_IF_ERROR(TimedPhase());
  return r_;
}

std::string Ms(int64_t us) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", static_cast<double>(us) / 1000.0);
  return b;
}

nlohmann::json LatencyJson(const LatencySummary& s) {
  auto ms = [](double us) { return std::round(us / 10.0) / 100.0; };
  return {{"count", s.count},
          {"p50_ms", ms(static_cast<double>(s.p50_us))},
          {"p95_ms", ms(static_cast<double>(s.p95_us))},
          {"p99_ms", ms(static_cast<double>(s.p99_us))},
          {"max_ms", ms(static_cast<double>(s.max_us))},
          {"mean_ms", ms(s.mean_us)}};
}

double Round(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

nlohmann::json ErrorsJson(const ErrorCounts& e) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& [key, entry] : e.entries()) {
    a.push_back({{"request", key.first},
                 {"kind", key.second},
                 {"count", entry.count},
                 {"message", entry.message}});
  }
  return a;
}

nlohmann::json CpuJson(const PhaseCpu& c, int64_t per, double elapsed, const char* per_name) {
  nlohmann::json j = {
      {"generator_ms", Round(c.generator_seconds * 1e3, 1)},
      {std::string("generator_ms_per_") + per_name,
       per > 0 ? nlohmann::json(Round(c.generator_seconds * 1e3 / static_cast<double>(per), 3))
               : nlohmann::json(nullptr)},
      {"generator_cores", Round(c.generator_seconds / std::max(elapsed, 1e-9), 2)},
      {"verifier_ms", nullptr},
      {std::string("verifier_ms_per_") + per_name, nullptr},
      {"verifier_cores", nullptr}};
  if (c.verifier_known) {
    j["verifier_ms"] = Round(c.verifier_seconds * 1e3, 1);
    if (per > 0) {
      j[std::string("verifier_ms_per_") + per_name] =
          Round(c.verifier_seconds * 1e3 / static_cast<double>(per), 3);
    }
    j["verifier_cores"] = Round(c.verifier_seconds / std::max(elapsed, 1e-9), 2);
  }
  return j;
}

}  // namespace

bool RunResult::target_reached() const {
  // Every due attestation started and at least 95 % of them succeeded.
  return !interrupted && started >= due && ok * 100 >= due * 95;
}

double RunResult::error_percent() const {
  return started > 0 ? 100.0 * static_cast<double>(failed) / static_cast<double>(started) : 0;
}

bool RunResult::generator_bottleneck() const {
  // The generator used (nearly) every CPU it may run on.
  return run_cpu.generator_seconds >= 0.85 * usable_cpus * std::max(elapsed_seconds, 1e-9);
}

bool RunResult::machine_saturated() const {
  return run_cpu.verifier_known &&
         run_cpu.generator_seconds + run_cpu.verifier_seconds >=
             0.85 * usable_cpus * std::max(elapsed_seconds, 1e-9);
}

std::string RunResult::bottleneck() const {
  if (target_reached()) return "none";
  if (generator_bottleneck()) return "generator_cpu";
  if (machine_saturated()) return "host_cpu";
  return "verifier_wait";
}

StatusOr<RunResult> Run(const LoadgenOptions& options) {
  if (options.nodes < 1) return InvalidArgumentError("--nodes must be at least 1.");
  if (!(options.interval_seconds > 0)) return InvalidArgumentError("--interval must be > 0.");
  if (!(options.duration_seconds > 0)) return InvalidArgumentError("--duration must be > 0.");
  if (options.connections < 1) return InvalidArgumentError("--connections must be at least 1.");
  if (options.device_roots.empty()) {
    return InvalidArgumentError("at least one --device-root is needed.");
  }
  Runner runner(options);
  return runner.Go();
}

nlohmann::json ResultJson(const RunResult& r) {
  const LoadgenOptions& o = r.options;
  nlohmann::json latency = nlohmann::json::object();
  for (const auto& [name, s] : r.latency) latency[name] = LatencyJson(s);
  nlohmann::json cpu = CpuJson(r.run_cpu, r.ok, r.elapsed_seconds, "attestation");
  cpu["usable_cpus"] = r.usable_cpus;
  cpu["generator_bottleneck"] = r.generator_bottleneck();
  cpu["machine_saturated"] = r.run_cpu.verifier_known ? nlohmann::json(r.machine_saturated())
                                                      : nlohmann::json(nullptr);
  return {
      {"verifier",
       {{"url", o.verifier},
        {"pid", r.verifier_pid > 0 ? nlohmann::json(r.verifier_pid) : nlohmann::json(nullptr)},
        {"pid_note", r.verifier_pid_note},
        {"rss_bytes", r.verifier_memory ? nlohmann::json(r.verifier_memory->rss_bytes)
                                        : nlohmann::json(nullptr)},
        {"peak_rss_bytes", r.verifier_memory ? nlohmann::json(r.verifier_memory->peak_rss_bytes)
                                             : nlohmann::json(nullptr)}}},
      {"nodes", o.nodes},
      {"interval_seconds", o.interval_seconds},
      {"duration_seconds", o.duration_seconds},
      {"connections", o.connections},
      {"reconnect_every", o.reconnect_every},
      {"report_format", o.report_format},
      {"node_prefix", r.node_prefix},
      {"devices", o.device_roots},
      {"setup",
       {{"enrollment", o.admin_token_file.empty() ? "bootstrap-token" : "per-node-token"},
        {"collect_seconds", Round(r.collect_seconds, 3)},
        {"keys_seconds", Round(r.keys_seconds, 3)},
        {"enroll_seconds", Round(r.enroll_seconds, 3)},
        {"enrolled", r.enrolled},
        {"enrolled_per_second",
         Round(static_cast<double>(r.enrolled) / std::max(r.enroll_seconds, 1e-9), 1)},
        {"cpu", CpuJson(r.enroll_cpu, r.enrolled, r.enroll_seconds, "node")},
        {"errors", ErrorsJson(r.enroll_errors)}}},
      {"elapsed_seconds", Round(r.elapsed_seconds, 3)},
      {"interrupted", r.interrupted},
      {"attestations",
       {{"due", r.due},
        {"started", r.started},
        {"not_started", std::max<int64_t>(0, r.due - r.started)},
        {"ok", r.ok},
        {"failed", r.failed},
        {"admit", r.admit},
        {"deny", r.deny}}},
      {"target_per_second", Round(r.target_per_second, 2)},
      {"achieved_per_second", Round(r.achieved_per_second, 2)},
      {"target_reached", r.target_reached()},
      {"bottleneck", r.bottleneck()},
      {"connects", r.connects},
      {"latency", latency},
      {"errors", {{"total", r.errors.Total()},
                  {"percent", Round(r.error_percent(), 3)},
                  {"by_kind", ErrorsJson(r.errors)}}},
      {"cpu", cpu}};
}

std::string ResultText(const RunResult& r) {
  const LoadgenOptions& o = r.options;
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line,
                "dpuaudit-loadgen: %lld nodes, every %g s, %g s, %d connections\n",
                static_cast<long long>(o.nodes), o.interval_seconds, o.duration_seconds,
                o.connections);
  out << line << "verifier " << o.verifier << "\n";
  std::snprintf(line, sizeof line,
                "setup: evidence %.2f s, keys %.1f s, %lld enrolled in %.1f s (%.0f/s)\n",
                r.collect_seconds, r.keys_seconds, static_cast<long long>(r.enrolled),
                r.enroll_seconds,
                static_cast<double>(r.enrolled) / std::max(r.enroll_seconds, 1e-9));
  out << line;
  std::snprintf(line, sizeof line,
                "attestations: %lld ok, %lld failed, %lld not started of %lld due "
                "(%lld admit, %lld deny)\n",
                static_cast<long long>(r.ok), static_cast<long long>(r.failed),
                static_cast<long long>(std::max<int64_t>(0, r.due - r.started)),
                static_cast<long long>(r.due), static_cast<long long>(r.admit),
                static_cast<long long>(r.deny));
  out << line;
  std::snprintf(line, sizeof line, "rate: %.1f/s achieved of %.1f/s target: %s%s\n",
                r.achieved_per_second, r.target_per_second,
                r.target_reached() ? "target reached" : "TARGET NOT REACHED",
                r.interrupted ? " (interrupted)" : "");
  out << line << "\n";
  std::snprintf(line, sizeof line, "%-22s %9s %9s %9s %9s %9s %9s\n", "latency (ms)", "count",
                "p50", "p95", "p99", "max", "mean");
  out << line;
  for (const char* name : {"attestation", "challenge", "report", "schedule_lag"}) {
    auto it = r.latency.find(name);
    if (it == r.latency.end()) continue;
    const LatencySummary& s = it->second;
    std::snprintf(line, sizeof line, "%-22s %9lld %9s %9s %9s %9s %9.1f\n",
                  std::string(name) == "schedule_lag" ? "schedule lag" : name,
                  static_cast<long long>(s.count), Ms(s.p50_us).c_str(), Ms(s.p95_us).c_str(),
                  Ms(s.p99_us).c_str(), Ms(s.max_us).c_str(), s.mean_us / 1000.0);
    out << line;
  }
  out << "\n";
  std::snprintf(line, sizeof line, "%-22s %12s %18s %9s\n", "CPU", "ms", "ms/attestation",
                "cores");
  out << line;
  const double per = r.ok > 0 ? static_cast<double>(r.ok) : 1;
  const double el = std::max(r.elapsed_seconds, 1e-9);
  std::snprintf(line, sizeof line, "%-22s %12.0f %18.3f %9.2f\n", "generator",
                r.run_cpu.generator_seconds * 1e3, r.run_cpu.generator_seconds * 1e3 / per,
                r.run_cpu.generator_seconds / el);
  out << line;
  if (r.run_cpu.verifier_known) {
    const std::string who = "verifier (pid " + std::to_string(r.verifier_pid) + ")";
    std::snprintf(line, sizeof line, "%-22s %12.0f %18.3f %9.2f\n", who.c_str(),
                  r.run_cpu.verifier_seconds * 1e3, r.run_cpu.verifier_seconds * 1e3 / per,
                  r.run_cpu.verifier_seconds / el);
    out << line;
  } else {
    out << "verifier CPU: not known (" << r.verifier_pid_note << ")\n";
  }
  if (r.verifier_memory) {
    std::snprintf(line, sizeof line, "verifier memory: %.1f MiB resident, peak %.1f MiB\n",
                  static_cast<double>(r.verifier_memory->rss_bytes) / (1 << 20),
                  static_cast<double>(r.verifier_memory->peak_rss_bytes) / (1 << 20));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "%d usable CPUs; generator bottleneck: %s; connections opened: %lld\n",
                r.usable_cpus, r.generator_bottleneck() ? "YES" : "no",
                static_cast<long long>(r.connects));
  out << line;
  const std::string b = r.bottleneck();
  if (b == "generator_cpu") {
    out << "limit: the generator's CPU (run it on another host, or fewer nodes)\n";
  } else if (b == "host_cpu") {
    out << "limit: this host's CPUs (generator + verifier used them all)\n";
  } else if (b == "verifier_wait") {
    out << "limit: waiting for the verifier with CPU to spare (its store's serialised "
           "commits?);\n       more --connections may raise the rate\n";
  }
  if (r.errors.Total() == 0) {
    out << "errors: none\n";
  } else {
    std::snprintf(line, sizeof line, "\nerrors: %lld (%.2f %% of started)\n",
                  static_cast<long long>(r.errors.Total()), r.error_percent());
    out << line;
    std::snprintf(line, sizeof line, "%-10s %-9s %8s  %s\n", "request", "kind", "count",
                  "first message");
    out << line;
    for (const auto& [key, e] : r.errors.entries()) {
      std::string msg = e.message.substr(0, 66);
      std::snprintf(line, sizeof line, "%-10s %-9s %8lld  %s\n", key.first.c_str(),
                    key.second.c_str(), static_cast<long long>(e.count), msg.c_str());
      out << line;
    }
  }
  return out.str();
}

int ExitCode(const RunResult& r) {
  if (r.ok == 0) return 1;
  return r.error_percent() > r.options.max_error_percent ? 1 : 0;
}

}  // namespace dpuaudit::apps::loadgen

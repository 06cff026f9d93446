// The verifier's lifecycle (issue 15) with the real binaries: graceful stop
// on SIGTERM (stop accepting at once, finish requests in flight, exit 0),
// SIGHUP reload of policy, token files and TLS certificate (a bad file
// changes nothing), sd_notify readiness, and the systemd units in
// packaging/systemd checked by systemd-analyze.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/files.h"
#include "harness.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
using itest::ReadAll;

constexpr auto kBound = std::chrono::seconds(30);  // upper bound of every poll

// Polls `pred` every 20 ms until it holds or kBound passes.
template <typename Pred>
bool PollUntil(Pred pred) {
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  while (!pred()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

uint16_t PortOf(const std::string& url) {
  return static_cast<uint16_t>(std::stoi(url.substr(url.rfind(':') + 1)));
}

// A raw TCP connection to 127.0.0.1:port; -1 when refused.
int Connect(uint16_t port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = send(fd, s.data() + off, s.size() - off, MSG_NOSIGNAL);
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// Reads until `done(text)` or EOF or kBound.
std::string ReadUntil(int fd, const std::function<bool(const std::string&)>& done) {
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + kBound;
  while (!done(text) && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  return text;
}

// A complete HTTP response: head and Content-Length bytes of body.
bool CompleteResponse(const std::string& t) {
  size_t head = t.find("\r\n\r\n");
  if (head == std::string::npos) return false;
  size_t cl = t.find("Content-Length: ");
  if (cl == std::string::npos || cl > head) return true;
  size_t n = std::stoul(t.substr(cl + 16));
  return t.size() >= head + 4 + n;
}

// The response without its Date header (the one part that may differ).
// Without the headers that differ between two identical requests.
std::string WithoutDate(std::string t) {
  for (const char* h : {"Date: ", "X-Request-Id: "}) {
    size_t d = t.find(h);
    if (d != std::string::npos) t.erase(d, t.find("\r\n", d) + 2 - d);
  }
  return t;
}

class LifecycleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-life-XXXXXX";
    dir_ = mkdtemp(tmpl);
    bootstrap_file_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(WriteFileAtomic(bootstrap_file_,
                                AsBytes(std::string("lifecycle-bootstrap-token-0001\n")), 0600)
                    .ok());
    policy_file_ = dir_ + "/policy.json";
    fs::copy_file(kSrc + "/policies/zero-trust.json", policy_file_);
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void StartVerifier(std::vector<std::string> extra = {}, bool import_refvals = true) {
    std::vector<std::string> args = {"--policy", policy_file_, "--bootstrap-token-file",
                                     bootstrap_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_token_file_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string ready = dir_ + "/verifier.url";
    fs::remove(ready);
    log_ = dir_ + "/verifier.log";
    std::vector<std::string> argv = {kBin + "/dpuaudit-verifier", "serve", "--listen",
                                     "127.0.0.1:0", "--ready-file", ready, "--db",
                                     dir_ + "/verifier.db", "--key", dir_ + "/verifier.key"};
    argv.insert(argv.end(), args.begin(), args.end());
    testing::ChildProcessOptions options;
    options.output_file = log_;
    std::string err, url;
    ASSERT_TRUE(verifier_.Start(argv, options, &err)) << err;
    ASSERT_TRUE(verifier_.WaitForReadyFile(ready, kBound, std::chrono::milliseconds(20), &url,
                                           &err))
        << err;
    url_ = url.substr(0, url.find('\n'));
    jwks_file_ = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/verifier-jwks.json");
    ASSERT_FALSE(jwks_file_.empty());
    if (import_refvals) {
      Proc p = itest::ImportFixtureRefvals(url_, admin_token_file_);
      ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
    }
  }

  // Sends SIGHUP and waits for the reload's outcome in the log: true when
  // it was applied, false when it was refused.
  bool Reload() {
    const std::string before = ReadAll(log_);
    const size_t ok = Count(before, "policy reloaded: ");
    const size_t refused = Count(before, "reload refused");
    EXPECT_EQ(kill(verifier_.pid(), SIGHUP), 0);
    bool applied = false;
    EXPECT_TRUE(PollUntil([&] {
      std::string log = ReadAll(log_);
      applied = Count(log, "policy reloaded: ") > ok;
      return applied || Count(log, "reload refused") > refused;
    })) << ReadAll(log_);
    return applied;
  }

  Proc Enroll(const std::string& node) {
    return Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", url_,
                 "--node-id", node, "--key", dir_ + "/" + node + ".key",
                 "--bootstrap-token-file", bootstrap_file_});
  }
  Proc Attest(const std::string& node) {
    return Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", url_,
                 "--node-id", node, "--key", dir_ + "/" + node + ".key", "--device-root",
                 Fixture(node)});
  }
  Proc Admit(const std::string& node) {
    return Exec({kBin + "/dpuaudit", "admit", "--verifier", url_, "--node", node,
                 "--jwks", jwks_file_, "--token-file", reader_token_file_});
  }
  // curl's exit code and the HTTP status of GET `path` with `token`.
  Proc Curl(const std::string& path, const std::string& token,
            std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {"/usr/bin/curl", "-sS", "-o", "/dev/null", "-w",
                                     "%{http_code}", "-H", "Authorization: Bearer " + token};
    argv.insert(argv.end(), extra.begin(), extra.end());
    argv.push_back(url_ + path);
    return Exec(argv);
  }
  // Waits for the verifier to exit; its exit code (-1 if it did not).
  int WaitExit() {
    if (!PollUntil([&] { return !verifier_.Reap(); })) return -1;
    return verifier_.exit_code();
  }

  std::string dir_, bootstrap_file_, policy_file_, admin_token_file_, reader_token_file_,
      jwks_file_;
  std::string url_, log_;
  testing::ChildProcess verifier_;  // the verifier (its pid is signalled)
};

// A request for a challenge for an unknown node: answered the same every
// time (404), whatever the timing.
const std::string kBody = R"({"node_id":"no-such-node","proof":"x"})";
std::string RequestHead(bool expect_continue) {
  return "POST /v1/challenges HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/json\r\nContent-Length: " +
         std::to_string(kBody.size()) + "\r\n" +
         (expect_continue ? "Expect: 100-continue\r\n" : "") + "Connection: close\r\n\r\n";
}

TEST_F(LifecycleTest, SigtermFinishesRequestInFlightRefusesNewConnectionsExitsZero) {
  StartVerifier({}, /*import_refvals=*/false);
  const uint16_t port = PortOf(url_);
  // The normal answer, on a connection of its own.
  int ref = Connect(port);
  ASSERT_GE(ref, 0);
  ASSERT_TRUE(SendAll(ref, RequestHead(false) + kBody));
  const std::string normal = ReadUntil(ref, CompleteResponse);
  close(ref);
  ASSERT_THAT(normal, HasSubstr("HTTP/1.1 404"));

  // The slow client: head sent, the server has begun the request (its
  // "100 Continue" says so), the body not sent yet.
  int slow = Connect(port);
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(SendAll(slow, RequestHead(true)));
  std::string cont = ReadUntil(slow, [](const std::string& t) {
    return t.find("\r\n\r\n") != std::string::npos;
  });
  ASSERT_THAT(cont, HasSubstr("100 Continue"));

  ASSERT_EQ(kill(verifier_.pid(), SIGTERM), 0);
  // New connections are closed at once, unanswered, while the request is
  // still in flight.
  ASSERT_TRUE(PollUntil([&] {
    int fd = Connect(port);
    if (fd < 0) return true;
    (void)SendAll(fd, RequestHead(false) + kBody);  // may fail: already closed
    const std::string reply = ReadUntil(fd, CompleteResponse);
    close(fd);
    return reply.empty();
  }));
  EXPECT_TRUE(verifier_.Alive()) << "exited before the request in flight was answered";

  // The request in flight completes with its normal answer.
  ASSERT_TRUE(SendAll(slow, kBody));
  std::string answer = ReadUntil(slow, CompleteResponse);
  close(slow);
  EXPECT_EQ(WithoutDate(answer), WithoutDate(normal));
  EXPECT_EQ(WaitExit(), 0) << ReadAll(log_);
  std::string log = ReadAll(log_);
  EXPECT_THAT(log, HasSubstr("stopping (draining requests in flight, at most 10 s)"));
  EXPECT_THAT(log, HasSubstr("shutdown: maintenance thread done"));
  EXPECT_THAT(log, Not(HasSubstr("shutdown deadline")));
  EXPECT_THAT(log, HasSubstr("stopped"));
}

TEST_F(LifecycleTest, SigtermClosesARequestHeldPastTheDeadlineAndStillExitsZero) {
  StartVerifier({"--shutdown-timeout", "1s"}, /*import_refvals=*/false);
  int slow = Connect(PortOf(url_));
  ASSERT_GE(slow, 0);
  ASSERT_TRUE(SendAll(slow, RequestHead(true)));
  ASSERT_THAT(ReadUntil(slow,
                        [](const std::string& t) {
                          return t.find("\r\n\r\n") != std::string::npos;
                        }),
              HasSubstr("100 Continue"));
  ASSERT_EQ(kill(verifier_.pid(), SIGTERM), 0);
  // The body never comes: the verifier closes the request after the deadline.
  EXPECT_EQ(WaitExit(), 0) << ReadAll(log_);
  close(slow);
  EXPECT_THAT(ReadAll(log_),
              HasSubstr("shutdown deadline of 1 s passed with 1 request(s) in flight"));
}

TEST_F(LifecycleTest, SighupWithBrokenPolicyKeepsTheOldPolicy) {
  StartVerifier();
  ASSERT_EQ(Enroll("bf3-zero-trust").exit_code, 0);
  ASSERT_THAT(Attest("bf3-zero-trust").out, HasSubstr("bf3-zero-trust: admit"));
  // Not JSON, then JSON naming a rule that does not exist.
  std::string unknown_rule = ReadAll(kSrc + "/policies/zero-trust.json");
  unknown_rule.replace(unknown_rule.find("os.kernel_lockdown"), 18, "os.no_such_rule");
  for (const std::string& broken :
       {std::string("{\"schema\": \"dpuaudit-policy/1\", "), unknown_rule}) {
    ASSERT_TRUE(WriteFileAtomic(policy_file_, AsBytes(broken), 0644).ok());
    EXPECT_FALSE(Reload());
    std::string log = ReadAll(log_);
    EXPECT_THAT(log, HasSubstr("reload refused, nothing changed"));
    EXPECT_THAT(log, HasSubstr(policy_file_));
    Proc a = Attest("bf3-zero-trust");
    EXPECT_EQ(a.exit_code, 0) << a.err;
    EXPECT_THAT(a.out, HasSubstr("bf3-zero-trust: admit"));
    EXPECT_EQ(Admit("bf3-zero-trust").exit_code, 0);
  }
  EXPECT_THAT(ReadAll(log_), HasSubstr("os.no_such_rule"));
}

TEST_F(LifecycleTest, SighupWithStricterPolicyWithdrawsAdmitsAndJudgesTheNextReport) {
  StartVerifier();
  ASSERT_EQ(Enroll("bf3-zero-trust").exit_code, 0);
  ASSERT_THAT(Attest("bf3-zero-trust").out, HasSubstr("bf3-zero-trust: admit"));
  ASSERT_EQ(Admit("bf3-zero-trust").exit_code, 0);
  // Lockdown "confidentiality" only: the recorded device runs "integrity".
  std::string strict = ReadAll(kSrc + "/policies/zero-trust.json");
  const std::string from = R"("expect": ["integrity", "confidentiality"])";
  ASSERT_NE(strict.find(from), std::string::npos);
  strict.replace(strict.find(from), from.size(), R"("expect": ["confidentiality"])");
  strict.replace(strict.find("\"zero-trust\""), 12, "\"zero-trust-strict\"");
  ASSERT_TRUE(WriteFileAtomic(policy_file_, AsBytes(strict), 0644).ok());
  ASSERT_TRUE(Reload());
  std::string log = ReadAll(log_);
  EXPECT_THAT(log, HasSubstr("policy reloaded: zero-trust-strict "));
  // The current admit was re-judged under the new policy: withdrawn.
  Proc gate = Admit("bf3-zero-trust");
  EXPECT_EQ(gate.exit_code, 1) << gate.out << gate.err;
  EXPECT_THAT(gate.out, HasSubstr("os.kernel_lockdown"));
  // And the next report follows it.
  Proc a = Attest("bf3-zero-trust");
  EXPECT_THAT(a.out, HasSubstr("bf3-zero-trust: deny"));
  EXPECT_THAT(a.out, HasSubstr("os.kernel_lockdown"));
}

TEST_F(LifecycleTest, SighupWithNewAdminTokenRetiresTheOldOne) {
  StartVerifier({}, /*import_refvals=*/false);
  const std::string old_token = "integration-admin-token-0001";
  const std::string new_token = "integration-admin-token-0002";
  EXPECT_EQ(Curl("/v1/refvals", old_token).out, "200");
  ASSERT_TRUE(WriteFileAtomic(admin_token_file_, AsBytes(new_token + "\n"), 0600).ok());
  ASSERT_TRUE(Reload());
  EXPECT_EQ(Curl("/v1/refvals", old_token).out, "401");
  EXPECT_EQ(Curl("/v1/refvals", new_token).out, "200");
  // A token file that breaks a rule (the admin token equal to the reader
  // token) is refused: the new token stays.
  ASSERT_TRUE(WriteFileAtomic(admin_token_file_, AsBytes(itest::kReaderToken + "\n"), 0600)
                  .ok());
  EXPECT_FALSE(Reload());
  EXPECT_THAT(ReadAll(log_), HasSubstr("must differ"));
  EXPECT_EQ(Curl("/v1/refvals", new_token).out, "200");
}

TEST_F(LifecycleTest, SighupSwapsTheTlsCertificateForNewConnections) {
  for (const char* n : {"certs1", "certs2"}) {
    Proc p = Exec({"/bin/bash", kSrc + "/certs/make-test-certs.sh", dir_ + "/" + n});
    ASSERT_EQ(p.exit_code, 0) << p.err;
  }
  const std::string cert = dir_ + "/tls.pem", key = dir_ + "/tls.key";
  fs::copy_file(dir_ + "/certs1/server.pem", cert);
  fs::copy_file(dir_ + "/certs1/server.key", key);
  StartVerifier({"--tls-cert", cert, "--tls-key", key}, /*import_refvals=*/false);
  const std::string ca1 = dir_ + "/certs1/ca.pem", ca2 = dir_ + "/certs2/ca.pem";
  EXPECT_EQ(Curl("/readyz", "x", {"--cacert", ca1}).out, "200");
  EXPECT_NE(Curl("/readyz", "x", {"--cacert", ca2}).exit_code, 0);

  // A key that is not the certificate's is refused: the old pair serves.
  fs::copy_file(dir_ + "/certs2/server.key", key, fs::copy_options::overwrite_existing);
  EXPECT_FALSE(Reload());
  EXPECT_THAT(ReadAll(log_), HasSubstr("does not match the certificate"));
  EXPECT_EQ(Curl("/readyz", "x", {"--cacert", ca1}).out, "200");

  fs::copy_file(dir_ + "/certs2/server.pem", cert, fs::copy_options::overwrite_existing);
  ASSERT_TRUE(Reload());
  EXPECT_THAT(ReadAll(log_), HasSubstr("TLS certificate reloaded: " + cert));
  EXPECT_EQ(Curl("/readyz", "x", {"--cacert", ca2}).out, "200");
  EXPECT_NE(Curl("/readyz", "x", {"--cacert", ca1}).exit_code, 0);
}

// A unix datagram socket standing in for systemd's notify socket.
class NotifySocket {
 public:
  explicit NotifySocket(const std::string& path) : path_(path) {
    fd_ = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    ok_ = fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~NotifySocket() {
    if (fd_ >= 0) close(fd_);
    unlink(path_.c_str());
  }
  bool ok() const { return ok_; }
  // The next datagram, "" if none within kBound.
  std::string Next() {
    pollfd p{fd_, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::chrono::milliseconds(kBound).count())) <= 0) {
      return "";
    }
    char buf[512];
    ssize_t n = recv(fd_, buf, sizeof buf, 0);
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool ok_ = false;
};

TEST_F(LifecycleTest, SdNotifyReadyReloadingStopping) {
  NotifySocket notify(dir_ + "/notify.sock");
  ASSERT_TRUE(notify.ok());
  ASSERT_EQ(setenv("NOTIFY_SOCKET", (dir_ + "/notify.sock").c_str(), 1), 0);
  StartVerifier({}, /*import_refvals=*/false);
  unsetenv("NOTIFY_SOCKET");
  EXPECT_EQ(notify.Next(), "READY=1");
  ASSERT_TRUE(Reload());
  EXPECT_EQ(notify.Next(), "RELOADING=1");
  EXPECT_EQ(notify.Next(), "READY=1");
  ASSERT_EQ(kill(verifier_.pid(), SIGTERM), 0);
  EXPECT_EQ(notify.Next(), "STOPPING=1");
  EXPECT_EQ(WaitExit(), 0);
}

// packaging/systemd/*.service pass `systemd-analyze verify` (with the
// ExecStart binaries pointed at this build, since verify insists that they
// exist). Fails on any warning naming our units.
TEST(SystemdUnitsTest, VerifyPasses) {
  const std::string analyze = "/usr/bin/systemd-analyze";
  if (!fs::exists(analyze)) GTEST_SKIP() << "systemd-analyze is not installed";
  char tmpl[] = "/tmp/dpuaudit-units-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  for (const char* unit : {"dpuaudit-verifier.service", "dpuaudit-agent.service"}) {
    std::string text = ReadAll(kSrc + "/packaging/systemd/" + unit);
    ASSERT_FALSE(text.empty()) << unit;
    for (const char* bin : {"dpuaudit-verifier", "dpuaudit-agent"}) {
      const std::string from = std::string("/usr/bin/") + bin;
      for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at)) {
        text.replace(at, from.size(), kBin + "/" + bin);
      }
    }
    const std::string path = dir + "/" + unit;
    ASSERT_TRUE(WriteFileAtomic(path, AsBytes(text), 0644).ok());
    Proc p = Exec({analyze, "verify", "--man=no", path});
    EXPECT_EQ(p.exit_code, 0) << unit << ":\n" << p.out << p.err;
    // Warnings about our unit (unknown directives, bad values) fail too;
    // ones about other units of this machine do not.
    EXPECT_THAT(p.out + p.err, Not(HasSubstr(unit))) << p.out << p.err;
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace dpuaudit

// `dpuaudit-agent run` as a daemon (issue 15 §1): it keeps attesting on its
// interval across a verifier restart, without being restarted itself, and
// stops cleanly (exit 0) on SIGTERM. Real binaries over loopback HTTP;
// every wait polls a condition with a deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "common/bytes.h"
#include "common/files.h"
#include "integration/harness.h"
#include "testing/child_process.h"

namespace dpuaudit {
namespace {

using dpuaudit::itest::Exec;
using dpuaudit::itest::Fixture;
using dpuaudit::itest::kBin;
using dpuaudit::itest::kSrc;
using dpuaudit::itest::Proc;
using dpuaudit::itest::ReadAll;
using dpuaudit::itest::VerifierProcess;
namespace fs = std::filesystem;

size_t Count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// Polls `cond` every 50 ms until it holds or 60 s passed.
bool WaitFor(const std::function<bool()>& cond) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    if (cond()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return cond();
}

class AgentRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-run-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_file_ = dir_ + "/token";
    ASSERT_TRUE(WriteFileAtomic(token_file_, AsBytes("integration-test-bootstrap-token-42\n"),
                                0600)
                    .ok());
  }
  void TearDown() override {
    agent_.Stop();
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  void StartVerifier(const std::string& listen = "127.0.0.1:0",
                     const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_};
    args.insert(args.end(), extra.begin(), extra.end());
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err, listen)) << err;
  }

  std::string dir_, token_file_, admin_token_file_;
  VerifierProcess verifier_;
  ::dpuaudit::testing::ChildProcess agent_;
};

TEST_F(AgentRunTest, SurvivesAVerifierRestartAndStopsCleanlyOnSigterm) {
  StartVerifier();
  Proc imported = Exec({kBin + "/dpuaudit", "refvals", "import", itest::kFixtureRefvals,
                        "--verifier", verifier_.url(), "--admin-token-file", admin_token_file_});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  const std::string key = dir_ + "/looper.key";
  Proc enrolled = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                        "--node-id", "looper", "--key", key, "--bootstrap-token-file",
                        token_file_});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.out << enrolled.err;

  const std::string url = verifier_.url();
  const std::string listen = url.substr(url.find("://") + 3);
  const std::string out = dir_ + "/agent.log";
  ::dpuaudit::testing::ChildProcessOptions options;
  options.output_file = out;
  std::string err;
  ASSERT_TRUE(agent_.Start({kBin + "/dpuaudit-agent", "run", "--verifier", url, "--node-id",
                            "looper", "--key", key, "--device-root", Fixture("bf3-zero-trust"),
                            "--interval", "1s"},
                           options, &err))
      << err;

  // At least two admits from the first verifier.
  ASSERT_TRUE(WaitFor([&] { return Count(ReadAll(out), "looper decision admit") >= 2; }))
      << ReadAll(out);
  EXPECT_THAT(ReadAll(out), ::testing::HasSubstr("looper: admit"));  // stdout, flushed

  // The verifier goes away: the agent logs failed attempts and keeps going.
  verifier_.Stop();
  ASSERT_TRUE(WaitFor([&] { return Count(ReadAll(out), "failed (") >= 1; })) << ReadAll(out);
  ASSERT_TRUE(agent_.Alive());
  const size_t before = Count(ReadAll(out), "looper decision admit");

  // Same port, same store: the running agent attests again.
  StartVerifier(listen);
  ASSERT_EQ(verifier_.url(), url);
  ASSERT_TRUE(WaitFor([&] { return Count(ReadAll(out), "looper decision admit") >= before + 1; }))
      << ReadAll(out);
  ASSERT_TRUE(agent_.Alive());

  // SIGTERM: finishes the current attempt and exits 0.
  agent_.Stop();
  EXPECT_EQ(agent_.exit_code(), 0) << ReadAll(out);
  EXPECT_THAT(ReadAll(out), ::testing::HasSubstr("stopped by signal"));
}

// Issue 17: `run` keeps one connection (and its TLS session) for all its
// rounds: the challenge and the report of a round go over one connection,
// and the next round reuses it while the verifier keeps it open (10 s idle
// timeout, 1 s interval here), or reconnects, resuming the session. Counted
// by the verifier itself (/metrics); nothing is timed: whether the
// verifier closed the idle connection between rounds only moves the counts
// between "kept" and "resumed", and either satisfies the assertions.
TEST_F(AgentRunTest, RunUsesOneConnectionForAllRoundsAndResumesTls) {
  Proc certs = Exec({"/bin/bash", kSrc + "/certs/make-test-certs.sh", dir_ + "/certs"});
  ASSERT_EQ(certs.exit_code, 0) << certs.err;
  const std::string ca = dir_ + "/certs/ca.pem";
  StartVerifier("127.0.0.1:0", {"--tls-cert", dir_ + "/certs/server.pem", "--tls-key",
                                dir_ + "/certs/server.key"});
  ASSERT_THAT(verifier_.url(), ::testing::HasSubstr("https://"));
  const std::string key = dir_ + "/tls-looper.key";
  Proc enrolled = Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(),
                        "--node-id", "tls-looper", "--key", key, "--bootstrap-token-file",
                        token_file_, "--cacert", ca});
  ASSERT_EQ(enrolled.exit_code, 0) << enrolled.out << enrolled.err;

  const itest::ConnectionCounters before = itest::ScrapeConnectionCounters(verifier_.url(), ca);
  ASSERT_TRUE(before.ok) << before.error;
  constexpr int kRounds = 3;
  Proc run = Exec({kBin + "/dpuaudit-agent", "run", "--verifier", verifier_.url(), "--node-id",
                   "tls-looper", "--key", key, "--device-root", Fixture("bf3-zero-trust"),
                   "--cacert", ca, "--interval", "1s", "--count", std::to_string(kRounds)});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // Every round was answered (a decision each; no refused reports).
  EXPECT_EQ(Count(run.out, "tls-looper: "), static_cast<size_t>(kRounds)) << run.out;
  const itest::ConnectionCounters after = itest::ScrapeConnectionCounters(verifier_.url(), ca);
  ASSERT_TRUE(after.ok) << after.error;
  const itest::ConnectionCounters agent = after.Minus(before);
  // One connection per round at most (before: two per round, one for the
  // challenge and one for the report) ...
  EXPECT_GE(agent.connections, 1);
  EXPECT_LE(agent.connections, kRounds);
  // ... one full handshake in all, every reconnect resumed.
  EXPECT_EQ(agent.full, 1);
  EXPECT_EQ(agent.resumed, agent.connections - 1);
}

}  // namespace
}  // namespace dpuaudit

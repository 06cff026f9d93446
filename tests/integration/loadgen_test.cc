// dpuaudit-loadgen against a real dpuaudit-verifier over HTTPS on loopback:
// ~20 simulated nodes for ~3 s, enrolled with the fleet bootstrap token and
// with per-node tokens issued through the admin API, with reconnects. The
// JSON output is checked against docs/schemas/loadgen.schema.json and the
// verifier's own view (every simulated node enrolled); with the fixture
// reference values imported every report of bf3-zero-trust is admitted.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/files.h"
#include "integration/harness.h"
#include "integration/json_schema.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
using itest::Exec;
using itest::Fixture;
using itest::kBin;
using itest::kSrc;
using itest::Proc;
namespace fs = std::filesystem;

class LoadgenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-loadgen-XXXXXX";
    dir_ = mkdtemp(tmpl);
    Proc certs = Exec({"/bin/bash", kSrc + "/certs/make-test-certs.sh", dir_ + "/certs"});
    ASSERT_EQ(certs.exit_code, 0) << certs.err;
    bootstrap_ = dir_ + "/bootstrap.token";
    ASSERT_TRUE(
        WriteFileAtomic(bootstrap_, AsBytes("loadgen-test-bootstrap-token-42\n"), 0600).ok());
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", bootstrap_,
                                     "--tls-cert", dir_ + "/certs/server.pem",
                                     "--tls-key", dir_ + "/certs/server.key"};
    for (auto& f : itest::AdminFlags(dir_, &admin_)) args.push_back(f);
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    // The fixture releases: the recorded device's firmware is active, so
    // its reports are admitted.
    Proc rv = Exec({kBin + "/dpuaudit", "refvals", "import", itest::kFixtureRefvals,
                    "--verifier", verifier_.url(), "--cacert", dir_ + "/certs/ca.pem",
                    "--admin-token-file", admin_});
    ASSERT_EQ(rv.exit_code, 0) << rv.err;
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }
  Proc Loadgen(std::vector<std::string> extra) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-loadgen", "--verifier", verifier_.url(),
                                     "--ca", dir_ + "/certs/ca.pem", "--device-root",
                                     Fixture("bf3-zero-trust"), "--json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }
  // Node ids the verifier lists with the given prefix (admin API).
  size_t NodesWithPrefix(const std::string& prefix) {
    Proc p = Exec({kBin + "/dpuaudit", "nodes", "list", "--verifier", verifier_.url(),
                   "--cacert", dir_ + "/certs/ca.pem", "--token-file", admin_, "--json"});
    size_t n = 0;
    for (size_t at = p.out.find("\"" + prefix); at != std::string::npos;
         at = p.out.find("\"" + prefix, at + 1)) {
      ++n;
    }
    return n;
  }

  std::string dir_, bootstrap_, admin_;
  itest::VerifierProcess verifier_;
};

TEST_F(LoadgenTest, TwentyNodesForThreeSecondsWithoutErrors) {
  Proc p = Loadgen({"--nodes", "20", "--interval", "1", "--duration", "3", "--connections",
                    "4", "--bootstrap-token-file", bootstrap_, "--reconnect-every", "5",
                    "--node-prefix", "lgt-"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  nlohmann::json j = itest::ParseJson(p.out);
  ASSERT_TRUE(j.is_object()) << p.out;
  if (itest::HaveJsonschema()) {
    EXPECT_EQ(itest::SchemaErrors(dir_, "loadgen", p.out), "");
  }
  EXPECT_EQ(j["setup"]["enrolled"], 20);
  EXPECT_EQ(j["errors"]["total"], 0) << j["errors"].dump();
  const int64_t ok = j["attestations"]["ok"].get<int64_t>();
  EXPECT_GT(ok, 0);
  // 20 nodes every second for 3 s: 60 due. Whether all started depends on
  // the machine's load (sanitizers, -j2), so it is checked for consistency,
  // not timed (tests never time things).
  EXPECT_EQ(j["attestations"]["due"], 60);
  const int64_t not_started = j["attestations"]["not_started"].get<int64_t>();
  EXPECT_GE(not_started, 0);
  EXPECT_LT(not_started, 60);
  EXPECT_EQ(j["target_reached"].get<bool>(), not_started == 0);
  EXPECT_TRUE(j["bottleneck"].is_string());
  EXPECT_EQ(j["attestations"]["admit"].get<int64_t>() + j["attestations"]["deny"].get<int64_t>(),
            ok);
  EXPECT_EQ(j["attestations"]["admit"].get<int64_t>(), ok);  // bf3-zero-trust, zero-trust
  EXPECT_EQ(j["latency"]["attestation"]["count"], ok);
  EXPECT_GT(j["latency"]["attestation"]["p50_ms"].get<double>(), 0);
  EXPECT_GE(j["latency"]["attestation"]["p99_ms"].get<double>(),
            j["latency"]["attestation"]["p50_ms"].get<double>());
  // Reconnects: 4 connections, each closed after every 5th attestation.
  const int64_t connects = j["connects"].get<int64_t>();
  EXPECT_GT(connects, 4);
  // ... and every reconnect resumed its TLS session (the handle keeps the
  // ticket), as the verifier counted: only the 4 first connections of the
  // attestation phase were full handshakes.
  const itest::ConnectionCounters tls =
      itest::ScrapeConnectionCounters(verifier_.url(), dir_ + "/certs/ca.pem");
  ASSERT_TRUE(tls.ok) << tls.error;
  EXPECT_GE(tls.resumed, static_cast<double>(connects - 4));
  // The verifier was found by its port and its CPU measured.
  EXPECT_TRUE(j["verifier"]["pid"].is_number_integer()) << j["verifier"].dump();
  EXPECT_GT(j["cpu"]["verifier_ms_per_attestation"].get<double>(), 0);
  EXPECT_GT(j["cpu"]["generator_ms_per_attestation"].get<double>(), 0);
  // The verifier's own view: every simulated node is there.
  EXPECT_EQ(NodesWithPrefix("lgt-"), 20u);
}

TEST_F(LoadgenTest, PerNodeTokensThroughTheAdminApi) {
  Proc p = Loadgen({"--nodes", "5", "--interval", "1", "--duration", "2", "--connections", "2",
                    "--admin-token-file", admin_, "--node-prefix", "lgadm-"});
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  nlohmann::json j = itest::ParseJson(p.out);
  EXPECT_EQ(j["setup"]["enrollment"], "per-node-token");
  EXPECT_EQ(j["setup"]["enrolled"], 5);
  EXPECT_EQ(j["errors"]["total"], 0);
  EXPECT_GT(j["attestations"]["ok"].get<int64_t>(), 0);
  EXPECT_EQ(NodesWithPrefix("lgadm-"), 5u);
}

TEST_F(LoadgenTest, UsageAndSetupErrorsExitTwo) {
  // No enrollment credential at all.
  Proc none = Loadgen({"--nodes", "2", "--interval", "1", "--duration", "1"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_THAT(none.err, HasSubstr("--bootstrap-token-file"));
  // A wrong bootstrap token: the verifier refuses the first enrollment.
  const std::string wrong = dir_ + "/wrong.token";
  ASSERT_TRUE(WriteFileAtomic(wrong, AsBytes("not-the-bootstrap-token-0000\n"), 0600).ok());
  Proc refused = Loadgen({"--nodes", "2", "--interval", "1", "--duration", "1",
                          "--bootstrap-token-file", wrong});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("enrolling"));
  Proc bad = Loadgen({"--nodes", "0", "--interval", "1", "--duration", "1"});
  EXPECT_EQ(bad.exit_code, 2);
}

}  // namespace
}  // namespace dpuaudit

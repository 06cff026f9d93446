// Posture states end to end: the real dpuaudit-verifier (policies/
// zero-trust.json) and dpuaudit-agent over loopback HTTP, one node per
// recorded device of tests/fixtures/devices/. Each failing state must be
// denied with the failing rule id and its observed value in the agent's
// output; bf3-zero-trust must be admitted. Also `probe --json` per fixture.
// A state whose probe is not in the catalogue yet skips with the reason.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/files.h"
#include "device/device_source.h"
#include "isolation/probes.h"
#include "integration/harness.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using StProc = dpuaudit::itest::Proc;
using StVerifier = dpuaudit::itest::VerifierProcess;
constexpr auto StExec = dpuaudit::itest::Exec;
constexpr auto StFixture = dpuaudit::itest::Fixture;
constexpr auto StReadAll = dpuaudit::itest::ReadAll;
const std::string& kStBin = dpuaudit::itest::kBin;
const std::string& kStSrc = dpuaudit::itest::kSrc;

struct State {
  std::string device;
  std::string rule;      // the failing rule ("" for the admitted state)
  std::string verdict;   // "fail" | "unknown"
  std::string observed;  // "" for unknown
  std::string privilege_verdict;  // host.privilege_level in probe --json
  std::string decision = "deny";  // "admit" when `rule` only warns
  bool probe_fails = true;  // `probe` exits 1 (a probe, not a refval, fails)
};

const std::vector<State>& States() {
  static const auto* s = new std::vector<State>{
      {"bf3-zero-trust", "", "", "", "pass", "admit", false},
      // No BlueField-2 release is approved in the fixture reference values:
      // fail closed on an otherwise clean BF2.
      {"bf2-mft416-old-format", "refval.nic_firmware", "fail", "unmatched", "pass", "deny",
       false},
      {"bf3-privileged-host", "host.privilege_level", "fail", "PRIVILEGED",
       "fail"},
      {"bf3-partially-restricted", "host.rshim_disabled", "fail", "FALSE",
       "pass"},
      {"bf3-nic-mode", "dpu.operation_mode", "fail", "nic", "pass"},
      {"bf2-separated-host", "dpu.operation_mode", "fail", "separated_host",
       "pass"},
      {"bf3-pending-mode-change", "dpu.pending_change", "fail", "pending",
       "pass"},
      {"bf3-dev-keys", "boot.production_keys", "fail", "development", "pass"},
      {"bf3-secure-boot-off", "boot.secure_boot", "fail", "disabled", "pass"},
      {"bf3-tool-missing", "host.privilege_level", "unknown", "", "unknown"},
      {"bf3-tool-error", "host.privilege_level", "unknown", "", "unknown"},
      {"bf3-debug-firmware", "nic.fw_security", "fail", "debug", "pass"},
      // Firmware and boot chain (issue 4), against tests/fixtures/refvals.
      {"bf3-fw-outdated", "refval.arm_firmware", "fail", "obsolete", "pass", "admit", false},
      {"bf3-fw-revoked", "refval.arm_firmware", "fail", "revoked", "pass", "deny", false},
      {"bf3-debug-atf", "fw.atf_build", "fail", "debug", "pass"},
      {"bf3-dev-nic-firmware", "nic.fw_security", "fail", "development", "pass"},
      {"bf3-fw-mixed", "fw.nic_version_consistent", "fail", "inconsistent", "pass"},
      {"bf3-boot-stream-corrupt", "boot.stream_integrity", "fail", "corrupt", "pass"},
  };
  return *s;
}

bool PolicyNames(const std::string& rule) {
  return StReadAll(kStSrc + "/policies/zero-trust.json")
             .find("\"" + rule + "\"") != std::string::npos;
}

class StatesTest : public ::testing::TestWithParam<State> {
 protected:
  static void SetUpTestSuite() {
    char tmpl[] = "/tmp/dpuaudit-states-XXXXXX";
    dir_ = new std::string(mkdtemp(tmpl));
    token_ = *dir_ + "/token";
    ASSERT_TRUE(WriteFileAtomic(token_, AsBytes(std::string("states-test-token-0042\n")),
                                0600)
                    .ok());
    verifier_ = new StVerifier();
    std::string admin_token;
    std::vector<std::string> flags = {"--policy", kStSrc + "/policies/zero-trust.json",
                                      "--bootstrap-token-file", token_};
    for (auto& f : dpuaudit::itest::AdminFlags(*dir_, &admin_token)) flags.push_back(f);
    if (!verifier_->Start(*dir_, flags, start_error_)) {
      delete verifier_;
      verifier_ = nullptr;
      return;
    }
    StProc imported = dpuaudit::itest::ImportFixtureRefvals(verifier_->url(), admin_token);
    if (imported.exit_code != 0) {
      *start_error_ = "refvals import failed: " + imported.out + imported.err;
      delete verifier_;
      verifier_ = nullptr;
    }
  }
  static void TearDownTestSuite() {
    delete verifier_;
    verifier_ = nullptr;
    if (dir_) fs::remove_all(*dir_);
    delete dir_;
    dir_ = nullptr;
  }

  static std::string* dir_;
  static std::string token_;
  static StVerifier* verifier_;
  static std::string* start_error_;
};
std::string* StatesTest::dir_ = nullptr;
std::string StatesTest::token_;
StVerifier* StatesTest::verifier_ = nullptr;
std::string* StatesTest::start_error_ = new std::string();

TEST_P(StatesTest, VerifierDecidesWithRuleAndObserved) {
  const State& st = GetParam();
  if (!st.rule.empty()) ASSERT_TRUE(PolicyNames(st.rule)) << st.rule;
  ASSERT_NE(verifier_, nullptr) << *start_error_;
  std::string node = st.device;
  std::string key = *dir_ + "/" + node + ".key";
  StProc e = StExec({kStBin + "/dpuaudit-agent", "enroll", "--verifier",
                     verifier_->url(), "--node-id", node, "--key", key,
                     "--bootstrap-token-file", token_});
  ASSERT_EQ(e.exit_code, 0) << e.out << e.err;
  StProc a = StExec({kStBin + "/dpuaudit-agent", "attest", "--verifier",
                     verifier_->url(), "--node-id", node, "--key", key,
                     "--device-root", StFixture(st.device)});
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_THAT(a.out, HasSubstr(node + ": " + st.decision)) << a.out;
  if (st.rule.empty()) return;
  // PrintOutcome: "  <rule> <verdict>: observed <value>, expected <expect>"
  EXPECT_THAT(a.out, HasSubstr("  " + st.rule + " " + st.verdict +
                               ": observed " + st.observed + ","))
      << a.out;
}

TEST_P(StatesTest, ProbeJsonHasPrivilegeVerdict) {
  const State& st = GetParam();
  StProc p = StExec({kStBin + "/dpuaudit-agent", "probe", "--device-root",
                     StFixture(st.device), "--json"});
  ASSERT_TRUE(p.exit_code == 0 || p.exit_code == 1) << p.exit_code << p.err;
  auto j = nlohmann::json::parse(p.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << p.out;
  ASSERT_TRUE(j.contains("findings") && j["findings"].is_array()) << p.out;
  int seen = 0;
  for (const auto& f : j["findings"]) {
    for (const char* k : {"id", "verdict", "observed", "expected", "source",
                          "reason"}) {
      ASSERT_TRUE(f.contains(k) && f[k].is_string()) << k << " in " << f;
    }
    if (f["id"] == "host.privilege_level") {
      ++seen;
      EXPECT_EQ(f["verdict"], st.privilege_verdict) << f;
    }
  }
  EXPECT_EQ(seen, 1);
  EXPECT_EQ(p.exit_code, st.probe_fails ? 1 : 0) << p.out;
}

// --policy: the decision is printed and drives the exit code.
TEST(StatesProbePolicyTest, PolicyDecisionAndExitCodes) {
  StProc ok = StExec({kStBin + "/dpuaudit-agent", "probe", "--device-root",
                      StFixture("bf3-zero-trust"), "--json", "--policy",
                      kStSrc + "/policies/zero-trust.json"});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  auto j = nlohmann::json::parse(ok.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << ok.out;
  EXPECT_EQ(j["policy"]["name"], "zero-trust");
  EXPECT_EQ(j["policy"]["decision"], "admit");
  EXPECT_TRUE(j["policy"]["results"].is_array());

  StProc deny = StExec({kStBin + "/dpuaudit-agent", "probe", "--device-root",
                        StFixture("bf3-privileged-host"), "--policy",
                        kStSrc + "/policies/zero-trust.json"});
  EXPECT_EQ(deny.exit_code, 1) << deny.out << deny.err;
  EXPECT_THAT(deny.out, HasSubstr("decision: deny"));
  EXPECT_THAT(deny.out, HasSubstr("host.privilege_level"));

  // The lab profile warns on a privileged host but admits it.
  StProc lab = StExec({kStBin + "/dpuaudit-agent", "probe", "--device-root",
                       StFixture("bf3-privileged-host"), "--policy",
                       kStSrc + "/policies/host-trusted-lab.json"});
  EXPECT_EQ(lab.exit_code, 0) << lab.out << lab.err;
  EXPECT_THAT(lab.out, HasSubstr("decision: admit"));

  std::string bad = "/tmp/dpuaudit-states-bad-policy.json";
  ASSERT_TRUE(WriteFileAtomic(bad, AsBytes(std::string(
      R"({"schema":"dpuaudit-policy/1","name":"x","decision_ttl_seconds":300,)"
      R"("rules":[{"id":"host.no_such_probe","expect":"x","action":"deny","min_tier":"self-reported"}]})")),
                              0600)
                  .ok());
  StProc err = StExec({kStBin + "/dpuaudit-agent", "probe", "--device-root",
                       StFixture("bf3-zero-trust"), "--policy", bad});
  fs::remove(bad);
  EXPECT_EQ(err.exit_code, 2);
  EXPECT_THAT(err.err, HasSubstr("\"host.no_such_probe\" is not a known rule"));
}

std::string StateName(const ::testing::TestParamInfo<State>& info) {
  std::string s = info.param.device;
  for (char& c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Fixtures, StatesTest, ::testing::ValuesIn(States()),
                         StateName);

}  // namespace
}  // namespace dpuaudit

// The BMC path against real binaries: dpuaudit-bmc-sim (a real HTTPS
// Redfish server on loopback) and `dpuaudit bmc show` / `dpuaudit spdm
// verify`. Every misbehaviour of the simulator must be refused or shown
// with a precise reason.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "integration/harness.h"
#include "testing/shared_redfish_fixtures.h"

namespace dpuaudit::itest {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr char kPassword[] = "bmc-test-password-7f3a";

// A dpuaudit-bmc-sim process; stopped (SIGTERM, then SIGKILL after a grace
// period) on destruction.
class BmcSimProcess {
 public:
  // Returns false (with the reason and the log in `error`) if it exits or
  // does not write its ready file within 10 s.
  bool Start(const std::string& dir, const std::vector<std::string>& extra,
             std::string* error) {
    ready_ = dir + "/sim.ready";
    fs::remove(ready_);
    log_ = dir + "/sim.log";
    std::vector<std::string> argv = {kBin + "/dpuaudit-bmc-sim", "--credentials",
                                     dir + "/sim-creds.json", "--ready-file", ready_,
                                     "--tls-cert-out", dir + "/tls.pem"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ::dpuaudit::testing::ChildProcessOptions options;
    options.output_file = log_;
    if (!child_.Start(argv, options, error)) return false;
    std::string text;
    if (!child_.WaitForReadyFile(ready_, std::chrono::seconds(10),
                                 std::chrono::milliseconds(25), &text, error)) {
      return false;
    }
    ready_json_ = json::parse(text);
    return true;
  }

  void Stop() { child_.Stop(); }

  std::string url() const { return ready_json_["url"]; }
  std::string spki() const { return ready_json_["tls_spki_sha256"]; }
  uint16_t port() const { return ready_json_["port"]; }

 private:
  ::dpuaudit::testing::ChildProcess child_;
  std::string ready_, log_;
  json ready_json_;
};

void WriteFile(const std::string& path, const std::string& text, mode_t mode) {
  {
    std::ofstream out(path, std::ios::trunc);
    out << text;
  }
  chmod(path.c_str(), mode);
}

class BmcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("dpuaudit-bmc-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    const std::string creds =
        json{{"username", "root"}, {"password", kPassword}}.dump();
    WriteFile(dir_ + "/sim-creds.json", creds, 0600);
    WriteFile(dir_ + "/creds.json", creds, 0600);
  }
  void TearDown() override {
    sim_.Stop();
    fs::remove_all(dir_);
  }

  // A simulator of the bf3-zero-trust node with SPDM and `faults`.
  void StartSim(const std::vector<std::string>& faults = {},
                const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--profile", kSrc + "/tests/fixtures/bmc/bf3-zero-trust.json",
                                     "--spdm", "--keys-dir", dir_ + "/keys", "--anchor-out",
                                     dir_ + "/anchor.pem"};
    for (const std::string& f : faults) {
      args.push_back("--fault");
      args.push_back(f);
    }
    args.insert(args.end(), extra.begin(), extra.end());
    std::string error;
    ASSERT_TRUE(sim_.Start(dir_, args, &error)) << error;
  }

  Proc Show(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit", "bmc", "show", "--url", sim_.url(),
                                     "--credentials", dir_ + "/creds.json"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }

  Proc ShowPinnedJson(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"--pin-sha256", sim_.spki(), "--anchors",
                                     dir_ + "/anchor.pem", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return Show(args);
  }

  std::string dir_;
  BmcSimProcess sim_;
};

TEST_F(BmcTest, HonestBmcShowsPostureAndBothRootsOfTrustVerify) {
  StartSim();
  Proc p = ShowPinnedJson();
  ASSERT_EQ(p.exit_code, 0) << p.err << p.out;
  const json j = json::parse(p.out);
  EXPECT_EQ(j["tls_mode"], "pinned-key");
  EXPECT_EQ(j["serial_number"], "MT2334X00001");
  EXPECT_EQ(j["mode"], "DpuMode");
  EXPECT_EQ(j["host_rshim"], "Disabled");
  EXPECT_EQ(j["bios"]["host_privilege_level"], "Restricted");
  EXPECT_EQ(j["firmware"]["DPU_NIC"], "32.43.2402");
  EXPECT_TRUE(j["errors"].empty()) << j["errors"].dump();
  for (const char* target : {"Bluefield_DPU_IRoT", "Bluefield_ERoT"}) {
    const json& v = j["spdm_verification"][target];
    EXPECT_EQ(v["state"], "verified") << v.dump();
    EXPECT_TRUE(v["chain_validated"]);
    EXPECT_EQ(v["certificates"].size(), 3u);
    EXPECT_EQ(v["certificates"][0]["dice"][0]["reading"], "fwid_list");
  }
  EXPECT_EQ(j["spdm_verification"]["Bluefield_DPU_IRoT"]["measurements"].size(), 11u);
  // Human output: the same, in 100 columns.
  Proc h = Show({"--pin-sha256", sim_.spki(), "--anchors", dir_ + "/anchor.pem"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_THAT(h.out, HasSubstr("Bluefield_DPU_IRoT  verified: 11 measurements"));
  std::istringstream lines(h.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_THAT(h.out + h.err, Not(HasSubstr(kPassword)));
}

struct SpdmFault {
  const char* fault;
  const char* message;
};

class BmcSpdmFaultTest : public BmcTest, public ::testing::WithParamInterface<SpdmFault> {};

TEST_P(BmcSpdmFaultTest, IsRefusedWithItsReason) {
  StartSim({GetParam().fault});
  Proc p = ShowPinnedJson();
  EXPECT_EQ(p.exit_code, 1) << p.err << p.out;
  const json j = json::parse(p.out);
  const json& v = j["spdm_verification"]["Bluefield_DPU_IRoT"];
  EXPECT_EQ(v["state"], "failed") << v.dump();
  EXPECT_THAT(v["error"].get<std::string>(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, BmcSpdmFaultTest,
    ::testing::Values(SpdmFault{"wrong-nonce", "is not ours"},
                      SpdmFault{"bad-signature", "signature does not verify"},
                      SpdmFault{"unknown-root", "which no trust anchor's key matches"},
                      SpdmFault{"expired-cert", "certificate has expired"}),
    [](const ::testing::TestParamInfo<SpdmFault>& info) {
      std::string n = info.param.fault;
      for (char& c : n) {
        if (c == '-') c = '_';
      }
      return n;
    });

TEST_F(BmcTest, AFailedTaskLeavesTheTargetUnknownWithTheTaskState) {
  StartSim({"task-fails"});
  Proc p = ShowPinnedJson();
  EXPECT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  const json& v = j["spdm_verification"]["Bluefield_DPU_IRoT"];
  EXPECT_EQ(v["state"], "unknown");
  EXPECT_THAT(v["error"].get<std::string>(), HasSubstr("ended Exception (Critical)"));
}

TEST_F(BmcTest, ChangedMeasurementAndLoweredSecurityVersionAreWhatTheBmcSigns) {
  StartSim();
  Proc before = ShowPinnedJson();
  ASSERT_EQ(before.exit_code, 0) << before.err;
  sim_.Stop();
  StartSim({"measurement-changed", "rollback"});  // same keys: same device
  Proc after = ShowPinnedJson();
  ASSERT_EQ(after.exit_code, 0) << after.err;
  const json before_json = json::parse(before.out);
  const json after_json = json::parse(after.out);
  const json& b = before_json["spdm_verification"]["Bluefield_DPU_IRoT"];
  const json& a = after_json["spdm_verification"]["Bluefield_DPU_IRoT"];
  EXPECT_EQ(a["leaf_spki_sha256"], b["leaf_spki_sha256"]);
  EXPECT_NE(a["measurements"][2]["value"], b["measurements"][2]["value"]);  // index 3
  EXPECT_EQ(b["measurements"][10]["kind"], "firmware_security_version");
  EXPECT_EQ(b["measurements"][10]["value"], "03000000");
  EXPECT_EQ(a["measurements"][10]["value"], "02000000");
}

TEST_F(BmcTest, PostureThatDivergesIsReportedAsTheBmcSaysIt) {
  StartSim({"nic-mode", "host-rshim-enabled", "host-privileged", "other-serial"});
  Proc p = ShowPinnedJson({"--no-spdm"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  EXPECT_EQ(j["mode"], "NicMode");
  EXPECT_EQ(j["host_rshim"], "Enabled");
  EXPECT_EQ(j["bios"]["host_privilege_level"], "Privileged");
  EXPECT_EQ(j["serial_number"], "MT0000000000");
  EXPECT_TRUE(j["spdm_targets"].empty());
}

TEST_F(BmcTest, TlsKeyMustBeThePinnedOneAndNamesAreCheckedWithACa) {
  StartSim({}, {"--tls-name", "bmc.other.example"});
  Proc wrong_pin = Show({"--pin-sha256", std::string(64, 'a'), "--no-spdm"});
  EXPECT_EQ(wrong_pin.exit_code, 2);
  EXPECT_THAT(wrong_pin.err, HasSubstr("the BMC's TLS key is not the pinned key"));
  // The certificate names bmc.other.example, the URL 127.0.0.1: refused.
  Proc mismatch = Show({"--ca", dir_ + "/tls.pem", "--no-spdm"});
  EXPECT_EQ(mismatch.exit_code, 2);
  EXPECT_THAT(mismatch.err, HasSubstr("TLS verification failed"));
  // Pinned by key, the name does not matter (the key is the identity).
  Proc pinned = Show({"--pin-key", dir_ + "/tls.pem", "--no-spdm"});
  EXPECT_EQ(pinned.exit_code, 0) << pinned.err;
}

TEST_F(BmcTest, AnExpiredSelfSignedBmcCertificateWorksOnlyWhenPinned) {
  StartSim({}, {"--tls-expired"});
  Proc ca = Show({"--ca", dir_ + "/tls.pem", "--no-spdm"});
  EXPECT_EQ(ca.exit_code, 2);
  EXPECT_THAT(ca.err, HasSubstr("TLS verification failed"));
  Proc pinned = Show({"--pin-sha256", sim_.spki(), "--no-spdm"});
  EXPECT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_THAT(pinned.out, HasSubstr("(TLS pinned-key)"));
}

TEST_F(BmcTest, CredentialsAreRefusedUnlessPrivateAndNeverPrinted) {
  StartSim();
  chmod((dir_ + "/creds.json").c_str(), 0644);
  Proc open_file = Show({"--pin-sha256", sim_.spki()});
  EXPECT_EQ(open_file.exit_code, 2);
  EXPECT_THAT(open_file.err, HasSubstr("(mode 0644); chmod 600 it"));
  WriteFile(dir_ + "/creds.json", json{{"username", "root"}, {"password", "wrong-one"}}.dump(),
            0600);
  Proc wrong = Show({"--pin-sha256", sim_.spki()});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("refused the session login (HTTP 401)"));
  EXPECT_THAT(wrong.out + wrong.err, Not(HasSubstr("wrong-one")));
  WriteFile(dir_ + "/creds.json", json{{"username", "root"}, {"password", kPassword}}.dump(),
            0600);
  Proc basic = Show({"--pin-sha256", sim_.spki(), "--basic-auth", "--no-spdm"});
  EXPECT_EQ(basic.exit_code, 0) << basic.err;
  EXPECT_THAT(basic.out + basic.err, Not(HasSubstr(kPassword)));
}

TEST_F(BmcTest, AHungBmcTimesOutInsteadOfBlocking) {
  StartSim({"hang"});
  const auto start = std::chrono::steady_clock::now();
  Proc p = Show({"--pin-sha256", sim_.spki(), "--timeout-ms", "300"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_THAT(p.err, HasSubstr("timed out"));
  // Three attempts of 300 ms plus backoff, far below the 60 s hang.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST_F(BmcTest, AnOversizedBodyIsCutAndNamed) {
  StartSim({"oversized"});
  Proc p = ShowPinnedJson({"--no-spdm"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  EXPECT_TRUE(j["serial_number"].is_null());
  EXPECT_THAT(j["errors"]["/redfish/v1/Systems/Bluefield"].get<std::string>(),
              HasSubstr("response larger than 1048576 bytes"));
  EXPECT_EQ(j["mode"], "DpuMode");  // the rest was still read
}

TEST_F(BmcTest, TheRealBlueField3CaptureServedOverHttpsReadsAsCaptured) {
  const std::string tree = ::dpuaudit::testing::SharedRedfishPath("nvidia_dpu");
  if (!fs::exists(tree + "/redfish/v1/index.json")) {
    GTEST_SKIP() << "shared fixture redfish/nvidia_dpu is absent under " << DPUAUDIT_SHARED_DIR;
  }
  std::string error;
  ASSERT_TRUE(sim_.Start(dir_, {"--tree", tree}, &error)) << error;
  Proc p = Show({"--pin-sha256", sim_.spki(), "--json"});
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  EXPECT_EQ(j["serial_number"], "MT2423600ANG");
  EXPECT_EQ(j["mode"], "DpuMode");
  EXPECT_EQ(j["secure_boot"]["enable"], false);
  EXPECT_EQ(j["bmc_firmware_version"], "BF-24.10-10");
  EXPECT_EQ(j["firmware"]["DPU_UEFI"], "4.9.0-46-g7e3911bd4d");
  // BF-24.10-10 offers no SPDM: both targets unknown, never a pass.
  ASSERT_EQ(j["spdm_targets"].size(), 2u);
  for (const json& t : j["spdm_targets"]) {
    EXPECT_FALSE(t["ok"]);
    EXPECT_THAT(t["error"].get<std::string>(), HasSubstr("no ComponentIntegrity"));
  }
}

TEST_F(BmcTest, SpdmVerifyWorksOfflineOnSavedEvidence) {
  StartSim();
  Proc p = ShowPinnedJson();
  ASSERT_EQ(p.exit_code, 0) << p.err;
  const json j = json::parse(p.out);
  const json t = j["spdm_targets"][0];
  WriteFile(dir_ + "/evidence.json",
            json{{"SignedMeasurements", t["signed_measurements"]},
                 {"SigningAlgorithm", t["signing_algorithm"]},
                 {"HashingAlgorithm", t["hashing_algorithm"]},
                 {"Version", t["version"]}}
                .dump(),
            0644);
  WriteFile(dir_ + "/chain.pem", t["certificate_chain"], 0644);
  const std::vector<std::string> base = {kBin + "/dpuaudit", "spdm", "verify", "--evidence",
                                         dir_ + "/evidence.json", "--chain", dir_ + "/chain.pem"};
  auto run = [&](const std::string& nonce, bool anchors) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), {"--nonce", nonce});
    if (anchors) argv.insert(argv.end(), {"--anchors", dir_ + "/anchor.pem"});
    return Exec(argv);
  };
  Proc ok = run(t["nonce"], true);
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("chain      validated to anchor"));
  Proc replay = run(std::string(64, '0'), true);
  EXPECT_EQ(replay.exit_code, 1);
  EXPECT_THAT(replay.out, HasSubstr("is not ours"));
  Proc leaf_only = run(t["nonce"], false);
  EXPECT_EQ(leaf_only.exit_code, 0);
  EXPECT_THAT(leaf_only.out, HasSubstr("NOT validated (no --anchors)"));
}

}  // namespace
}  // namespace dpuaudit::itest

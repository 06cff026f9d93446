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

#include <thread>

#include "apps/shared/http_client.h"
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
  // "-" reads the evidence from stdin.
  Proc piped = Exec({"/bin/sh", "-c",
                     "exec \"$0\" spdm verify --evidence - --chain \"$1\" --nonce \"$2\" "
                     "--anchors \"$3\" < \"$4\"",
                     kBin + "/dpuaudit", dir_ + "/chain.pem", t["nonce"].get<std::string>(),
                     dir_ + "/anchor.pem", dir_ + "/evidence.json"});
  EXPECT_EQ(piped.exit_code, 0) << piped.out << piped.err;
  EXPECT_THAT(piped.out, HasSubstr("chain      validated to anchor"));
}


// ---- The verifier's own BMC path (serve --bmc-config) ------------------------
// A real verifier pulls a real simulator over HTTPS; a real agent attests
// the recorded bf3-zero-trust device. Every EAR claim and admission below
// comes from those binaries.

constexpr char kAdminToken[] = "integration-admin-token-0001";

class BmcVerifierTest : public BmcTest {
 protected:
  void TearDown() override {
    verifier_.Stop();
    BmcTest::TearDown();
  }

  // (Re)starts the simulator on the port of its first start, so the
  // verifier's configuration stays right; its keys (TLS and DICE) are kept.
  void RestartSim(const std::vector<std::string>& faults) {
    sim_.Stop();
    std::vector<std::string> extra;
    if (port_ != 0) extra = {"--port", std::to_string(port_)};
    StartSim(faults, extra);
    port_ = sim_.port();
  }

  // The verifier with the BMC path for `node` (its BMC at `url`, or the
  // simulator's) under policies/zero-trust-bmc.json.
  void StartVerifier(const std::string& node, const std::string& url = "",
                     const std::string& pin = "", int timeout_ms = 3000,
                     int pull_deadline_ms = 60000) {
    const json config = {
        {"pull_deadline_ms", pull_deadline_ms},
        {"schema", "dpuaudit-bmc-config/1"},
        {"trust_anchors", {"anchor.pem"}},
        {"interval_seconds", 5},
        {"min_repull_seconds", 0},
        {"nodes",
         {{node,
           {{"url", url.empty() ? sim_.url() : url},
            {"pin_sha256", pin.empty() ? sim_.spki() : pin},
            {"auth", "basic"},
            {"credentials_file", "creds.json"},
            {"timeout_ms", timeout_ms}}}}}};
    WriteFile(dir_ + "/bmc-config.json", config.dump(2), 0644);
    WriteFile(dir_ + "/bootstrap.token", "bmc-itest-bootstrap-token-1234\n", 0600);
    std::string admin, reader;
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust-bmc.json",
                                     "--bootstrap-token-file", dir_ + "/bootstrap.token",
                                     "--bmc-config", dir_ + "/bmc-config.json"};
    for (auto& f : itest::AdminFlags(dir_, &admin)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader)) args.push_back(f);
    admin_token_file_ = admin;
    reader_token_file_ = reader;
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    jwks_ = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/jwks.json");
    Proc imported = itest::ImportFixtureRefvals(verifier_.url(), admin_token_file_);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  }

  std::unique_ptr<apps::HttpClient> Client() {
    auto c = apps::HttpClient::New(verifier_.url(), apps::HttpClientOptions{});
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  json BmcStatus(const std::string& node) {
    auto r = Client()->GetWithBearer("/v1/nodes/" + node + "/bmc", itest::kReaderToken);
    if (!r.ok() || r->status != 200) return json();
    return json::parse(r->body, nullptr, false);
  }

  // Waits (up to 15 s) for a pull of `node` newer than `after`.
  json WaitForPull(const std::string& node, int64_t after = 0) {
    for (int i = 0; i < 300; ++i) {
      json s = BmcStatus(node);
      if (s.is_object() && s["latest"].is_object() && s["latest"]["pulled_at"] > after) return s;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "no BMC pull of " << node << " after " << after;
    return json();
  }

  Proc Enroll(const std::string& node) {
    return Exec({kBin + "/dpuaudit-agent", "enroll", "--verifier", verifier_.url(), "--node-id",
                 node, "--key", dir_ + "/" + node + ".key", "--bootstrap-token-file",
                 dir_ + "/bootstrap.token"});
  }

  // Attests the recorded bf3-zero-trust device and returns the EAR's claims.
  json Attest(const std::string& node, int* exit_code = nullptr) {
    const std::string ear = dir_ + "/" + node + ".ear.jwt";
    Proc p = Exec({kBin + "/dpuaudit-agent", "attest", "--verifier", verifier_.url(),
                   "--node-id", node, "--key", dir_ + "/" + node + ".key", "--device-root",
                   itest::Fixture("bf3-zero-trust"), "--ear-out", ear});
    if (exit_code != nullptr) *exit_code = p.exit_code;
    EXPECT_EQ(p.exit_code, 0) << p.out << p.err;
    // The claims of the EAR the verifier signed (its signature is checked
    // by `dpuaudit admit` in the tests that gate on it).
    const std::string jwt = ReadAll(ear);
    const size_t a = jwt.find('.'), b = jwt.find('.', a + 1);
    auto payload = Base64UrlDecode(jwt.substr(a + 1, b - a - 1));
    EXPECT_TRUE(payload.ok()) << jwt;
    json j = payload.ok() ? json::parse(ToString(*payload), nullptr, false) : json();
    EXPECT_TRUE(j.is_object()) << p.out << p.err;
    return j;
  }

  Proc Admit(const std::string& node) {
    return Exec({kBin + "/dpuaudit", "admit", "--verifier", verifier_.url(), "--node", node,
                 "--jwks", jwks_, "--token-file", reader_token_file_});
  }

  // The EAR reason for `rule_id`, or null.
  static json Reason(const json& ear, const std::string& rule_id) {
    for (const json& r : ear["dpuaudit"]["reasons"]) {
      if (r["rule_id"] == rule_id) return r;
    }
    return json();
  }

  // Enrolls `node`, waits for its first pull, attests once.
  json EnrollAndAttest(const std::string& node) {
    Proc e = Enroll(node);
    EXPECT_EQ(e.exit_code, 0) << e.out << e.err;
    WaitForPull(node);
    return Attest(node);
  }

  apps::HttpResponse AdminPost(const std::string& path, const json& body) {
    auto r = Client()->PostWithBearer(path, "application/json", body.dump(), kAdminToken);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : apps::HttpResponse{};
  }

  VerifierProcess verifier_;
  std::string admin_token_file_, reader_token_file_, jwks_;
  uint16_t port_ = 0;
};

TEST_F(BmcVerifierTest, AgreeingPathsAreCorroboratedAndTheIrotIsHardwareRooted) {
  StartSim();
  port_ = sim_.port();
  StartVerifier("bf3-bmc");
  const json ear = EnrollAndAttest("bf3-bmc");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "admit") << ear.dump(1);
  const json host = Reason(ear, "host.privilege_level");
  EXPECT_EQ(host["tier"], "corroborated") << host.dump();
  EXPECT_EQ(host["path"], "agent+bmc");
  EXPECT_THAT(host["key"].get<std::string>(), HasSubstr("BMC TLS key " + sim_.spki().substr(0, 16)));
  const json irot = Reason(ear, "irot.measurements");
  EXPECT_EQ(irot["verdict"], "pass") << irot.dump();
  EXPECT_EQ(irot["tier"], "hardware-rooted");
  EXPECT_EQ(irot["path"], "irot");
  EXPECT_EQ(Reason(ear, "irot.identity")["tier"], "hardware-rooted");
  for (const char* sm : {"bmc", "irot", "erot"}) {
    EXPECT_EQ(ear["submods"][sm]["ear.status"], "affirming") << sm << ear["submods"].dump();
  }
  EXPECT_EQ(ear["submods"]["irot"]["ear.trustworthiness-vector"]["hardware"], 2);
  EXPECT_EQ(ear["submods"]["irot"]["ear.trustworthiness-vector"]["instance-identity"], 2);
  // The agent key alone never affirms instance identity.
  EXPECT_FALSE(ear["submods"]["arm-agent"]["ear.trustworthiness-vector"].contains("instance-identity"));
  EXPECT_EQ(Admit("bf3-bmc").exit_code, 0);
  // The binding and the baselines were first seen at enrollment.
  const json s = BmcStatus("bf3-bmc");
  EXPECT_EQ(s["stored"]["bmc-binding"]["set_by"], "first-seen") << s.dump();
  EXPECT_EQ(s["stored"]["irot-baseline"]["value"].size(), 11u);
  EXPECT_EQ(s["stored"]["irot-baseline"]["set_by"], "first-seen") << s.dump();
  // The latest pull is the enrollment's ("first seen") or, on a slow
  // machine, the next periodic one (interval 5 s: equal to that baseline).
  EXPECT_EQ(s["latest"]["targets"][0]["finding"]["verdict"], "pass") << s.dump();
  EXPECT_EQ(s["latest"]["targets"][0]["finding"]["observed"], "baseline") << s.dump();
  Proc status = Exec({kBin + "/dpuaudit", "bmc", "status", "--node", "bf3-bmc", "--verifier",
                      verifier_.url(), "--token-file", reader_token_file_});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_THAT(status.out, HasSubstr("  irot.identity  pass (bound)"));
  EXPECT_THAT(status.out, HasSubstr("stored bmc-binding: set by first-seen"));
  std::istringstream lines(status.out);
  for (std::string line; std::getline(lines, line);) EXPECT_LE(line.size(), 100u) << line;
  EXPECT_THAT(ReadAll(verifier_.log()), Not(HasSubstr(kPassword)));
}

TEST_F(BmcVerifierTest, AgentClaimingRestrictedWhileTheBmcSaysPrivilegedIsDeniedNamingBoth) {
  StartSim({"host-privileged"});
  StartVerifier("bf3-liar");
  const json ear = EnrollAndAttest("bf3-liar");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  const json r = Reason(ear, "bmc.host.privilege_level");
  EXPECT_EQ(r["verdict"], "fail") << r.dump();
  EXPECT_EQ(r["observed"], "agent RESTRICTED, BMC PRIVILEGED");
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("mlxprivhost"));
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("BMC " + sim_.url()));
  // The agent's own claim cannot reach the tier the policy asks for.
  EXPECT_EQ(Reason(ear, "host.privilege_level")["tier"], "self-reported");
  EXPECT_EQ(ear["submods"]["bmc"]["ear.status"], "contraindicated");
  Proc gate = Admit("bf3-liar");
  EXPECT_EQ(gate.exit_code, 1);
  EXPECT_THAT(gate.out, HasSubstr("bmc.host.privilege_level"));
}

TEST_F(BmcVerifierTest, AnUnreachableBmcIsUnknownAndTheRequiredPathDenies) {
  StartSim();
  const std::string closed = "https://127.0.0.1:1";
  StartVerifier("bf3-dark", closed);
  const json ear = EnrollAndAttest("bf3-dark");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  EXPECT_EQ(Reason(ear, "bmc.host.privilege_level")["verdict"], "unknown");
  EXPECT_THAT(Reason(ear, "bmc.host.privilege_level")["reason"].get<std::string>(),
              HasSubstr("unavailable"));
  EXPECT_EQ(Reason(ear, "irot.measurements")["verdict"], "unknown");
  const json req = Reason(ear, "require.bmc");
  EXPECT_EQ(req["verdict"], "fail") << ear["dpuaudit"]["reasons"].dump(1);
  EXPECT_EQ(Reason(ear, "require.irot")["verdict"], "fail");
}

struct ForgedSpdm {
  const char* fault;
  const char* message;
};
class BmcVerifierForgeryTest : public BmcVerifierTest,
                               public ::testing::WithParamInterface<ForgedSpdm> {};

TEST_P(BmcVerifierForgeryTest, ForgedOrReplayedSpdmEvidenceIsContraindicated) {
  StartSim({GetParam().fault});
  StartVerifier("bf3-forged");
  const json ear = EnrollAndAttest("bf3-forged");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  const json r = Reason(ear, "irot.measurements");
  EXPECT_EQ(r["observed"], "unverified") << r.dump();
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr(GetParam().message));
  EXPECT_EQ(ear["submods"]["irot"]["ear.status"], "contraindicated");
}

INSTANTIATE_TEST_SUITE_P(
    Faults, BmcVerifierForgeryTest,
    ::testing::Values(ForgedSpdm{"wrong-nonce", "is not ours"},
                      ForgedSpdm{"bad-signature", "signature does not verify"},
                      ForgedSpdm{"unknown-root", "which no trust anchor's key matches"},
                      ForgedSpdm{"expired-cert", "certificate has expired"}),
    [](const ::testing::TestParamInfo<ForgedSpdm>& info) {
      std::string n = info.param.fault;
      for (char& c : n) {
        if (c == '-') c = '_';
      }
      return n;
    });

TEST_F(BmcVerifierTest, AChangeWarnsUntilApprovedAndARollbackDenies) {
  StartSim();
  port_ = sim_.port();
  StartVerifier("bf3-fw");
  json ear = EnrollAndAttest("bf3-fw");
  ASSERT_EQ(ear["dpuaudit"]["decision"], "admit") << ear.dump(1);

  RestartSim({"measurement-changed"});
  json s = WaitForPull("bf3-fw", BmcStatus("bf3-fw")["latest"]["pulled_at"]);
  ear = Attest("bf3-fw");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "admit");  // a warning
  json r = Reason(ear, "irot.measurements");
  EXPECT_EQ(r["observed"], "changed") << r.dump();
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("an administrator must approve"));
  EXPECT_EQ(ear["submods"]["irot"]["ear.status"], "warning");

  // Approval needs the admin token, a name and a reason; it is recorded.
  EXPECT_EQ(AdminPost("/v1/nodes/bf3-fw/spdm/irot/approve", {{"by", "alice"}}).status, 400);
  Proc approved = Exec({kBin + "/dpuaudit", "bmc", "approve", "--node", "bf3-fw", "--target",
                        "irot", "--by", "alice", "--reason", "BFB 2.9.2 rolled out, CHG-1234",
                        "--verifier", verifier_.url(), "--admin-token-file", admin_token_file_});
  ASSERT_EQ(approved.exit_code, 0) << approved.out << approved.err;
  EXPECT_THAT(approved.out, HasSubstr("approved 11 irot measurements as the baseline of bf3-fw"));
  s = WaitForPull("bf3-fw", BmcStatus("bf3-fw")["latest"]["pulled_at"]);
  EXPECT_EQ(s["stored"]["irot-baseline"]["set_by"], "alice");
  ear = Attest("bf3-fw");
  EXPECT_EQ(Reason(ear, "irot.measurements")["observed"], "baseline");

  RestartSim({"rollback"});
  WaitForPull("bf3-fw", s["latest"]["pulled_at"]);
  ear = Attest("bf3-fw");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  r = Reason(ear, "irot.measurements");
  EXPECT_EQ(r["observed"], "rollback") << r.dump();
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("security version went down"));
}

TEST_F(BmcVerifierTest, AnotherDeviceIsDeniedUntilAnAdministratorRebinds) {
  StartSim();
  port_ = sim_.port();
  StartVerifier("bf3-rma");
  ASSERT_EQ(EnrollAndAttest("bf3-rma")["dpuaudit"]["decision"], "admit");

  RestartSim({"other-device"});
  json s = WaitForPull("bf3-rma", BmcStatus("bf3-rma")["latest"]["pulled_at"]);
  json ear = Attest("bf3-rma");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  const json id = Reason(ear, "irot.identity");
  EXPECT_EQ(id["observed"], "another device") << id.dump();
  EXPECT_THAT(id["reason"].get<std::string>(), HasSubstr("a different device answers"));
  // A BMC answering for another device corroborates nothing.
  EXPECT_EQ(Reason(ear, "host.privilege_level")["tier"], "self-reported");
  // The admission was withdrawn by the pull, before any report.
  EXPECT_EQ(Admit("bf3-rma").exit_code, 1);

  auto anonymous = Client()->PostWithBearer("/v1/nodes/bf3-rma/bmc/rebind", "application/json",
                                            R"({"by":"x","reason":"y"})", "");
  ASSERT_TRUE(anonymous.ok());
  EXPECT_EQ(anonymous->status, 401);
  auto rebound = AdminPost("/v1/nodes/bf3-rma/bmc/rebind",
                           {{"by", "bob"}, {"reason", "board swapped in RMA 77"}});
  ASSERT_EQ(rebound.status, 200) << rebound.body;
  WaitForPull("bf3-rma", s["latest"]["pulled_at"]);
  ear = Attest("bf3-rma");
  EXPECT_EQ(Reason(ear, "irot.identity")["observed"], "bound");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "admit") << ear["dpuaudit"]["reasons"].dump(1);
  auto node = Client()->GetWithBearer("/v1/nodes/bf3-rma", itest::kReaderToken);
  ASSERT_TRUE(node.ok());
  EXPECT_THAT(node->body, HasSubstr("board swapped in RMA 77"));
}

TEST_F(BmcVerifierTest, ReferenceValuesJudgeTheirIndexAndARevocationWithdrawsTheAdmission) {
  StartSim();
  port_ = sim_.port();
  StartVerifier("bf3-ref");
  ASSERT_EQ(EnrollAndAttest("bf3-ref")["dpuaudit"]["decision"], "admit");
  // A vendor publishes the digest the IRoT signs at its first firmware
  // index (a SHA-512 digest, as the simulator's IRoT measures).
  json s = BmcStatus("bf3-ref");
  std::string index, digest;
  for (const auto& [i, v] : s["latest"]["targets"][0]["measurements"].items()) {
    const std::string value = v;
    if (index.empty() && value.rfind("01:", 0) == 0 && value.size() == 3 + 128) {
      index = i;
      digest = value.substr(3);
    }
  }
  ASSERT_FALSE(index.empty()) << s.dump();
  const json manifest = {
      {"schema", "dpuaudit-refvals/1"},
      {"releases",
       {{{"release", "bf3-irot-fw-1"},
         {"model", "BlueField-3"},
         {"state", "active"},
         {"approval", {{"by", "alice"}, {"reason", "vendor reference manifest"}}},
         {"values", {{{"component", "spdm-irot:" + index}, {"sha512", digest}}}}}}}};
  WriteFile(dir_ + "/irot-refvals.json", manifest.dump(), 0644);
  Proc imported = Exec({kBin + "/dpuaudit", "refvals", "import", dir_ + "/irot-refvals.json",
                        "--verifier", verifier_.url(), "--admin-token-file", admin_token_file_});
  ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  s = WaitForPull("bf3-ref", s["latest"]["pulled_at"]);
  json ear = Attest("bf3-ref");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "admit");
  EXPECT_EQ(ear["submods"]["irot"]["ear.trustworthiness-vector"]["executables"], 2);
  // The index is judged by its release, no longer by the baseline.
  EXPECT_THAT(s["latest"]["targets"][0]["finding"]["reason"].get<std::string>(),
              HasSubstr("1 more are judged by reference values"));

  Proc revoked = Exec({kBin + "/dpuaudit", "refvals", "revoke", "bf3-irot-fw-1", "--by", "bob",
                       "--reason", "CVE-2026-9999 in the IRoT firmware", "--verifier",
                       verifier_.url(), "--admin-token-file", admin_token_file_});
  ASSERT_EQ(revoked.exit_code, 0) << revoked.out << revoked.err;
  // Withdrawn at once, before the node reports again.
  Proc gate = Admit("bf3-ref");
  EXPECT_EQ(gate.exit_code, 1) << gate.out;
  ear = Attest("bf3-ref");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  const json r = Reason(ear, "irot.reference_values");
  EXPECT_EQ(r["observed"], "revoked") << ear["dpuaudit"]["reasons"].dump(1);
  EXPECT_THAT(r["reason"].get<std::string>(), HasSubstr("CVE-2026-9999"));
  EXPECT_EQ(r["tier"], "hardware-rooted");
  EXPECT_EQ(ear["submods"]["irot"]["ear.status"], "contraindicated");
}

// Every posture misbehaviour of the BMC is a divergence the verifier denies,
// naming both values; every transport one (hung, oversized, another TLS
// key) leaves the claims unknown with the reason, and `require` denies.
struct BmcMisbehaviour {
  const char* name;
  const char* fault;  // "" for none
  bool wrong_pin;
  int timeout_ms;
  const char* rule_id;
  const char* verdict;
  const char* text;  // in the observed value (fail) or the reason (unknown)
};
class BmcVerifierMisbehaviourTest : public BmcVerifierTest,
                                    public ::testing::WithParamInterface<BmcMisbehaviour> {};

TEST_P(BmcVerifierMisbehaviourTest, IsDeniedWithItsReason) {
  const BmcMisbehaviour& m = GetParam();
  StartSim(m.fault[0] ? std::vector<std::string>{m.fault} : std::vector<std::string>{});
  StartVerifier("bf3-m", "", m.wrong_pin ? std::string(64, 'a') : "", m.timeout_ms);
  const json ear = EnrollAndAttest("bf3-m");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  const json r = Reason(ear, m.rule_id);
  EXPECT_EQ(r["verdict"], m.verdict) << ear["dpuaudit"]["reasons"].dump(1);
  const std::string where = std::string(m.verdict) == "fail" ? "observed" : "reason";
  EXPECT_THAT(r[where].get<std::string>(), HasSubstr(m.text)) << r.dump();
  if (std::string(m.verdict) == "fail") {
    EXPECT_EQ(ear["submods"]["bmc"]["ear.status"], "contraindicated");
  }
}

INSTANTIATE_TEST_SUITE_P(
    Bmc, BmcVerifierMisbehaviourTest,
    ::testing::Values(
        BmcMisbehaviour{"nic_mode", "nic-mode", false, 3000, "bmc.dpu.operation_mode", "fail",
                        "agent dpu, BMC nic"},
        BmcMisbehaviour{"host_rshim_enabled", "host-rshim-enabled", false, 3000,
                        "bmc.host.rshim_disabled", "fail", "agent TRUE, BMC FALSE"},
        BmcMisbehaviour{"other_serial", "other-serial", false, 3000, "bmc.serial", "fail",
                        "BMC MT0000000000"},
        BmcMisbehaviour{"secure_boot_off", "secure-boot-off", false, 3000, "bmc.boot.secure_boot",
                        "fail", "agent enabled, BMC disabled"},
        BmcMisbehaviour{"hung", "hang", false, 300, "bmc.host.privilege_level", "unknown",
                        "timed out"},
        BmcMisbehaviour{"oversized", "oversized", false, 3000, "bmc.serial", "unknown",
                        "response larger than 1048576 bytes"}),
    [](const ::testing::TestParamInfo<BmcMisbehaviour>& info) { return info.param.name; });

TEST_F(BmcVerifierTest, ASlowBmcIsCutOffAtThePullDeadline) {
  StartSim({"slow"});  // 1.5 s per request
  StartVerifier("bf3-slow", "", "", 3000, 1000);
  const json ear = EnrollAndAttest("bf3-slow");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  EXPECT_THAT(Reason(ear, "bmc.host.privilege_level")["reason"].get<std::string>(),
              HasSubstr("not requested: the pull's deadline of 1000 ms passed"));
  EXPECT_EQ(BmcStatus("bf3-slow")["latest"]["requests"], 1);  // the service root only
}

TEST_F(BmcVerifierTest, AnotherTlsKeyAtTheBmcAddressIsNeverTrusted) {
  StartSim();
  StartVerifier("bf3-mitm", "", std::string(64, 'a'));
  const json ear = EnrollAndAttest("bf3-mitm");
  EXPECT_EQ(ear["dpuaudit"]["decision"], "deny");
  EXPECT_THAT(Reason(ear, "bmc.host.privilege_level")["reason"].get<std::string>(),
              HasSubstr("the BMC's TLS key is not the pinned key"));
  const json s = BmcStatus("bf3-mitm");
  ASSERT_TRUE(s["latest"]["errors"].contains("/redfish/v1")) << s.dump();
  EXPECT_THAT(s["latest"]["errors"]["/redfish/v1"].get<std::string>(),
              HasSubstr("the BMC's TLS key is not the pinned key"));
  EXPECT_TRUE(s["stored"].empty()) << s.dump();  // nothing bound to an impostor
}

}  // namespace
}  // namespace dpuaudit::itest

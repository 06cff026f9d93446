// Interoperability with an independent JOSE implementation: the jose npm
// library (tests/report/interop/). jose verifies our ES256 report JWS and EAR
// JWT against the JWK we export, and we verify what jose signs. Skipped, with
// the reason, when node or the jose package cannot be had.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "report/claims.h"
#include "report/ear.h"
#include "report/jws.h"
#include "report/report_test_util.h"
#include "testing/jose_dir.h"

namespace dpuaudit::report {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TestKey;

constexpr int64_t kNow = 1732950000;

using ::dpuaudit::testing::jose::JoseDir;
using ::dpuaudit::testing::jose::ReadAll;
using ::dpuaudit::testing::jose::RunShell;
using ::dpuaudit::testing::jose::ShellQuote;
using ::dpuaudit::testing::jose::WriteAll;


ReportClaims SampleClaims() {
  ReportClaims c;
  c.node_id = "interop-node";
  c.nonce = Base64UrlEncode(Bytes(32, 0x42));
  c.issued_at = kNow;
  c.device.model = "BlueField-3";
  device::Evidence e;
  e.id = "bfver";
  e.argv = {"bfver"};
  e.raw = ToBytes("BlueField OS 4.9\n");
  e.sha256 = Sha256Hex(e.raw);
  c.evidence.push_back(e);
  c.findings.push_back(
      {"fw.version", Verdict::kPass, "4.9", "4.9", "bfver", "", "bfver"});
  return c;
}

AttestationResult SampleEar() {
  AttestationResult ar;
  ar.iat = kNow;
  ar.exp = kNow + 300;
  ar.nonce = Base64UrlEncode(Bytes(32, 0x42));
  ar.verifier_id = {"dpuaudit", "interop"};
  Submod sm;
  sm.status = ArStatus::kAffirming;
  sm.trust_vector.configuration = 2;
  sm.trust_vector.hardware = 2;
  ar.submods["arm-agent"] = sm;
  ar.dpuaudit.node_id = "interop-node";
  ar.dpuaudit.decision = Decision::kAdmit;
  ar.dpuaudit.report_sha256 = std::string(64, 'c');
  ar.dpuaudit.policy = {"default", std::string(64, 'd')};
  return ar;
}

class JoseInteropTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    state_ = new State();
    State& s = *state_;
    auto dir = JoseDir(&s.skip_reason);
    if (!dir) return;
    s.ours = std::make_unique<TestKey>(TestKey::New());
    s.claims = SampleClaims();
    s.ear = SampleEar();
    auto jws = SignReport(s.claims, *s.ours->signer, "interop-node");
    auto jwt = SignEar(s.ear, *s.ours->signer, "verifier-1");
    if (!jws.ok() || !jwt.ok()) {
      s.error = "signing failed";
      return;
    }
    s.report_jws = *jws;
    // Tampered: one bit of the signature flipped.
    Bytes sig = *Base64UrlDecode(jws->substr(jws->rfind('.') + 1));
    sig[5] ^= 0x80;
    std::string tampered =
        jws->substr(0, jws->rfind('.') + 1) + Base64UrlEncode(sig);
    json input = {
        {"jwk", PublicJwk(s.ours->public_key(), "interop-node")},
        {"report_jws", *jws},
        {"tampered_jws", tampered},
        {"ear_jwt", *jwt},
        {"now", kNow + 10},
        {"report_payload_to_sign", SerializeClaims(s.claims)},
        {"ear_payload_to_sign", SerializeEar(s.ear)},
    };
    char tmpl[] = "/tmp/dpuaudit-jose-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
      s.error = "mkdtemp failed";
      return;
    }
    fs::path tmp(tmpl);
    WriteAll(tmp / "input.json", input.dump());
    int rc = RunShell("node " + ShellQuote((*dir / "interop.mjs").string()) +
                      " " + ShellQuote((tmp / "input.json").string()) + " >" +
                      ShellQuote((tmp / "out.json").string()) + " 2>" +
                      ShellQuote((tmp / "err.txt").string()));
    std::string out = ReadAll(tmp / "out.json");
    std::string err = ReadAll(tmp / "err.txt");
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (rc != 0) {
      s.error = "node interop.mjs exited " + std::to_string(rc) + ": " + err;
      return;
    }
    s.result = json::parse(out, nullptr, /*allow_exceptions=*/false);
    if (s.result.is_discarded()) s.error = "node printed no JSON: " + out;
  }
  static void TearDownTestSuite() {
    delete state_;
    state_ = nullptr;
  }
  void SetUp() override {
    if (!state_->skip_reason.empty()) GTEST_SKIP() << state_->skip_reason;
    ASSERT_EQ(state_->error, "");
  }

  struct State {
    std::string skip_reason, error;
    std::unique_ptr<TestKey> ours;
    ReportClaims claims;
    AttestationResult ear;
    std::string report_jws;
    json result;
  };
  static State* state_;
  const json& result() const { return state_->result; }
};

JoseInteropTest::State* JoseInteropTest::state_ = nullptr;

TEST_F(JoseInteropTest, JoseVerifiesOurReportJwsWithOurJwk) {
  EXPECT_EQ(result()["report_payload"], SerializeClaims(state_->claims));
  EXPECT_EQ(result()["report_header"],
            json::parse(R"({"alg":"ES256","kid":"interop-node",
                            "typ":"dpuaudit-report+jws"})"));
  // RFC 7638 thumbprints agree.
  EXPECT_EQ(result()["jwk_thumbprint"],
            state_->ours->public_key().Thumbprint());
}

TEST_F(JoseInteropTest, JoseVerifiesOurEarJwt) {
  json claims = result()["ear_claims"];
  EXPECT_EQ(claims, json::parse(SerializeEar(state_->ear)));
  EXPECT_EQ(result()["ear_header"]["typ"], "JWT");
  EXPECT_EQ(result()["ear_header"]["kid"], "verifier-1");
}

TEST_F(JoseInteropTest, JoseRejectsTamperedJws) {
  EXPECT_EQ(result()["tampered_rejected"], true);
  EXPECT_EQ(result()["tampered_error"],
            "ERR_JWS_SIGNATURE_VERIFICATION_FAILED");
}

TEST_F(JoseInteropTest, WeVerifyJoseSignedReport) {
  auto key = ParsePublicJwk(result()["jose_jwk"]);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto verifier = Es256Verifier::New(*key);
  ASSERT_TRUE(verifier.ok());
  auto v =
      VerifyReport(result()["jose_report_jws"].get<std::string>(), **verifier);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(v->claims == state_->claims);
  EXPECT_EQ(v->kid, "jose-node");
  // And not with our key.
  EXPECT_EQ(VerifyReport(result()["jose_report_jws"].get<std::string>(),
                         *state_->ours->verifier)
                .status()
                .code(),
            StatusCode::kUnauthenticated);
}

TEST_F(JoseInteropTest, WeVerifyJoseSignedEar) {
  auto key = ParsePublicJwk(result()["jose_jwk"]);
  ASSERT_TRUE(key.ok()) << key.status().ToString();
  auto verifier = Es256Verifier::New(*key);
  ASSERT_TRUE(verifier.ok());
  FakeClock clock(kNow + 10);
  auto v =
      VerifyEar(result()["jose_ear_jwt"].get<std::string>(), **verifier, clock);
  ASSERT_TRUE(v.ok()) << v.status().ToString();
  EXPECT_TRUE(*v == state_->ear);
}

}  // namespace
}  // namespace dpuaudit::report

// End-to-end tests: the real dpuaudit-verifier, dpuaudit-agent and dpuaudit
// binaries talking over loopback HTTP and HTTPS, with real SQLite files and
// the recorded BlueField-3 fixtures. No part is mocked.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include "apps/common/agent_collect.h"
#include "apps/shared/http_client.h"
#include "common/crypto.h"
#include "common/files.h"
#include "device/device_source.h"
#include "report/challenge_proof.h"
#include "report/claims.h"
#include "report/jws.h"
#include "integration/harness.h"

namespace dpuaudit {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

using dpuaudit::itest::Exec;
using dpuaudit::itest::Fixture;
using dpuaudit::itest::kBin;
using dpuaudit::itest::kSrc;
using dpuaudit::itest::Proc;
using dpuaudit::itest::ReadAll;
using dpuaudit::itest::VerifierProcess;

void WriteText(const std::string& path, const std::string& text, mode_t mode = 0600) {
  ASSERT_TRUE(WriteFileAtomic(path, AsBytes(text), mode).ok());
}

class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/dpuaudit-e2e-XXXXXX";
    dir_ = mkdtemp(tmpl);
    token_file_ = dir_ + "/token";
    WriteText(token_file_, "integration-test-bootstrap-token-42\n");
  }
  void TearDown() override {
    verifier_.Stop();
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // With the admin API on and the fixture reference values imported, so
  // bf3-zero-trust (release bf-bundle-2.9.1-40, active) can be admitted.
  void StartVerifier(std::vector<std::string> extra = {}, bool import_refvals = true) {
    std::vector<std::string> args = {"--policy", kSrc + "/policies/zero-trust.json",
                                     "--bootstrap-token-file", token_file_};
    for (auto& f : itest::AdminFlags(dir_, &admin_token_file_)) args.push_back(f);
    for (auto& f : itest::ReaderFlags(dir_, &reader_token_file_)) args.push_back(f);
    args.insert(args.end(), extra.begin(), extra.end());
    std::string err;
    ASSERT_TRUE(verifier_.Start(dir_, args, &err)) << err;
    // Pinned out of band, as an operator does: never fetched from the server.
    jwks_file_ = itest::ExportJwks(dir_ + "/verifier.key", dir_ + "/verifier-jwks.json");
    ASSERT_FALSE(jwks_file_.empty());
    if (!import_refvals) return;
    std::vector<std::string> import = {kBin + "/dpuaudit", "refvals", "import",
                                       itest::kFixtureRefvals, "--verifier", verifier_.url(),
                                       "--admin-token-file", admin_token_file_};
    if (verifier_.url().rfind("https", 0) == 0) {
      import.push_back("--cacert");
      import.push_back(dir_ + "/certs/ca.pem");
    }
    Proc imported = Exec(import);
    ASSERT_EQ(imported.exit_code, 0) << imported.out << imported.err;
  }

  std::string KeyOf(const std::string& node) { return dir_ + "/" + node + ".key"; }
  std::string admin_token_file_, reader_token_file_, jwks_file_;

  Proc Enroll(const std::string& node, bool with_token = true, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-agent", "enroll", "--verifier",
                                     verifier_.url(), "--node-id", node, "--key", KeyOf(node)};
    if (with_token) {
      argv.push_back("--bootstrap-token-file");
      argv.push_back(token_file_);
    }
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }

  Proc Attest(const std::string& node, const std::string& device,
             std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit-agent", "attest", "--verifier",
                                     verifier_.url(), "--node-id", node, "--key", KeyOf(node),
                                     "--device-root", Fixture(device),
                                     "--report-out", dir_ + "/" + node + ".report.jws",
                                     "--ear-out", dir_ + "/" + node + ".ear.jwt"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }

  Proc Admit(const std::string& node, std::vector<std::string> extra = {}) {
    std::vector<std::string> argv = {kBin + "/dpuaudit", "admit", "--verifier",
                                     verifier_.url(), "--node", node, "--jwks", jwks_file_,
                                     "--token-file", reader_token_file_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Exec(argv);
  }

  std::unique_ptr<apps::HttpClient> Client(const std::string& ca = "") {
    apps::HttpClientOptions o;
    o.ca_file = ca;
    auto c = apps::HttpClient::New(verifier_.url(), o);
    EXPECT_TRUE(c.ok());
    return std::move(*c);
  }

  // A fresh, correctly signed report from `node` bound to `nonce`.
  std::string SignedReport(const std::string& node, const std::string& device,
                           const std::string& nonce) {
    auto key = EcPrivateKey::LoadFile(KeyOf(node));
    EXPECT_TRUE(key.ok()) << key.status().ToString();
    auto signer = Es256Signer::New(*key);
    auto source = device::NewRecordedDeviceSource(Fixture(device));
    apps::Collection c = apps::CollectFromDevice(**source);
    auto claims = apps::BuildClaims(c, node, nonce, std::time(nullptr));
    auto jws = report::SignReport(claims, **signer, node);
    EXPECT_TRUE(jws.ok());
    return *jws;
  }

  std::string Challenge(const std::string& node) {
    auto key = EcPrivateKey::LoadFile(KeyOf(node));
    EXPECT_TRUE(key.ok()) << key.status().ToString();
    auto signer = Es256Signer::New(*key);
    auto body = report::ChallengeRequestBody(node, std::time(nullptr), **signer);
    EXPECT_TRUE(body.ok());
    auto r = Client()->Post("/v1/challenges", "application/json", *body);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(r->status, 201) << r->body;
    return nlohmann::json::parse(r->body)["nonce"];
  }

  std::string dir_, token_file_;
  VerifierProcess verifier_;
};

nlohmann::json Body(const apps::HttpResponse& r) {
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  return j.is_discarded() ? nlohmann::json() : j;
}

TEST_F(E2eTest, ZeroTrustAdmittedPrivilegedHostDeniedOverHttp) {
  StartVerifier();
  Proc e1 = Enroll("bf3-zero-trust");
  ASSERT_EQ(e1.exit_code, 0) << e1.err;
  EXPECT_THAT(e1.out, HasSubstr("enrolled bf3-zero-trust: approved"));
  ASSERT_EQ(Enroll("bf3-privileged-host").exit_code, 0);

  Proc a1 = Attest("bf3-zero-trust", "bf3-zero-trust");
  ASSERT_EQ(a1.exit_code, 0) << a1.err;
  EXPECT_THAT(a1.out, HasSubstr("bf3-zero-trust: admit"));
  Proc a2 = Attest("bf3-privileged-host", "bf3-privileged-host");
  ASSERT_EQ(a2.exit_code, 0) << a2.err;
  EXPECT_THAT(a2.out, HasSubstr("bf3-privileged-host: deny"));
  EXPECT_THAT(a2.out, HasSubstr("host.privilege_level fail: observed PRIVILEGED, expected RESTRICTED"));

  // The provisioning gate: 0 admit, 1 deny, 2 error.
  Proc g1 = Admit("bf3-zero-trust");
  EXPECT_EQ(g1.exit_code, 0) << g1.out << g1.err;
  EXPECT_THAT(g1.out, HasSubstr("admit (EAR verified"));
  Proc g2 = Admit("bf3-privileged-host");
  EXPECT_EQ(g2.exit_code, 1) << g2.out << g2.err;
  EXPECT_THAT(g2.out, HasSubstr("host.privilege_level: observed PRIVILEGED, expected RESTRICTED"));
  Proc g3 = Admit("no-such-node");
  EXPECT_EQ(g3.exit_code, 2);
  EXPECT_THAT(g3.err, HasSubstr("HTTP 404"));

  // Summary and inspection from the files the agent wrote.
  Proc sum = Exec({kBin + "/dpuaudit", "result", "summary", "--jwks", jwks_file_,
                  dir_ + "/bf3-zero-trust.ear.jwt", dir_ + "/bf3-privileged-host.ear.jwt"});
  ASSERT_EQ(sum.exit_code, 0) << sum.err;
  EXPECT_THAT(sum.out, HasSubstr("bf3-zero-trust       admit     -"));
  EXPECT_THAT(sum.out, HasSubstr("bf3-privileged-host  deny      host.privilege_level: observed "
                                 "PRIVILEGED, expected RESTRICTED"));
  Proc show = Exec({kBin + "/dpuaudit", "report", "show", "--verifier", verifier_.url(),
                   "--token-file", reader_token_file_, dir_ + "/bf3-privileged-host.report.jws"});
  ASSERT_EQ(show.exit_code, 0) << show.err;
  EXPECT_THAT(show.out, HasSubstr("signature:  valid (ES256"));
  EXPECT_THAT(show.out, HasSubstr("host.privilege_level        fail   fail        PRIVILEGED"));
  // In 100 columns (code points), the findings failing first, then
  // unknown, then passing, by the worse of the agent's and the re-derived
  // verdict; the failing ones' reasons follow the table.
  {
    auto rank = [](const std::string& v) {
      return v.rfind("fail", 0) == 0 ? 0 : v.rfind("unknown", 0) == 0 ? 1 : 2;
    };
    std::istringstream lines(show.out);
    bool table = false;
    int last = 0, rows = 0;
    for (std::string line; std::getline(lines, line);) {
      size_t width = 0;
      for (unsigned char c : line) width += (c & 0xC0) != 0x80;
      EXPECT_LE(width, 100u) << line;
      if (line.rfind("PROBE ", 0) == 0) {
        table = true;
        continue;
      }
      if (!table) continue;
      if (line.empty() || line[0] == '*') break;
      std::istringstream cells(line);
      std::string id, agent, again;
      cells >> id >> agent >> again;
      const int r = std::min(rank(agent), rank(again));
      EXPECT_LE(last, r) << line;
      last = r;
      ++rows;
    }
    EXPECT_GT(rows, 10);
    EXPECT_EQ(last, 2);  // the passing ones come last
    // Issue 16 §5: the reasons come grouped by verdict after the table.
    EXPECT_THAT(show.out, HasSubstr("\nfindings by verdict (observed vs expected, trust tier"));
    EXPECT_THAT(show.out, HasSubstr("\n      level is PRIVILEGED"));
  }

  // GET /v1/nodes/{id} carries the latest decision and reasons.
  auto node = Client()->GetWithBearer("/v1/nodes/bf3-privileged-host", itest::kReaderToken);
  ASSERT_TRUE(node.ok());
  EXPECT_EQ(node->status, 200);
  EXPECT_EQ(Body(*node)["latest"]["decision"], "deny");
  EXPECT_EQ(Body(*node)["state"], "approved");
  auto health = Client()->Get("/healthz");
  EXPECT_EQ(health->status, 200);
}

TEST_F(E2eTest, TamperedReportFileFailsInspection) {
  StartVerifier();
  ASSERT_EQ(Enroll("n1").exit_code, 0);
  ASSERT_EQ(Attest("n1", "bf3-zero-trust").exit_code, 0);
  std::string jws = ReadAll(dir_ + "/n1.report.jws");
  size_t dot = jws.find('.');
  // Flip one payload character.
  jws[dot + 10] = jws[dot + 10] == 'A' ? 'B' : 'A';
  WriteText(dir_ + "/tampered.jws", jws, 0644);
  Proc show = Exec({kBin + "/dpuaudit", "report", "show", "--verifier", verifier_.url(),
                   "--token-file", reader_token_file_, dir_ + "/tampered.jws"});
  EXPECT_EQ(show.exit_code, 2);
  EXPECT_THAT(show.out, HasSubstr("signature:  INVALID"));
  EXPECT_THAT(show.out, ::testing::Not(HasSubstr("findings")));
}

TEST_F(E2eTest, BadInputGetsPrecise4xxAndStateStaysIntact) {
  StartVerifier({"--max-body", "262144"});
  ASSERT_EQ(Enroll("good").exit_code, 0);
  ASSERT_EQ(Enroll("other").exit_code, 0);
  ASSERT_EQ(Attest("good", "bf3-zero-trust").exit_code, 0);
  std::string used_report = ReadAll(dir_ + "/good.report.jws");
  auto c = Client();

  struct Case {
    std::string name, path, content_type, body;
    long status;
    std::string code, message;
  };
  std::string alg_none = Base64UrlEncode(AsBytes(R"({"alg":"none","kid":"good"})")) + "." +
                         Base64UrlEncode(AsBytes("{}")) + ".";
  std::string alg_none_sig = alg_none + Base64UrlEncode(Bytes(64, 1));
  std::string alg_hs256 = Base64UrlEncode(AsBytes(R"({"alg":"HS256","kid":"good"})")) + "." +
                          Base64UrlEncode(AsBytes("{}")) + "." + Base64UrlEncode(Bytes(32, 1));
  std::string fresh = SignedReport("good", "bf3-zero-trust", Challenge("good"));
  std::string short_sig = fresh.substr(0, fresh.rfind('.') + 1);
  {
    auto sig = Base64UrlDecode(fresh.substr(fresh.rfind('.') + 1));
    ASSERT_TRUE(sig.ok());
    short_sig += Base64UrlEncode(ByteView(sig->data(), 63));  // one byte short
  }
  std::string bad_sig = fresh;
  bad_sig[bad_sig.size() - 5] = bad_sig[bad_sig.size() - 5] == 'A' ? 'B' : 'A';
  std::string unknown_kid =
      Base64UrlEncode(AsBytes(R"({"alg":"ES256","kid":"stranger"})")) + "." +
      Base64UrlEncode(AsBytes("{}")) + "." + Base64UrlEncode(Bytes(64, 1));
  std::string other_nonce = SignedReport("good", "bf3-zero-trust", Challenge("other"));

  std::vector<Case> cases = {
      {"wrong content type", "/v1/reports", "application/json", fresh, 415,
       "unsupported_media_type", "application/jose"},
      {"oversized body", "/v1/reports", "application/jose", std::string(300000, 'a'), 413,
       "payload_too_large", "not parsed"},
      {"malformed JWS", "/v1/reports", "application/jose", "abc", 400, "invalid_argument", ""},
      {"truncated JWS", "/v1/reports", "application/jose", fresh.substr(0, fresh.size() / 2), 400,
       "invalid_argument", "3 segments"},
      {"truncated signature", "/v1/reports", "application/jose", short_sig, 401,
       "unauthenticated", "64 bytes"},
      {"alg none, empty signature", "/v1/reports", "application/jose", alg_none, 400,
       "invalid_argument", "signature segment is empty"},
      {"alg none", "/v1/reports", "application/jose", alg_none_sig, 401, "unauthenticated",
       "\"none\" is not the pinned \"ES256\""},
      {"alg HS256", "/v1/reports", "application/jose", alg_hs256, 401, "unauthenticated",
       "\"HS256\" is not the pinned \"ES256\""},
      {"bad signature", "/v1/reports", "application/jose", bad_sig, 401, "unauthenticated",
       "does not verify"},
      {"unknown node", "/v1/reports", "application/jose", unknown_kid, 404, "not_found",
       "not enrolled"},
      {"replayed report", "/v1/reports", "application/jose", used_report, 409,
       "failed_precondition", "nonce already used."},
      {"nonce of another node", "/v1/reports", "application/jose", other_nonce, 403,
       "permission_denied", "nonce was issued to another node."},
      {"enroll: bad JSON", "/v1/nodes", "application/json", "{", 400, "invalid_argument",
       "not valid JSON"},
      {"challenge: unknown node", "/v1/challenges", "application/json",
       R"({"node_id":"ghost"})", 404, "not_found", "ghost"},
      {"challenge: extra member", "/v1/challenges", "application/json",
       R"({"node_id":"good","x":1})", 400, "invalid_argument", "\"x\" is not allowed"},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.name);
    auto r = c->Post(k.path, k.content_type, k.body);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->status, k.status) << r->body;
    nlohmann::json j = Body(*r);
    ASSERT_TRUE(j.contains("error")) << r->body;
    EXPECT_EQ(j["error"]["code"], k.code);
    EXPECT_THAT(j["error"]["message"].get<std::string>(), HasSubstr(k.message));
    // Still serving, and the good node's admission is unchanged.
    EXPECT_TRUE(verifier_.Alive());
    EXPECT_EQ(Admit("good").exit_code, 0);
  }
  // A wrong bootstrap token creates nothing.
  auto key = EcPrivateKey::Generate();
  nlohmann::json enroll = {{"node_id", "intruder"},
                           {"public_key", report::PublicJwk(key->public_key(), "k")}};
  auto r = c->PostWithBearer("/v1/nodes", "application/json", enroll.dump(), "wrong-token");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(c->GetWithBearer("/v1/nodes/intruder", itest::kReaderToken)->status, 404);
  // The report that was merely replayed above still gets the nonce of
  // "other" consumed by nobody: "other" can still use it.
  std::string n = Challenge("other");
  EXPECT_EQ(c->Post("/v1/reports", "application/jose", SignedReport("other", "bf3-zero-trust", n))
                ->status,
            200);
}

TEST_F(E2eTest, EnrollmentWithoutTokenNeedsOperatorApproval) {
  StartVerifier();
  Proc e = Enroll("pending-node", /*with_token=*/false);
  ASSERT_EQ(e.exit_code, 0) << e.err;
  EXPECT_THAT(e.out, HasSubstr("pending"));
  EXPECT_THAT(e.out, HasSubstr("dpuaudit-verifier approve pending-node"));
  Proc a = Attest("pending-node", "bf3-zero-trust");
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_THAT(a.err, HasSubstr("pending operator approval"));
  EXPECT_EQ(Admit("pending-node").exit_code, 1);

  // The operator approves on the same database while the server runs,
  // naming the key the device printed (issue 12: approval pins a key).
  auto at = e.out.find("--thumbprint ");
  ASSERT_NE(at, std::string::npos) << e.out;
  std::string thumbprint = e.out.substr(at + 13, e.out.find(' ', at + 13) - at - 13);
  Proc ap = Exec({kBin + "/dpuaudit-verifier", "approve", "pending-node", "--thumbprint",
                  thumbprint, "--by", "e2e", "--db", dir_ + "/verifier.db"});
  ASSERT_EQ(ap.exit_code, 0) << ap.err;
  Proc a2 = Attest("pending-node", "bf3-zero-trust");
  ASSERT_EQ(a2.exit_code, 0) << a2.err;
  EXPECT_EQ(Admit("pending-node").exit_code, 0);
  Proc unknown = Exec({kBin + "/dpuaudit-verifier", "approve", "ghost", "--db",
                      dir_ + "/verifier.db"});
  EXPECT_EQ(unknown.exit_code, 2);  // an unknown node is a usage error
  EXPECT_THAT(unknown.err, HasSubstr("ghost"));
}

TEST_F(E2eTest, HttpsWithTestCertificates) {
  Proc certs = Exec({"/bin/bash", kSrc + "/certs/make-test-certs.sh", dir_ + "/certs"});
  ASSERT_EQ(certs.exit_code, 0) << certs.err;
  StartVerifier({"--tls-cert", dir_ + "/certs/server.pem", "--tls-key",
                 dir_ + "/certs/server.key"});
  ASSERT_THAT(verifier_.url(), HasSubstr("https://127.0.0.1:"));
  std::string ca = dir_ + "/certs/ca.pem";
  // Without the CA the agent refuses the verifier's certificate.
  Proc refused = Enroll("tls-node");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, ::testing::AnyOf(HasSubstr("certificate"), HasSubstr("SSL")));
  ASSERT_EQ(Enroll("tls-node", true, {"--cacert", ca}).exit_code, 0);
  Proc a = Attest("tls-node", "bf3-zero-trust", {"--cacert", ca});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_THAT(a.out, HasSubstr("tls-node: admit"));
  EXPECT_EQ(Admit("tls-node", {"--cacert", ca}).exit_code, 0);
  EXPECT_EQ(Admit("tls-node").exit_code, 2);
}

TEST_F(E2eTest, PolicyWithUnknownFieldOrRuleIsRejectedAtStart) {
  struct Case {
    std::string policy, message;
  } cases[] = {
      {R"({"schema":"dpuaudit-policy/1","name":"p","decision_ttl_seconds":300,"colour":"red",
          "rules":[{"id":"host.privilege_level","expect":"RESTRICTED","action":"deny","min_tier":"self-reported"}]})",
       "colour"},
      {R"({"schema":"dpuaudit-policy/1","name":"p","decision_ttl_seconds":300,
          "rules":[{"id":"host.no_such_probe","expect":"x","action":"deny","min_tier":"self-reported"}]})",
       "host.no_such_probe"},
  };
  for (const auto& k : cases) {
    WriteText(dir_ + "/bad-policy.json", k.policy, 0644);
    std::string err;
    VerifierProcess v;
    EXPECT_FALSE(v.Start(dir_, {"--policy", dir_ + "/bad-policy.json"}, &err));
    EXPECT_EQ(v.exit_code(), 2);
    EXPECT_THAT(err, HasSubstr(k.message));
  }
}

TEST_F(E2eTest, RecordThenProbeGivesTheSameFindings) {
  Proc rec = Exec({kBin + "/dpuaudit-agent", "record", "--device-root",
                  Fixture("bf3-privileged-host"), "--out", dir_ + "/rec"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  Proc p1 = Exec({kBin + "/dpuaudit-agent", "probe", "--json", "--device-root",
                 Fixture("bf3-privileged-host")});
  Proc p2 = Exec({kBin + "/dpuaudit-agent", "probe", "--json", "--device-root", dir_ + "/rec"});
  EXPECT_EQ(p1.exit_code, 1);  // findings fail
  EXPECT_EQ(p2.exit_code, 1);
  EXPECT_EQ(p1.out, p2.out);
  EXPECT_THAT(p1.out, HasSubstr("\"PRIVILEGED\""));
}

TEST_F(E2eTest, RunAttestsPeriodically) {
  StartVerifier();
  ASSERT_EQ(Enroll("looper").exit_code, 0);
  Proc r = Exec({kBin + "/dpuaudit-agent", "run", "--verifier", verifier_.url(), "--node-id",
                "looper", "--key", KeyOf("looper"), "--device-root", Fixture("bf3-zero-trust"),
                "--interval", "1s", "--count", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t first = r.out.find("looper: admit");
  ASSERT_NE(first, std::string::npos);
  EXPECT_NE(r.out.find("looper: admit", first + 1), std::string::npos);
}

TEST_F(E2eTest, AgentRefusesToAttestWithoutAKey) {
  StartVerifier();
  Proc a = Attest("keyless", "bf3-zero-trust");
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_THAT(a.err, HasSubstr("run `dpuaudit-agent enroll` first"));
}

TEST_F(E2eTest, FleetUpgradeFlowStagePendingCanaryPromote) {
  StartVerifier({}, /*import_refvals=*/false);
  const std::string bfb = kSrc + "/tests/fixtures/bfb/bf-bundle-2.9.1-40.bfb";
  std::vector<std::string> admin = {"--verifier", verifier_.url(), "--admin-token-file",
                                    admin_token_file_};
  auto with_admin = [&](std::vector<std::string> argv) {
    argv.insert(argv.end(), admin.begin(), admin.end());
    return Exec(argv);
  };
  // Nothing approved yet: fail closed.
  ASSERT_EQ(Enroll("canary").exit_code, 0);
  Proc before = Attest("canary", "bf3-zero-trust");
  ASSERT_EQ(before.exit_code, 0) << before.err;
  EXPECT_THAT(before.out, HasSubstr("canary: deny"));
  EXPECT_THAT(before.out, HasSubstr("refval.arm_firmware fail: observed unmatched, expected active"));

  // Stage the release file as pending, with its versions.
  Proc staged = with_admin({kBin + "/dpuaudit", "refvals", "import-bfb", bfb, "--model", "BF3",
                            "--state", "pending",
                            "--version", "atf=v2.2(release):4.9.1-21-gfc25b08d9",
                            "--version", "uefi=4.9.1-36-g0c3239837a",
                            "--version", "bsp=4.9.1.13442",
                            "--version", "os=bf-bundle-2.9.1-40_24.11-ubuntu-22.04_prod",
                            "--version", "nic-fw=32.43.2402",
                            "--by", "ops", "--reason", "rollout"});
  ASSERT_EQ(staged.exit_code, 0) << staged.out << staged.err;
  Proc canary = Attest("canary", "bf3-zero-trust");
  ASSERT_EQ(canary.exit_code, 0) << canary.err;
  EXPECT_THAT(canary.out, HasSubstr("canary: deny"));
  // The canary matches every staged digest: the boot stream is "pending".
  EXPECT_THAT(canary.out, HasSubstr("refval.boot_stream fail: observed pending, expected active"));

  Proc promote = with_admin({kBin + "/dpuaudit", "refvals", "promote", "bf-bundle-2.9.1-40",
                             "--by", "ops", "--reason", "canary matched"});
  ASSERT_EQ(promote.exit_code, 0) << promote.err;
  EXPECT_THAT(promote.out, HasSubstr("bf-bundle-2.9.1-40 -> active"));
  Proc after = Attest("canary", "bf3-zero-trust");
  ASSERT_EQ(after.exit_code, 0) << after.err;
  EXPECT_THAT(after.out, HasSubstr("canary: admit"));

  // A node on an older, never-approved release is denied, naming the rule,
  // the expected and the observed value.
  ASSERT_EQ(Enroll("laggard").exit_code, 0);
  Proc old = Attest("laggard", "bf3-fw-outdated");
  EXPECT_THAT(old.out, HasSubstr("laggard: deny"));
  EXPECT_THAT(old.out, HasSubstr("refval.nic_firmware fail: observed unmatched, expected active"));

  // list and export show the lifecycle with its approval records.
  Proc list = with_admin({kBin + "/dpuaudit", "refvals", "list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_THAT(list.out, HasSubstr("bf-bundle-2.9.1-40  BlueField-3  active"));
  EXPECT_THAT(list.out, HasSubstr("active  by ops: canary matched"));
  Proc exported = with_admin({kBin + "/dpuaudit", "refvals", "export", "--out",
                              dir_ + "/export.json"});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  auto j = nlohmann::json::parse(ReadAll(dir_ + "/export.json"));
  EXPECT_EQ(j["schema"], "dpuaudit-refvals/1");
  EXPECT_EQ(j["releases"][0]["history"].size(), 2u);
  // A wrong admin token is refused and changes nothing.
  WriteText(dir_ + "/wrong.token", "not-the-admin-token-at-all\n");
  Proc wrong = Exec({kBin + "/dpuaudit", "refvals", "revoke", "bf-bundle-2.9.1-40", "--by", "x",
                     "--reason", "y", "--verifier", verifier_.url(), "--admin-token-file",
                     dir_ + "/wrong.token"});
  EXPECT_EQ(wrong.exit_code, 2);
  EXPECT_THAT(wrong.err, HasSubstr("401"));
}

TEST_F(E2eTest, BfbInspectMatchesSha384sumOfTheImages) {
  // dpuaudit bfb inspect on a release file: exit 0, one row per image, and
  // its JSON digests equal sha384sum of each image (extracted by offset).
  const std::string bfb = kSrc + "/tests/fixtures/bfb/bf-bundle-2.9.1-40.bfb";
  Proc table = Exec({kBin + "/dpuaudit", "bfb", "inspect", bfb});
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_THAT(table.out, HasSubstr("bl31"));
  Proc json = Exec({kBin + "/dpuaudit", "bfb", "inspect", "--json", bfb});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto j = nlohmann::json::parse(json.out);
  std::string data = ReadAll(bfb);
  ASSERT_EQ(j["images"].size(), 19u);
  for (const auto& img : j["images"]) {
    uint64_t off = img["offset"].get<uint64_t>() + 24;
    uint64_t len = img["length"].get<uint64_t>();
    std::string path = dir_ + "/image-" + std::to_string(img["index"].get<int>());
    WriteText(path, data.substr(off, len));
    Proc sum = Exec({"sha384sum", path});
    ASSERT_EQ(sum.exit_code, 0);
    EXPECT_EQ(sum.out.substr(0, 96), img["sha384"].get<std::string>()) << img["name"];
  }
  // A corrupt copy: exit 1 and a BAD row.
  std::string bad = data;
  bad[200] = static_cast<char>(bad[200] ^ 0x55);
  WriteText(dir_ + "/bad.bfb", bad);
  Proc corrupt = Exec({kBin + "/dpuaudit", "bfb", "inspect", dir_ + "/bad.bfb"});
  EXPECT_EQ(corrupt.exit_code, 1);
  // import-bfb --out writes the manifest offline; without --by/--reason the
  // approval names the login and the file.
  Proc manifest = Exec({kBin + "/dpuaudit", "refvals", "import-bfb", bfb, "--model", "BF3",
                        "--out", dir_ + "/manifest.json"});
  ASSERT_EQ(manifest.exit_code, 0) << manifest.err;
  auto m = nlohmann::json::parse(ReadAll(dir_ + "/manifest.json"));
  EXPECT_EQ(m["releases"][0]["release"], "bf-bundle-2.9.1-40");
  EXPECT_EQ(m["releases"][0]["state"], "pending");
  EXPECT_FALSE(m["releases"][0]["approval"]["by"].get<std::string>().empty());
  EXPECT_EQ(m["releases"][0]["approval"]["reason"], "import of bf-bundle-2.9.1-40.bfb");
  // 19 image digests and the 4 versions its info image carries (atf, uefi,
  // bsp, nic-fw; issue 16 §6).
  EXPECT_EQ(m["releases"][0]["values"].size(), 23u);
  // A corrupt release file is never a reference.
  Proc refused = Exec({kBin + "/dpuaudit", "refvals", "import-bfb", dir_ + "/bad.bfb",
                       "--model", "BF3", "--out", dir_ + "/bad-manifest.json"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_THAT(refused.err, HasSubstr("CRC"));
  EXPECT_FALSE(fs::exists(dir_ + "/bad-manifest.json"));
  // Not a BFB at all: exit 2 with the offset.
  WriteText(dir_ + "/not.bfb", "hello world, not a boot stream");
  Proc notbfb = Exec({kBin + "/dpuaudit", "bfb", "inspect", dir_ + "/not.bfb"});
  EXPECT_EQ(notbfb.exit_code, 2);
  EXPECT_THAT(notbfb.err, HasSubstr("offset"));
}

}  // namespace
}  // namespace dpuaudit

namespace dpuaudit {
namespace {

TEST_F(E2eTest, ReadyzSaysWhetherTheStoreCanBeWrittenHealthzOnlyThatItRuns) {
  StartVerifier({}, /*import_refvals=*/false);
  auto ready = Client()->Get("/readyz");
  ASSERT_TRUE(ready.ok());
  EXPECT_EQ(ready->status, 200) << ready->body;
  EXPECT_EQ(Body(*ready)["status"], "ready");
  EXPECT_EQ(Body(*ready)["checks"]["store"], "writable");
  // Another process holds the store's write lock past the busy timeout.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/verifier.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  // The store is checked at most once a second (kReadyCheckSeconds).
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto busy = Client()->Get("/readyz");
  ASSERT_TRUE(busy.ok());
  EXPECT_EQ(busy->status, 503) << busy->body;
  EXPECT_THAT(busy->body, HasSubstr("not ready: the store is not writable"));
  auto alive = Client()->Get("/healthz");
  ASSERT_TRUE(alive.ok());
  EXPECT_EQ(alive->status, 200);
  sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  auto again = Client()->Get("/readyz");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->status, 200) << again->body;
}

}  // namespace
}  // namespace dpuaudit
